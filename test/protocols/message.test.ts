import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  decode,
  EnvStart,
  encode,
  encodeEnvelope,
  MessageRegistry,
  PROTOCOL_VERSION,
  ValidationError,
} from '../../protocols/index.ts'
import { DecodeError, envMessages, UnknownTypeError, VersionMismatchError } from '../../protocols/testing.ts'

const registry = new MessageRegistry([...envMessages])

describe('protocols/codec', () => {
  it('codec - typed arrays keep their type and values', () => {
    const logprobs = new Float32Array([-0.5, -1.25, -3])
    const ids = new Int32Array([1, 2, 70000])
    const back = decode(encode({ logprobs, ids })) as { logprobs: Float32Array; ids: Int32Array }
    assert.ok(back.logprobs instanceof Float32Array)
    assert.ok(back.ids instanceof Int32Array)
    assert.deepEqual([...back.logprobs], [-0.5, -1.25, -3])
    assert.deepEqual([...back.ids], [1, 2, 70000])
  })

  it('codec - encoded bytes own their buffer', () => {
    const a = encode({ x: 1 })
    const b = encode({ y: 'two' })
    assert.equal(a.byteOffset, 0)
    assert.equal(a.buffer.byteLength, a.byteLength)
    assert.deepEqual(decode(a), { x: 1 })
    assert.deepEqual(decode(b), { y: 'two' })
  })

  it('codec - garbage bytes throw DecodeError', () => {
    assert.throws(() => decode(new Uint8Array([0xc1])), DecodeError)
    assert.throws(() => decode(new Uint8Array([0x92, 0x01])), DecodeError)
  })
})

describe('protocols/message', () => {
  it('registry - a valid env.start parses with its payload', () => {
    const env = registry.parse(encodeEnvelope(EnvStart.make({ task: 'calc', seed: 3 })))
    assert.equal(env.type, 'env.start')
    assert.equal(env.v, PROTOCOL_VERSION)
    assert.deepEqual(env.payload, { task: 'calc', seed: 3 })
  })

  it('registry - a missing field is a ValidationError naming the field', () => {
    const bad = { v: PROTOCOL_VERSION, type: 'env.start', payload: { seed: 3 } }
    assert.throws(
      () => registry.validate(bad),
      (e: unknown) =>
        e instanceof ValidationError && e.issues[0]!.path === 'task' && /env\.start/.test(e.message),
    )
  })

  it('registry - another major version is refused with both versions in the message', () => {
    const bad = { v: '2.0', type: 'env.start', payload: { task: 'calc' } }
    assert.throws(
      () => registry.validate(bad),
      (e: unknown) => e instanceof VersionMismatchError && /2\.0/.test(e.message) && /1\.0/.test(e.message),
    )
  })

  it('registry - same major, newer minor is accepted', () => {
    const env = registry.validate({ v: '1.7', type: 'env.cancel', payload: { session: 's1' } })
    assert.equal(env.type, 'env.cancel')
  })

  it('registry - an unknown type lists the known ones', () => {
    assert.throws(
      () => registry.validate({ v: PROTOCOL_VERSION, type: 'env.explode', payload: {} }),
      (e: unknown) => e instanceof UnknownTypeError && /env\.start/.test(e.message),
    )
  })

  it('registry - an envelope without v is a ValidationError', () => {
    assert.throws(() => registry.validate({ type: 'env.start', payload: {} }), ValidationError)
  })
})
