import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CheckpointError, decodeSafetensors, encodeSafetensors } from '../../gpu/index.ts'
import { f32ToBf16Bits, f32ToF16Bits } from '../../gpu/testing.ts'

function withHeader(header: unknown, data: Uint8Array): Uint8Array {
  const json = Buffer.from(JSON.stringify(header))
  const out = new Uint8Array(8 + json.length + data.length)
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true)
  out.set(json, 8)
  out.set(data, 8 + json.length)
  return out
}

describe('gpu/safetensors', () => {
  it('safetensors - documented layout: LE header size, JSON header, aligned LE data', () => {
    const bytes = encodeSafetensors(
      {
        b: { shape: [2], data: new Float32Array([1.5, -2]) },
        a: { shape: [1, 1], data: new Float32Array([3]) },
      },
      { step: '7' },
    )
    const view = new DataView(bytes.buffer)
    const n = Number(view.getBigUint64(0, true))
    assert.equal((8 + n) % 8, 0)
    const header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + n)).toString())
    assert.deepEqual(header, {
      __metadata__: { step: '7' },
      a: { dtype: 'F32', shape: [1, 1], data_offsets: [0, 4] },
      b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
    })
    assert.equal(bytes.length, 8 + n + 12)
    assert.equal(view.getFloat32(8 + n, true), 3)
    assert.equal(view.getFloat32(8 + n + 4, true), 1.5)
    assert.equal(view.getFloat32(8 + n + 8, true), -2)
    const back = decodeSafetensors(bytes)
    assert.deepEqual(back.metadata, { step: '7' })
    assert.deepEqual([...back.tensors.b!.data], [1.5, -2])
    assert.deepEqual(back.tensors.a!.shape, [1, 1])
  })

  it('safetensors - reads F16 and BF16 as float32', () => {
    const data = new Uint8Array(8)
    const v = new DataView(data.buffer)
    v.setUint16(0, 0x3c00, true) // f16 1.0
    v.setUint16(2, 0xc000, true) // f16 -2.0
    v.setUint16(4, 0x3fc0, true) // bf16 1.5
    v.setUint16(6, 0x4040, true) // bf16 3.0
    const bytes = withHeader(
      {
        h: { dtype: 'F16', shape: [2], data_offsets: [0, 4] },
        b: { dtype: 'BF16', shape: [2], data_offsets: [4, 8] },
      },
      data,
    )
    const { tensors } = decodeSafetensors(bytes)
    assert.deepEqual([...tensors.h!.data], [1, -2])
    assert.deepEqual([...tensors.b!.data], [1.5, 3])
  })

  it('safetensors - broken files are CheckpointErrors', () => {
    const ok = { x: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }
    const cases: [Uint8Array, RegExp][] = [
      [new Uint8Array(3), /too short/],
      [withHeader(ok, new Uint8Array(4)).subarray(0, 12), /exceeds the file/],
      [
        withHeader({ x: { dtype: 'I64', shape: [1], data_offsets: [0, 8] } }, new Uint8Array(8)),
        /unsupported dtype I64/,
      ],
      [
        withHeader({ x: { dtype: 'F32', shape: [2], data_offsets: [0, 4] } }, new Uint8Array(4)),
        /do not fit/,
      ],
      [
        withHeader({ x: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, new Uint8Array(4)),
        /bad shape/,
      ],
      [withHeader({ x: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, new Uint8Array(8)), /hole/],
      [withHeader(ok, new Uint8Array(8)), /4 bytes after the last tensor/],
      [withHeader([1], new Uint8Array(0)), /not a JSON object/],
    ]
    for (const [bytes, message] of cases)
      assert.throws(
        () => decodeSafetensors(bytes, 'f'),
        (err: unknown) => err instanceof CheckpointError && message.test(err.message),
      )
    const bad = new Uint8Array(12)
    new DataView(bad.buffer).setBigUint64(0, 4n, true)
    bad.set(Buffer.from('{{{{'), 8)
    assert.throws(() => decodeSafetensors(bad), /header is not JSON/)
  })

  it('BF16 and F16 are written rounded to nearest even and read back as those values', () => {
    assert.equal(f32ToBf16Bits(1), 0x3f80)
    assert.equal(f32ToBf16Bits(1 + 2 ** -8), 0x3f80) // a tie: to the even neighbour
    assert.equal(f32ToBf16Bits(1 + 3 * 2 ** -8), 0x3f82) // a tie: up to the even neighbour
    assert.equal(f32ToBf16Bits(-2.5), 0xc020)
    assert.equal(f32ToF16Bits(1), 0x3c00)
    assert.equal(f32ToF16Bits(65504), 0x7bff)
    assert.equal(f32ToF16Bits(1e6), 0x7c00) // overflow: infinity
    assert.equal(f32ToF16Bits(2 ** -24), 0x0001) // the smallest subnormal
    assert.equal(f32ToF16Bits(1 + 2 ** -11), 0x3c00) // a tie: to even
    const values = Float32Array.from([1, 1 + 3 * 2 ** -8, -2.5, 0.1, 2 ** -24, -0])
    const bf = decodeSafetensors(
      encodeSafetensors({ x: { shape: [6], data: values } }, {}, { dtype: 'BF16' }),
    )
    assert.deepEqual(Array.from(bf.tensors.x!.data), [1, 1 + 2 ** -6, -2.5, 0.10009765625, 2 ** -24, -0])
    const h = decodeSafetensors(encodeSafetensors({ x: { shape: [6], data: values } }, {}, { dtype: 'F16' }))
    assert.deepEqual(Array.from(h.tensors.x!.data), [1, 1 + 3 * 2 ** -8, -2.5, 0.0999755859375, 2 ** -24, -0])
  })
})
