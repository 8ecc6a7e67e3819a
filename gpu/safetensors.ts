import { CheckpointError } from './errors.ts'

/**
 * The safetensors file format (huggingface/safetensors, "Format" section of its README): an 8-byte
 * little-endian unsigned header size N, N bytes of UTF-8 JSON mapping each tensor name to
 * `{dtype, shape, data_offsets: [begin, end]}` (offsets relative to the byte after the header) plus an
 * optional `__metadata__` string map, then the raw little-endian tensor bytes, contiguous and in
 * offset order. We write F32 and pad the header with spaces to a multiple of 8 bytes; we read F32,
 * F16 and BF16 (widened to float32).
 */

/** A tensor read from or written to a safetensors file. */
export interface NamedTensor {
  /** Dimensions, row-major. */
  shape: number[]
  /** Values, float32. */
  data: Float32Array
}

/** Dtypes this reader understands, with their byte sizes. */
const DTYPE_BYTES: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2 }

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/** Encodes tensors (sorted by name) and string metadata as safetensors bytes. */
export function encodeSafetensors(
  tensors: Readonly<Record<string, NamedTensor>>,
  metadata: Readonly<Record<string, string>> = {},
): Uint8Array {
  const names = Object.keys(tensors).sort()
  const header: Record<string, unknown> = {}
  if (Object.keys(metadata).length) header.__metadata__ = { ...metadata }
  let offset = 0
  for (const name of names) {
    const t = tensors[name]!
    const count = t.shape.reduce((a, b) => a * b, 1)
    if (count !== t.data.length)
      throw new CheckpointError(name, `shape [${t.shape}] holds ${count} values, not ${t.data.length}`)
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + 4 * count] }
    offset += 4 * count
  }
  let json = JSON.stringify(header)
  json += ' '.repeat((8 - ((Buffer.byteLength(json) + 8) % 8)) % 8) // align the data to 8 bytes
  const headerBytes = Buffer.from(json, 'utf8')
  const out = new Uint8Array(8 + headerBytes.length + offset)
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true)
  out.set(headerBytes, 8)
  let at = 8 + headerBytes.length
  for (const name of names) {
    const data = tensors[name]!.data
    if (littleEndian) out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at)
    else {
      const view = new DataView(out.buffer, at, data.byteLength)
      for (let i = 0; i < data.length; i++) view.setFloat32(4 * i, data[i]!, true)
    }
    at += data.byteLength
  }
  return out
}

function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1
  const exp = (h >> 10) & 0x1f
  const frac = h & 0x3ff
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024)
  if (exp === 31) return frac ? Number.NaN : sign * Number.POSITIVE_INFINITY
  return sign * 2 ** (exp - 15) * (1 + frac / 1024)
}

/**
 * Decodes safetensors bytes.
 * @param source a name for error messages (the file path).
 * @throws CheckpointError on a truncated file, bad JSON, an unknown dtype, offsets out of range, or
 *   tensors that overlap or leave holes.
 */
export function decodeSafetensors(
  bytes: Uint8Array,
  source = 'safetensors',
): { tensors: Record<string, NamedTensor>; metadata: Record<string, string> } {
  if (bytes.length < 8) throw new CheckpointError(source, `file too short (${bytes.length} bytes)`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const headerLen = Number(view.getBigUint64(0, true))
  if (headerLen > bytes.length - 8)
    throw new CheckpointError(source, `header size ${headerLen} exceeds the file`)
  let header: Record<string, unknown>
  try {
    header = JSON.parse(Buffer.from(bytes.subarray(8, 8 + headerLen)).toString('utf8'))
  } catch (err) {
    throw new CheckpointError(source, 'header is not JSON', { cause: err })
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new CheckpointError(source, 'header is not a JSON object')
  const dataStart = 8 + headerLen
  const dataLen = bytes.length - dataStart
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>
  const entries: { name: string; dtype: string; shape: number[]; begin: number; end: number }[] = []
  for (const [name, raw] of Object.entries(header)) {
    if (name === '__metadata__') continue
    const info = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown }
    const dtype = String(info.dtype)
    const size = DTYPE_BYTES[dtype]
    if (!size)
      throw new CheckpointError(source, `tensor ${name}: unsupported dtype ${dtype} (F32, F16, BF16)`)
    const shape = info.shape
    const offsets = info.data_offsets
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0))
      throw new CheckpointError(source, `tensor ${name}: bad shape`)
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isInteger(o)))
      throw new CheckpointError(source, `tensor ${name}: bad data_offsets`)
    const [begin, end] = offsets as [number, number]
    const count = (shape as number[]).reduce((a, b) => a * b, 1)
    if (begin < 0 || end > dataLen || end - begin !== count * size)
      throw new CheckpointError(
        source,
        `tensor ${name}: data_offsets [${begin}, ${end}] do not fit its shape or the file`,
      )
    entries.push({ name, dtype, shape: shape as number[], begin, end })
  }
  entries.sort((a, b) => a.begin - b.begin)
  let expected = 0
  for (const e of entries) {
    if (e.begin !== expected)
      throw new CheckpointError(source, `tensor ${e.name}: data overlaps or leaves a hole`)
    expected = e.end
  }
  if (expected !== dataLen)
    throw new CheckpointError(source, `${dataLen - expected} bytes after the last tensor`)
  const tensors: Record<string, NamedTensor> = {}
  for (const e of entries) {
    const count = (e.end - e.begin) / DTYPE_BYTES[e.dtype]!
    const data = new Float32Array(count)
    const at = dataStart + e.begin
    if (e.dtype === 'F32' && littleEndian) {
      data.set(new Float32Array(Uint8Array.prototype.slice.call(bytes, at, at + 4 * count).buffer))
      tensors[e.name] = { shape: e.shape, data }
      continue
    }
    for (let i = 0; i < count; i++) {
      if (e.dtype === 'F32') data[i] = view.getFloat32(at + 4 * i, true)
      else if (e.dtype === 'BF16') {
        const tmp = new DataView(new ArrayBuffer(4))
        tmp.setUint16(0, view.getUint16(at + 2 * i, true), false) // bf16 = the high half of a float32
        data[i] = tmp.getFloat32(0, false)
      } else data[i] = f16ToF32(view.getUint16(at + 2 * i, true))
    }
    tensors[e.name] = { shape: e.shape, data }
  }
  return { tensors, metadata }
}
