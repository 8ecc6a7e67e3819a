import type { FileHandle } from 'node:fs/promises'
import { open } from 'node:fs/promises'
import { CheckpointError, NonFiniteWeightsError } from './errors.ts'

/**
 * The safetensors file format (huggingface/safetensors, "Format" section of its README): an 8-byte
 * little-endian unsigned header size N, N bytes of UTF-8 JSON mapping each tensor name to
 * `{dtype, shape, data_offsets: [begin, end]}` (offsets relative to the byte after the header) plus an
 * optional `__metadata__` string map, then the raw little-endian tensor bytes, contiguous and in
 * offset order. We write F32, BF16 or F16 and pad the header with spaces to a multiple of 8 bytes; we
 * read F32, F16 and BF16 (widened to float32).
 */

/** A tensor read from or written to a safetensors file. */
export interface NamedTensor {
  /** Dimensions, row-major. */
  shape: number[]
  /** Values, float32. */
  data: Float32Array
}

/** Dtypes this reader understands (and the writer can write). */
export const SafetensorsDtype = { F32: 'F32', F16: 'F16', BF16: 'BF16' } as const
export type SafetensorsDtype = (typeof SafetensorsDtype)[keyof typeof SafetensorsDtype]

/** Byte size of each dtype. */
const DTYPE_BYTES: Readonly<Record<string, number>> = { F32: 4, F16: 2, BF16: 2 }

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/**
 * Float32 to bfloat16 bits, rounding to nearest even (NaN stays a quiet NaN): the high 16 bits of
 * the float32 after adding `0x7fff + lsb`.
 */
export function f32ToBf16Bits(x: number): number {
  const bits = new Uint32Array(new Float32Array([x]).buffer)[0]!
  if ((bits & 0x7fffffff) > 0x7f800000) return ((bits >>> 16) | 0x40) & 0xffff
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff
}

/** Float32 to IEEE half bits, rounding to nearest even; overflow becomes infinity. */
export function f32ToF16Bits(x: number): number {
  const bits = new Uint32Array(new Float32Array([x]).buffer)[0]!
  const sign = (bits >>> 16) & 0x8000
  const exp = (bits >>> 23) & 0xff
  let mant = bits & 0x7fffff
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0)
  const e = exp - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    if (e < -10) return sign
    mant |= 0x800000
    const shift = 14 - e
    const half = 1 << (shift - 1)
    let m = mant >>> shift
    const rest = mant & ((1 << shift) - 1)
    if (rest > half || (rest === half && m & 1)) m++
    return sign | m
  }
  let out = sign | (e << 10) | (mant >>> 13)
  const rest = mant & 0x1fff
  if (rest > 0x1000 || (rest === 0x1000 && out & 1)) out++ // may carry into the exponent: still right
  return out
}

/**
 * Encodes tensors (sorted by name) and string metadata as safetensors bytes.
 * @param options.dtype how values are stored: `F32` (default, exact), `BF16` or `F16` (rounded to
 *   nearest even).
 */
export function encodeSafetensors(
  tensors: Readonly<Record<string, NamedTensor>>,
  metadata: Readonly<Record<string, string>> = {},
  options: { dtype?: SafetensorsDtype } = {},
): Uint8Array {
  const dtype = options.dtype ?? SafetensorsDtype.F32
  const width = DTYPE_BYTES[dtype]!
  const names = Object.keys(tensors).sort()
  const header: Record<string, unknown> = {}
  if (Object.keys(metadata).length) header.__metadata__ = { ...metadata }
  let offset = 0
  for (const name of names) {
    const t = tensors[name]!
    const count = t.shape.reduce((a, b) => a * b, 1)
    if (count !== t.data.length)
      throw new CheckpointError(name, `shape [${t.shape}] holds ${count} values, not ${t.data.length}`)
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + width * count] }
    offset += width * count
  }
  let json = JSON.stringify(header)
  json += ' '.repeat((8 - ((Buffer.byteLength(json) + 8) % 8)) % 8) // align the data to 8 bytes
  const headerBytes = Buffer.from(json, 'utf8')
  const out = new Uint8Array(8 + headerBytes.length + offset)
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true)
  out.set(headerBytes, 8)
  let at = 8 + headerBytes.length
  const view = new DataView(out.buffer)
  for (const name of names) {
    const data = tensors[name]!.data
    if (dtype === SafetensorsDtype.F32 && littleEndian)
      out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at)
    else if (dtype === SafetensorsDtype.F32)
      for (let i = 0; i < data.length; i++) view.setFloat32(at + 4 * i, data[i]!, true)
    else if (dtype === SafetensorsDtype.BF16) {
      const bits = new Uint32Array(data.buffer, data.byteOffset, data.length) // float32 bits, no copy
      for (let i = 0; i < data.length; i++) {
        const b = bits[i]!
        const h = (b & 0x7fffffff) > 0x7f800000 ? (b >>> 16) | 0x40 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16 // as f32ToBf16Bits
        view.setUint16(at + 2 * i, h & 0xffff, true)
      }
    } else for (let i = 0; i < data.length; i++) view.setUint16(at + 2 * i, f32ToF16Bits(data[i]!), true)
    at += width * data.length
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

/** One tensor's entry in a safetensors header. */
export interface SafetensorsEntry {
  name: string
  /** One of `SafetensorsDtype`. */
  dtype: SafetensorsDtype
  /** Dimensions, row-major. */
  shape: number[]
  /** Byte range `[begin, end)` relative to the first data byte. */
  begin: number
  end: number
}

/** A parsed safetensors header. */
export interface SafetensorsHeader {
  /** Entries by tensor name. */
  entries: Map<string, SafetensorsEntry>
  /** Byte offset of the first data byte in the file (8 + header size). */
  dataStart: number
  /** The `__metadata__` strings. */
  metadata: Record<string, string>
}

/**
 * Checks a header's JSON against the data length: known dtypes, integer shapes, offsets that fit
 * the shape and tile the data exactly.
 */
function parseHeader(
  headerText: string,
  headerLen: number,
  dataLen: number,
  source: string,
): SafetensorsHeader {
  let header: Record<string, unknown>
  try {
    header = JSON.parse(headerText)
  } catch (err) {
    throw new CheckpointError(source, 'header is not JSON', { cause: err })
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new CheckpointError(source, 'header is not a JSON object')
  const metadata = (header.__metadata__ ?? {}) as Record<string, string>
  const entries: SafetensorsEntry[] = []
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
    entries.push({ name, dtype: dtype as SafetensorsDtype, shape: shape as number[], begin, end })
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
  return { entries: new Map(entries.map((e) => [e.name, e])), dataStart: 8 + headerLen, metadata }
}

/** Widens raw little-endian tensor bytes of `dtype` to float32. */
function toFloat32(raw: Uint8Array, dtype: SafetensorsDtype): Float32Array {
  const aligned = raw.byteOffset % 4 === 0 ? raw : raw.slice()
  if (dtype === 'F32') {
    if (littleEndian)
      return new Float32Array(
        aligned.buffer.slice(aligned.byteOffset, aligned.byteOffset + aligned.byteLength),
      )
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength)
    return Float32Array.from({ length: raw.byteLength / 4 }, (_, i) => view.getFloat32(4 * i, true))
  }
  const count = raw.byteLength / 2
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength)
  const out = new Float32Array(count)
  if (dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer)
    for (let i = 0; i < count; i++) bits[i] = view.getUint16(2 * i, true) << 16 // bf16 = the high half of a float32
  } else for (let i = 0; i < count; i++) out[i] = f16ToF32(view.getUint16(2 * i, true))
  return out
}

/**
 * The NaN and infinite values of an array, in one pass: how many, and the index and value of the
 * first; `undefined` when every value is finite.
 */
export function nonFiniteValues(
  data: Float32Array,
): { count: number; firstIndex: number; firstValue: number } | undefined {
  let count = 0
  let firstIndex = -1
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!
    // v - v is 0 for every finite v, NaN for NaN and for either infinity
    if (v - v !== 0) {
      if (count === 0) firstIndex = i
      count++
    }
  }
  return count === 0 ? undefined : { count, firstIndex, firstValue: data[firstIndex]! }
}

/**
 * Refuses a tensor with a NaN or an infinite value (a corrupt or diverged checkpoint would load and
 * generate garbage without a word).
 * @param file the file it was read from; name its name there.
 * @throws NonFiniteWeightsError naming the file, the tensor, how many values and the first.
 */
export function assertFiniteTensor(file: string, name: string, data: Float32Array): void {
  const bad = nonFiniteValues(data)
  if (bad) throw new NonFiniteWeightsError(file, name, bad.count, bad.firstIndex, bad.firstValue)
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
  const text = Buffer.from(bytes.subarray(8, 8 + headerLen)).toString('utf8')
  const { entries, dataStart, metadata } = parseHeader(text, headerLen, bytes.length - 8 - headerLen, source)
  const tensors: Record<string, NamedTensor> = {}
  for (const e of entries.values())
    tensors[e.name] = {
      shape: e.shape,
      data: toFloat32(bytes.subarray(dataStart + e.begin, dataStart + e.end), e.dtype),
    }
  return { tensors, metadata }
}

/**
 * Reads only the header of a safetensors file (names, dtypes, shapes, offsets), checked as in
 * `decodeSafetensors`, so a loader can check every tensor before reading any data.
 * @throws CheckpointError when the file cannot be read or its header is malformed.
 */
export async function readSafetensorsHeader(file: string): Promise<SafetensorsHeader> {
  let handle: FileHandle
  try {
    handle = await open(file, 'r')
  } catch (err) {
    throw new CheckpointError(file, 'cannot read', { cause: err })
  }
  try {
    const { size } = await handle.stat()
    if (size < 8) throw new CheckpointError(file, `file too short (${size} bytes)`)
    const head = Buffer.alloc(8)
    await handle.read(head, 0, 8, 0)
    const headerLen = Number(head.readBigUInt64LE(0))
    if (headerLen > size - 8) throw new CheckpointError(file, `header size ${headerLen} exceeds the file`)
    const text = Buffer.alloc(headerLen)
    await handle.read(text, 0, headerLen, 8)
    return parseHeader(text.toString('utf8'), headerLen, size - 8 - headerLen, file)
  } finally {
    await handle.close()
  }
}

/**
 * Reads the named tensors of a safetensors file whose header was read by `readSafetensorsHeader`,
 * widened to float32, one at a time (never the whole file in memory).
 * @param onTensor called with each tensor as it is read (and may transform and keep it).
 * @throws CheckpointError when the file cannot be read or a name is not in the header.
 */
export async function readSafetensorsTensors(
  file: string,
  header: SafetensorsHeader,
  names: readonly string[],
  onTensor: (name: string, tensor: NamedTensor) => void,
): Promise<void> {
  let handle: FileHandle
  try {
    handle = await open(file, 'r')
  } catch (err) {
    throw new CheckpointError(file, 'cannot read', { cause: err })
  }
  try {
    for (const name of names) {
      const e = header.entries.get(name)
      if (!e) throw new CheckpointError(file, `missing tensor ${name}`)
      const raw = Buffer.alloc(e.end - e.begin)
      const { bytesRead } = await handle.read(raw, 0, raw.length, header.dataStart + e.begin)
      if (bytesRead !== raw.length) throw new CheckpointError(file, `tensor ${name}: file ends early`)
      onTensor(name, { shape: e.shape, data: toFloat32(raw, e.dtype) })
    }
  } finally {
    await handle.close()
  }
}
