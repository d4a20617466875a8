import { GrudgeError, describeValue } from '../errors.js'
import { crc32c } from './crc32c.js'

/**
 * The grudge binary frame (drawn in `spec/format.md`), shared by every family:
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | magic `GRDG` (47 52 44 47) |
 * | 4 | 1 | family id (`FAMILY` below) |
 * | 5 | 1 | format version of the family (starts at 1) |
 * | 6 | 2 | flags, u16 LE (family-defined; unknown bits must be 0) |
 * | 8 | 4 | params length P, u32 LE |
 * | 12 | 16 | seed (16 bytes) |
 * | 28 | 8 | payload length N, u64 LE (≤ 2^53 − 1) |
 * | 36 | P | params (family-defined, little-endian) |
 * | 36+P | N | payload (family-defined, little-endian) |
 * | 36+P+N | 4 | CRC32C, u32 LE, over bytes [0, 36+P+N) |
 *
 * Readers check magic, family, version, lengths and checksum before any field is used, so
 * a truncated frame, a flipped bit, an unknown version or family each raise a coded error
 * and nothing half-loaded is returned.
 */
export const MAGIC = new Uint8Array([0x47, 0x52, 0x44, 0x47])
/** Size in bytes of the fixed frame header (before params). */
export const HEADER_BYTES = 36
/** Size in bytes of the trailing checksum. */
export const TRAILER_BYTES = 4

/** Family ids, one per serializable structure. Never reuse a retired id. */
export const FAMILY = {
  sketch: 1,
  rotator: 2,
  bloom: 3,
  hyperloglog: 4,
  countMin: 5,
  window: 6,
  shardedBloomManifest: 7,
} as const
/** Name of a family. */
export type FamilyName = keyof typeof FAMILY

/** What a writer supplies and a reader gets back. */
export interface FrameParts {
  /** family id */
  family: number
  /** family format version, 1..255 */
  version: number
  /** family flags, u16 */
  flags: number
  /** 16 seed bytes (zeros for unseeded families) */
  seed: Uint8Array
  /** family-defined parameter bytes */
  params: Uint8Array
  /** family-defined payload bytes */
  payload: Uint8Array
}

/**
 * Assemble a frame from its parts.
 * @returns a new Uint8Array of 40 + params + payload bytes
 */
export function writeFrame(parts: FrameParts): Uint8Array {
  const P = parts.params.length
  const N = parts.payload.length
  const out = new Uint8Array(HEADER_BYTES + P + N + TRAILER_BYTES)
  const dv = new DataView(out.buffer)
  out.set(MAGIC, 0)
  out[4] = parts.family
  out[5] = parts.version
  dv.setUint16(6, parts.flags, true)
  dv.setUint32(8, P, true)
  out.set(parts.seed.subarray(0, 16), 12)
  dv.setUint32(28, N % 0x100000000, true)
  dv.setUint32(32, Math.floor(N / 0x100000000), true)
  out.set(parts.params, HEADER_BYTES)
  out.set(parts.payload, HEADER_BYTES + P)
  dv.setUint32(HEADER_BYTES + P + N, crc32c(out, 0, HEADER_BYTES + P + N), true)
  return out
}

/**
 * Parse and verify a frame of family `family`. The returned params and payload are
 * views into `bytes` (copy them if `bytes` may change).
 * @param bytes the frame
 * @param family expected family id
 * @param maxVersion highest version this reader understands (versions 1..maxVersion read)
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_TRUNCATED` (too short for its header or its
 * declared lengths), `ERR_GRUDGE_FORMAT_MAGIC`, `ERR_GRUDGE_FORMAT_CHECKSUM`,
 * `ERR_GRUDGE_FORMAT_FAMILY`, `ERR_GRUDGE_FORMAT_VERSION`, `ERR_GRUDGE_FORMAT_INVALID`
 * (trailing bytes), `ERR_GRUDGE_OPTION_INVALID` (not a Uint8Array)
 */
export function readFrame(bytes: Uint8Array, family: number, maxVersion: number): FrameParts {
  if (!(bytes instanceof Uint8Array)) {
    throw new GrudgeError('ERR_GRUDGE_OPTION_INVALID', `frame: expected a Uint8Array, received ${describeValue(bytes)}`)
  }
  if (bytes.length < HEADER_BYTES + TRAILER_BYTES) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_TRUNCATED',
      `frame: expected at least ${HEADER_BYTES + TRAILER_BYTES} bytes, received ${bytes.length}`,
    )
  }
  for (let i = 0; i < 4; i++) {
    if (bytes[i] !== MAGIC[i]) {
      throw new GrudgeError('ERR_GRUDGE_FORMAT_MAGIC', 'frame: expected magic "GRDG" at offset 0, received other bytes')
    }
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const P = dv.getUint32(8, true)
  const N = dv.getUint32(28, true) + dv.getUint32(32, true) * 0x100000000
  const total = HEADER_BYTES + P + N + TRAILER_BYTES
  if (bytes.length < total) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_TRUNCATED',
      `frame: header declares ${total} bytes, received ${bytes.length}`,
    )
  }
  if (bytes.length > total) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_INVALID',
      `frame: header declares ${total} bytes, received ${bytes.length} (trailing bytes)`,
    )
  }
  const stored = dv.getUint32(HEADER_BYTES + P + N, true)
  const actual = crc32c(bytes, 0, HEADER_BYTES + P + N)
  if (stored !== actual) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_CHECKSUM',
      `frame: expected CRC32C 0x${stored.toString(16).padStart(8, '0')}, computed 0x${actual.toString(16).padStart(8, '0')}`,
    )
  }
  if (bytes[4] !== family) {
    throw new GrudgeError('ERR_GRUDGE_FORMAT_FAMILY', `frame: expected family ${family}, received ${bytes[4]}`)
  }
  const version = bytes[5]
  if (version < 1 || version > maxVersion) {
    throw new GrudgeError('ERR_GRUDGE_FORMAT_VERSION', `frame: expected version 1..${maxVersion}, received ${version}`)
  }
  return {
    family,
    version,
    flags: dv.getUint16(6, true),
    seed: bytes.subarray(12, 28),
    params: bytes.subarray(HEADER_BYTES, HEADER_BYTES + P),
    payload: bytes.subarray(HEADER_BYTES + P, HEADER_BYTES + P + N),
  }
}

/**
 * Throw `ERR_GRUDGE_FORMAT_INVALID` for a frame field.
 * @throws {GrudgeError} always
 */
export function invalidField(field: string, expected: string, received: unknown): never {
  throw new GrudgeError(
    'ERR_GRUDGE_FORMAT_INVALID',
    `frame field "${field}": expected ${expected}, received ${describeValue(received)}`,
  )
}

/**
 * The family id of an embedded frame (byte 4), without checking the frame: a container
 * (the window frame) reads it to route the frame to its family's reader, which checks it.
 * @returns the id, or -1 when the bytes are too short to hold one
 */
export function frameFamilyOf(frame: Uint8Array): number {
  return frame.length > 4 ? frame[4] : -1
}

/** The 16 seed bytes of a written frame (bytes 12–28), as a view. */
export function frameSeedOf(frame: Uint8Array): Uint8Array {
  return frame.subarray(12, 28)
}

/**
 * A little-endian cursor over a frame's params or payload that reads the fields in the
 * order of the family's byte table in `spec/`, so a codec names fields instead of
 * offsets. A read past the end raises `ERR_GRUDGE_FORMAT_INVALID` naming the field.
 */
export class FieldReader {
  private readonly bytes: Uint8Array
  private readonly dv: DataView
  private readonly where: string
  private off = 0

  /**
   * @param bytes the params or payload (a view; not copied)
   * @param where what they are, for errors: `'params'`, `'payload'`
   */
  constructor(bytes: Uint8Array, where: string) {
    this.bytes = bytes
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    this.where = where
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.bytes.length - this.off
  }

  /** Bytes read so far. */
  get offset(): number {
    return this.off
  }

  /** Read a u8. */
  u8(field: string): number {
    this.need(field, 1, 'u8')
    return this.bytes[this.off++]
  }

  /** Read a u32 LE. */
  u32(field: string): number {
    this.need(field, 4, 'u32')
    const v = this.dv.getUint32(this.off, true)
    this.off += 4
    return v
  }

  /** Read an f64 LE. */
  f64(field: string): number {
    this.need(field, 8, 'f64')
    const v = this.dv.getFloat64(this.off, true)
    this.off += 8
    return v
  }

  /** Read `n` bytes as a copy (the frame's buffer may change after the read). */
  bytesCopy(field: string, n: number): Uint8Array {
    this.need(field, n, `${n}-byte field`)
    const v = this.bytes.slice(this.off, this.off + n)
    this.off += n
    return v
  }

  /**
   * Skip `n` reserved bytes, which must be 0.
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming `field` for a non-zero byte
   */
  reserved(field: string, n: number): void {
    this.need(field, n, `${n} reserved bytes`)
    for (let i = 0; i < n; i++) if (this.bytes[this.off + i] !== 0) invalidField(field, '0', 'non-zero bytes')
    this.off += n
  }

  private need(field: string, n: number, kind: string): void {
    if (this.off + n > this.bytes.length)
      invalidField(field, `a ${kind} within the ${this.where}`, `${this.bytes.length - this.off} bytes left`)
  }
}

/** The writing twin of {@link FieldReader}: fields in byte-table order, little-endian. */
export class FieldWriter {
  /** The bytes written into (of the size given). */
  readonly bytes: Uint8Array
  private readonly dv: DataView
  private off = 0

  /** @param size the exact number of bytes the fields take */
  constructor(size: number) {
    this.bytes = new Uint8Array(size)
    this.dv = new DataView(this.bytes.buffer)
  }

  /** Write a u8. */
  u8(v: number): this {
    this.bytes[this.off++] = v
    return this
  }

  /** Write a u32 LE. */
  u32(v: number): this {
    this.dv.setUint32(this.off, v, true)
    this.off += 4
    return this
  }

  /** Write an f64 LE. */
  f64(v: number): this {
    this.dv.setFloat64(this.off, v, true)
    this.off += 8
    return this
  }

  /** Write bytes as they are. */
  raw(v: Uint8Array): this {
    this.bytes.set(v, this.off)
    this.off += v.length
    return this
  }

  /** Leave `n` reserved bytes at 0. */
  reserved(n: number): this {
    this.off += n
    return this
  }
}
