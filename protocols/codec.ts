import { C1, Packr } from 'msgpackr'
import { DecodeError } from './errors.ts'

/**
 * The msgpack codec of every triad message.
 *
 * `useRecords: false`: records would need structure tables shared between processes.
 * `moreTypes: true`: typed arrays (`Float32Array`, `Int32Array`, ...) keep their type across the wire.
 *
 * The bytes returned by `encode` are a fresh copy, never a view of msgpackr's shared slab, so they
 * may be kept, queued or sent later.
 */
const packr = new Packr({ useRecords: false, moreTypes: true })

/** Encodes a value to msgpack. The result owns its buffer. */
export function encode(value: unknown): Uint8Array {
  const packed = packr.pack(value)
  // `packed` views a slab shared with other messages: copy out exactly its bytes.
  return new Uint8Array(packed.buffer.slice(packed.byteOffset, packed.byteOffset + packed.byteLength))
}

/**
 * Decodes msgpack bytes.
 * @throws DecodeError when the bytes are not one valid msgpack value.
 */
export function decode(bytes: Uint8Array): unknown {
  let value: unknown
  try {
    value = packr.unpack(bytes)
  } catch (cause) {
    throw new DecodeError(bytes.byteLength, cause)
  }
  // 0xc1 is "never used" in msgpack; msgpackr returns a marker object for it instead of throwing.
  if (value === C1) throw new DecodeError(bytes.byteLength, 'reserved byte 0xc1')
  return value
}
