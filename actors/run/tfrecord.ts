import { crc32c } from '@aws-crypto/crc32c'

/** The constant added to a rotated CRC32C in TFRecord's mask (TensorFlow `crc32c::Mask`). */
const MASK_DELTA = 0xa282ead8

/**
 * TFRecord's masked CRC32C of `data`: `((crc >>> 15) | (crc << 17)) + 0xa282ead8` mod 2^32,
 * where crc is the CRC-32C (Castagnoli, RFC 3720) of the bytes (TensorFlow `lib/hash/crc32c.h`).
 */
export function maskedCrc32c(data: Uint8Array): number {
  const crc = crc32c(data) >>> 0
  return (((crc >>> 15) | (crc << 17)) + MASK_DELTA) >>> 0
}

/**
 * One TFRecord: `uint64 length` (little-endian), `uint32 masked_crc32c(length bytes)`, the
 * `data`, `uint32 masked_crc32c(data)`; 16 bytes of framing around the data (TensorFlow
 * `core/lib/io/record_writer.cc`, the format TensorBoard's event files use).
 */
export function tfRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(data.length + 16)
  out.writeBigUInt64LE(BigInt(data.length), 0)
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8)
  out.set(data, 12)
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length)
  return out
}
