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
// Offsets of the header fields (the table above): the only place they are written down.
const AT_FAMILY = 4
const AT_VERSION = 5
const AT_FLAGS = 6
const AT_PARAMS_LENGTH = 8
const AT_SEED = 12
const SEED_BYTES = 16
const AT_PAYLOAD_LENGTH = 28
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
  out[AT_FAMILY] = parts.family
  out[AT_VERSION] = parts.version
  dv.setUint16(AT_FLAGS, parts.flags, true)
  dv.setUint32(AT_PARAMS_LENGTH, P, true)
  out.set(parts.seed.subarray(0, SEED_BYTES), AT_SEED)
  dv.setUint32(AT_PAYLOAD_LENGTH, N % 0x100000000, true)
  dv.setUint32(AT_PAYLOAD_LENGTH + 4, Math.floor(N / 0x100000000), true)
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
  const P = dv.getUint32(AT_PARAMS_LENGTH, true)
  const N = dv.getUint32(AT_PAYLOAD_LENGTH, true) + dv.getUint32(AT_PAYLOAD_LENGTH + 4, true) * 0x100000000
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
  if (bytes[AT_FAMILY] !== family) {
    throw new GrudgeError('ERR_GRUDGE_FORMAT_FAMILY', `frame: expected family ${family}, received ${bytes[AT_FAMILY]}`)
  }
  const version = bytes[AT_VERSION]
  if (version < 1 || version > maxVersion) {
    throw new GrudgeError('ERR_GRUDGE_FORMAT_VERSION', `frame: expected version 1..${maxVersion}, received ${version}`)
  }
  return {
    family,
    version,
    flags: dv.getUint16(AT_FLAGS, true),
    seed: bytes.subarray(AT_SEED, AT_SEED + SEED_BYTES),
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
 * The family id of a frame, read without checking the rest (to route a frame to its reader;
 * the reader then checks everything).
 * @returns the family byte, or undefined when `bytes` is too short to hold it
 */
export function frameFamily(bytes: Uint8Array): number | undefined {
  return bytes.length > AT_FAMILY ? bytes[AT_FAMILY] : undefined
}

/**
 * The 16 seed bytes of a frame, read without checking the rest: a view into `bytes`.
 * @returns a view, shorter than 16 bytes when `bytes` is truncated
 */
export function frameSeed(bytes: Uint8Array): Uint8Array {
  return bytes.subarray(AT_SEED, AT_SEED + SEED_BYTES)
}

// true on every platform Node runs on today; the byte-by-byte paths keep the format
// little-endian should that change
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f

/**
 * Writes the little-endian fields of a family's params or payload in order, so a codec
 * lists its layout field by field (as its byte table in `spec/format.md` does) instead of
 * computing offsets. The caller sizes `bytes` from the layout; a write past the end throws
 * a RangeError (a codec bug, not a frame error).
 * @internal
 */
export class FieldWriter {
  private readonly dv: DataView
  private at: number

  /** Write into `bytes` from byte `offset` (default 0). */
  constructor(
    private readonly bytes: Uint8Array,
    offset = 0,
  ) {
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    this.at = offset
  }

  /** The offset of the next field. */
  get offset(): number {
    return this.at
  }

  /** Write a u8. */
  u8(v: number): void {
    this.dv.setUint8(this.at, v)
    this.at += 1
  }

  /** Write a u32. */
  u32(v: number): void {
    this.dv.setUint32(this.at, v, true)
    this.at += 4
  }

  /** Write a float64. */
  f64(v: number): void {
    this.dv.setFloat64(this.at, v, true)
    this.at += 8
  }

  /** Leave `n` reserved bytes as they are (0 in a fresh buffer). */
  skip(n: number): void {
    this.at += n
  }

  /** Copy raw bytes. */
  raw(src: Uint8Array): void {
    this.bytes.set(src, this.at)
    this.at += src.length
  }

  /** Write every value of `src` as a float64 (one copy on a little-endian machine). */
  f64s(src: Float64Array): void {
    if (LITTLE_ENDIAN) this.raw(new Uint8Array(src.buffer, src.byteOffset, src.byteLength))
    else for (let i = 0; i < src.length; i++) this.f64(src[i])
  }
}

/**
 * Reads the little-endian fields of a family's params or payload in order (the mirror of
 * {@link FieldWriter}), between `offset` and `end`. A read past `end` throws
 * `ERR_GRUDGE_FORMAT_INVALID` naming the field, so a payload shorter than its declared
 * content is refused, never read as zeros.
 * @internal
 */
export class FieldReader {
  private readonly dv: DataView
  private at: number
  private readonly end: number

  /** Read `bytes` from byte `offset` (default 0) up to `end` (default its length). */
  constructor(
    private readonly bytes: Uint8Array,
    offset = 0,
    end = bytes.length,
  ) {
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    this.at = offset
    this.end = end
  }

  /** The offset of the next field. */
  get offset(): number {
    return this.at
  }

  /** Bytes left before `end`. */
  get remaining(): number {
    return this.end - this.at
  }

  /**
   * Throw unless `n` more bytes are there for `field`.
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID`
   */
  need(n: number, field: string): void {
    if (this.at + n > this.end) invalidField(field, `${n} bytes at offset ${this.at}`, `${this.end - this.at} bytes`)
  }

  /** Read a u8. */
  u8(field: string): number {
    this.need(1, field)
    return this.dv.getUint8(this.at++)
  }

  /** Read a u32. */
  u32(field: string): number {
    this.need(4, field)
    const v = this.dv.getUint32(this.at, true)
    this.at += 4
    return v
  }

  /** Read a float64. */
  f64(field: string): number {
    this.need(8, field)
    const v = this.dv.getFloat64(this.at, true)
    this.at += 8
    return v
  }

  /** Copy `n` raw bytes out (a copy, not a view). */
  raw(n: number, field: string): Uint8Array {
    this.need(n, field)
    const out = this.bytes.slice(this.at, this.at + n)
    this.at += n
    return out
  }

  /**
   * Skip `n` reserved bytes, which must be 0.
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming `field` when one is not
   */
  reserved(n: number, field: string): void {
    this.need(n, field)
    for (let i = 0; i < n; i++) if (this.bytes[this.at + i] !== 0) invalidField(field, '0', 'non-zero bytes')
    this.at += n
  }

  /** Read `n` float64 values into a new array. */
  f64s(n: number, field: string): Float64Array {
    this.need(n * 8, field)
    const out = new Float64Array(n)
    if (LITTLE_ENDIAN) {
      new Uint8Array(out.buffer).set(this.bytes.subarray(this.at, this.at + n * 8))
      this.at += n * 8
    } else for (let i = 0; i < n; i++) out[i] = this.f64(field)
    return out
  }
}
