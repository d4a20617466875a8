import CRC32C from 'crc-32/crc32c.js'

/**
 * CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected), the checksum of every grudge
 * frame; computed by the `crc-32` package (SheetJS). Check value: "123456789" → 0xE3069283.
 * @param bytes data to checksum
 * @param start first byte (default 0)
 * @param end one past the last byte (default `bytes.length`)
 * @returns the unsigned 32-bit CRC
 */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const view = start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end)
  return CRC32C.buf(view, 0) >>> 0
}
