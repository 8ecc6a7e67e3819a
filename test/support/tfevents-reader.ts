import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import protobuf from 'protobufjs'

/**
 * An independent reader of TensorBoard event files, for tests: the TFRecord framing is checked
 * with a bitwise CRC-32C written here from RFC 3720 (reflected polynomial 0x82F63B78), not the
 * library the writer uses, and the `Event` protos are decoded by protobufjs from the field numbers
 * of TensorFlow's `event.proto` and `summary.proto`.
 */

/** Bitwise CRC-32C (Castagnoli), RFC 3720 section B.4. */
export function crc32cBitwise(data: Uint8Array): number {
  let crc = 0xffffffff
  for (const byte of data) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1
  }
  return (crc ^ 0xffffffff) >>> 0
}

/** TFRecord's mask: rotate right by 15, add 0xa282ead8 (TensorFlow `crc32c::Mask`). */
export const maskCrc = (crc: number) => (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0

const root = protobuf.Root.fromJSON({
  nested: {
    tensorflow: {
      nested: {
        Event: {
          fields: {
            wall_time: { type: 'double', id: 1 },
            step: { type: 'int64', id: 2 },
            file_version: { type: 'string', id: 3 },
            graph_def: { type: 'bytes', id: 4 },
            summary: { type: 'Summary', id: 5 },
          },
        },
        Summary: {
          fields: { value: { rule: 'repeated', type: 'Value', id: 1 } },
          nested: {
            Value: {
              fields: {
                tag: { type: 'string', id: 1 },
                simple_value: { type: 'float', id: 2 },
                node_name: { type: 'string', id: 7 },
              },
            },
          },
        },
      },
    },
  },
})
const EventType = root.lookupType('tensorflow.Event')

/** One decoded event. */
export interface DecodedEvent {
  wallTime: number
  step: number
  fileVersion?: string
  scalars: Record<string, number>
}

/**
 * The records of a TFRecord file.
 * @throws Error naming the offset when a length or data CRC does not match or a record is cut.
 */
export function readTfRecords(bytes: Buffer): Buffer[] {
  const out: Buffer[] = []
  let at = 0
  while (at < bytes.length) {
    if (at + 12 > bytes.length) throw new Error(`record at ${at}: header cut`)
    const length = Number(bytes.readBigUInt64LE(at))
    if (bytes.readUInt32LE(at + 8) !== maskCrc(crc32cBitwise(bytes.subarray(at, at + 8))))
      throw new Error(`record at ${at}: length CRC mismatch`)
    const data = bytes.subarray(at + 12, at + 12 + length)
    if (data.length !== length || at + 16 + length > bytes.length)
      throw new Error(`record at ${at}: data cut`)
    if (bytes.readUInt32LE(at + 12 + length) !== maskCrc(crc32cBitwise(data)))
      throw new Error(`record at ${at}: data CRC mismatch`)
    out.push(data)
    at += 16 + length
  }
  return out
}

/** Decodes the events of one event file. */
export function readEventFile(path: string): DecodedEvent[] {
  return readTfRecords(readFileSync(path)).map((data) => {
    const e = EventType.toObject(EventType.decode(data), { longs: Number, defaults: true }) as {
      wall_time: number
      step: number
      file_version: string
      summary?: { value: { tag: string; simple_value: number }[] }
    }
    const scalars: Record<string, number> = {}
    for (const v of e.summary?.value ?? []) scalars[v.tag] = v.simple_value
    return {
      wallTime: e.wall_time,
      step: e.step,
      ...(e.file_version ? { fileVersion: e.file_version } : {}),
      scalars,
    }
  })
}

/** Every event file under `dir` (names containing `tfevents`), by path relative to `dir`. */
export function eventFiles(dir: string): string[] {
  const out: string[] = []
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name)
      if (entry.isDirectory()) walk(p)
      else if (entry.name.includes('tfevents')) out.push(relative(dir, p))
    }
  }
  walk(dir)
  return out.sort()
}
