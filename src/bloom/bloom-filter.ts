import { GrudgeError, describeValue, invalidOption } from '../errors.js'
import { hasherFromId, resolveHasher, type Hasher, type SeedLike } from '../hash/hasher.js'
import { FAMILY, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { fmix32 } from '../hash/murmur3.js'
import { DISTINCT_MAX_BITS, MAX_BITS, POSITIONS_KM, POSITIONS_V2, mulHi } from './positions.js'
import { bloomOptimalBits, bloomOptimalHashes } from './sizing.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/**
 * Format version of the Bloom frame (family 3, `FAMILY.bloom`) written for a new filter:
 * 2, whose bit positions are honest at every size (spec/bloom.md §3). A filter read from a
 * version-1 frame keeps version 1's positions and writes version 1.
 */
export const BLOOM_FORMAT_VERSION = 2
/** Size in bytes of the Bloom frame's params block. */
const BLOOM_PARAMS_BYTES = 24
/**
 * Largest number of hash functions accepted: 1024.
 * @internal
 */
export const MAX_HASHES = 1024

/**
 * The fixed parts of a Bloom frame (all but the payload), from `BloomFilter.frameHeader`.
 * @internal
 */
export interface BloomFrameHeader {
  /** Frame family id: 3 (Bloom). */
  family: number
  /** Format version: {@link BLOOM_FORMAT_VERSION}. */
  version: number
  /** Frame flags: 0. */
  flags: number
  /** The hasher's 16 seed bytes (the hasher's own array, not a copy). */
  seed: Uint8Array
  /** The 24-byte params block: bits u64, hashes u32, hasher id u8, 3 zero bytes, addedCount u64. */
  params: Uint8Array
}

/** Options shared by both ways of building a {@link BloomFilter}. */
export interface BloomHashOptions {
  /**
   * The hash function: `murmur3()` (default) or `sipHash()` (a keyed PRF; use it when
   * items are chosen by an attacker). Its own seed is used unless `seed` is given.
   */
  hasher?: Hasher
  /** Seed (16 bytes, number, bigint or 32 hex digits). Random (crypto) when absent. */
  seed?: SeedLike
}

/** Options of {@link BloomFilter.byAccuracy}: construction by accuracy. */
export interface BloomFilterAccuracyOptions extends BloomHashOptions {
  /** Expected number of distinct items n: a positive safe integer. */
  capacity: number
  /** Target false-positive rate p at `capacity` items, in (0, 1). */
  errorRate: number
}

/** Options of {@link BloomFilter.bySize}: construction by size. */
export interface BloomFilterSizeOptions extends BloomHashOptions {
  /** m, the number of bits: an integer in [1, 2^36]. */
  bits: number
  /** k, the number of hash functions (positions per item): an integer in [1, 1024]. */
  hashes: number
}

/**
 * The option names of {@link BloomFilterAccuracyOptions}; any other key is refused.
 * @internal
 */
export const BLOOM_FILTER_ACCURACY_KEYS = optionKeys<BloomFilterAccuracyOptions>({
  capacity: true,
  errorRate: true,
  hasher: true,
  seed: true,
})
/**
 * The option names of {@link BloomFilterSizeOptions}; any other key is refused.
 * @internal
 */
export const BLOOM_FILTER_SIZE_KEYS = optionKeys<BloomFilterSizeOptions>({
  bits: true,
  hashes: true,
  hasher: true,
  seed: true,
})

const TWO32 = 0x100000000
const INV16 = 1 / 65536
const INV32 = 1 / 4294967296
/** Weyl increment of the distinct-position stream (positions.ts `streamDraw`). */
const GOLDEN32 = 0x9e3779b9
/** Position loop of a filter: 64-bit Kirsch–Mitzenmacher (frame version 1). */
const LOOP_KM = 0
/** Position loop: k distinct draws of the stream (version 2, m ≤ 2^20). */
const LOOP_DISTINCT = 1
/** Position loop: enhanced double hashing mod m (version 2, m > 2^20). */
const LOOP_EDH = 2

// Scratch of the distinct-position loop, shared by every filter (JavaScript runs one
// operation at a time, and each leaves the marks all clear): a bitmap of 2^20 bits marking
// the positions drawn so far by the operation in progress, and the positions to unmark.
let marks: Uint32Array | undefined
const picked = new Uint32Array(1024)
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

/**
 * A Bloom filter (Bloom 1970): m bits and k positions per item; `mightContain` never
 * answers false for an added item and answers true for a non-member with probability
 * about `(1 − e^(−k·n/m))^k`.
 *
 * Positions come from one 64-bit hash of the item (murmur3 by default, SipHash-2-4 on
 * request): k distinct positions from a keyed stream up to 2^20 bits, enhanced double
 * hashing (Dillinger & Manolios, FMCAD 2004) above, so the measured false-positive rate
 * matches the formula at every size, and sizes above 2^31 and 2^32 bits work (frame
 * version 2; a filter read from a version-1 frame keeps that version's Kirsch–Mitzenmacher
 * positions; see `positions.ts` and `spec/bloom.md` §3). Bits live
 * in a Uint32Array: bit p is bit (p mod 32) of word floor(p / 32), which on the wire is
 * bit (p mod 8) of byte floor(p / 8). Nothing is allocated per operation.
 *
 * Mergeable: {@link BloomFilter.merge} ORs two filters of the same bits, hashes, hasher and
 * seed. Serializable as a grudge frame of family 3 (`spec/bloom.md`).
 */
export class BloomFilter {
  /** m, the number of bits. */
  readonly bitCount: number
  /** k, the number of positions per item. */
  readonly hashCount: number
  /** The seeded hash function. */
  readonly hasher: Hasher
  /**
   * The position scheme, which is the frame version it is written with: 2 for a new
   * filter, 1 for one read from a version-1 frame (spec/bloom.md §3).
   * @internal
   */
  readonly positionScheme: number
  /** Bits, 32 per word (little-endian bit order within a word). */
  private readonly words: Uint32Array
  /** Which position loop runs: LOOP_KM, LOOP_DISTINCT or LOOP_EDH. */
  private readonly loop: number
  /** Positions per item of the distinct loop: min(k, m). */
  private readonly distinctCount: number
  private added: number
  private setBits: number

  /** Build from a checked geometry: every path (bySize, byAccuracy, clone, deserialize) ends here. */
  private constructor(bits: number, hashes: number, hasher: Hasher, scheme: number = POSITIONS_V2) {
    this.bitCount = bits
    this.hashCount = hashes
    this.hasher = hasher
    this.positionScheme = scheme
    this.words = new Uint32Array(Math.ceil(bits / 32))
    this.loop = scheme === POSITIONS_KM ? LOOP_KM : bits <= DISTINCT_MAX_BITS ? LOOP_DISTINCT : LOOP_EDH
    this.distinctCount = Math.min(hashes, bits)
    if (this.loop === LOOP_DISTINCT) marks ??= new Uint32Array(DISTINCT_MAX_BITS / 32)
    this.added = 0
    this.setBits = 0
  }

  /**
   * A filter of exactly `bits` bits and `hashes` positions per item.
   * @param options see {@link BloomFilterSizeOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for bits not an integer in [1, 2^36],
   * hashes not an integer in [1, 1024], a bad hasher or seed, or a key that is not an
   * option of {@link BloomFilterSizeOptions}
   */
  static bySize(options: BloomFilterSizeOptions): BloomFilter {
    if (typeof options !== 'object' || options === null) invalidOption('options', 'an object { bits, hashes }', options)
    checkKnownOptions(options, BLOOM_FILTER_SIZE_KEYS)
    checkGeometry(options.bits, options.hashes)
    return new BloomFilter(options.bits, options.hashes, pickHasher(options))
  }

  /**
   * A filter sized for `capacity` items at false-positive rate `errorRate`:
   * m = {@link bloomOptimalBits}(capacity, errorRate), k = {@link bloomOptimalHashes}(m, capacity)
   * (capped at 1024). Reference: capacity 1000 at errorRate 0.01 gives m = 9586, k = 7.
   * @param options see {@link BloomFilterAccuracyOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option: capacity not a
   * positive safe integer, errorRate outside (0, 1), a size above 2^36 bits, a bad hasher or
   * seed, or a key that is not an option of {@link BloomFilterAccuracyOptions}
   */
  static byAccuracy(options: BloomFilterAccuracyOptions): BloomFilter {
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object { capacity, errorRate }', options)
    checkKnownOptions(options, BLOOM_FILTER_ACCURACY_KEYS)
    const { bits, hashes } = accuracyGeometry(options.capacity, options.errorRate)
    return new BloomFilter(bits, hashes, pickHasher(options))
  }

  /** The 16 seed bytes of the hasher (a copy). */
  get seed(): Uint8Array {
    return new Uint8Array(this.hasher.seed)
  }

  /** Number of `add` calls so far (duplicates included), plus those of merged filters. */
  get addedCount(): number {
    return this.added
  }

  /** Number of bits set to 1. */
  get setBitCount(): number {
    return this.setBits
  }

  /** Memory held by the bits in bytes: 4 · ceil(m / 32). */
  sizeBytes(): number {
    return this.words.byteLength
  }

  /**
   * Insert an item.
   * @param item a string (hashed as its UTF-8 bytes) or a Uint8Array (hashed as is)
   * @returns true when at least one bit went from 0 to 1 (the item was surely new)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` for another type
   */
  add(item: string | Uint8Array): boolean {
    const hasher = this.hasher
    hasher.hashKey(item)
    return this.addHashed(hasher.hashHi, hasher.hashLo)
  }

  /**
   * Insert an item by its 64-bit hash under this filter's {@link BloomFilter.hasher}, for
   * structures that hash once and route (sharded filters).
   * @param hashHi high 32 bits of the hash (int32 or uint32)
   * @param hashLo low 32 bits of the hash (int32 or uint32)
   * @returns true when at least one bit went from 0 to 1
   * @internal
   */
  addHashed(hashHi: number, hashLo: number): boolean {
    const fresh =
      this.loop === LOOP_DISTINCT
        ? this.addDistinct(hashHi, hashLo)
        : this.loop === LOOP_EDH
          ? this.addEnhanced(hashHi, hashLo)
          : this.addKirschMitzenmacher(hashHi, hashLo)
    this.added++
    this.setBits += fresh
    return fresh > 0
  }

  /** Set the bits of scheme 2 for m ≤ 2^20 (positions.ts `bloomPositionsV2`); returns how many were 0. */
  private addDistinct(hashHi: number, hashLo: number): number {
    const m = this.bitCount
    const kk = this.distinctCount
    const words = this.words
    const mark = marks!
    const key = fmix32(hashHi) >>> 0
    let a = hashLo >>> 0
    let n = 0
    let fresh = 0
    while (n < kk) {
      a = (a + GOLDEN32) >>> 0
      const pos = Math.floor((fmix32(a ^ key) >>> 0) * m * INV32)
      const w = pos >>> 5
      const b = pos & 31
      const bit = 1 << b
      if ((mark[w] & bit) !== 0) continue // drawn before: positions are distinct
      mark[w] |= bit
      picked[n++] = pos
      const old = words[w]
      words[w] = old | bit
      fresh += ((old >>> b) & 1) ^ 1
    }
    for (let i = 0; i < n; i++) mark[picked[i] >>> 5] = 0
    return fresh
  }

  /** Set the bits of scheme 2 for m > 2^20 (enhanced double hashing); returns how many were 0. */
  private addEnhanced(hashHi: number, hashLo: number): number {
    const m = this.bitCount
    const k = this.hashCount
    const words = this.words
    let x = mulHi(hashHi >>> 0, hashLo >>> 0, m)
    let y = mulHi(hashLo >>> 0, hashHi >>> 0, m)
    let fresh = 0
    for (let i = 0; i < k; i++) {
      const w = Math.floor(x * 0.03125)
      const b = x & 31
      const old = words[w]
      words[w] = old | (1 << b)
      fresh += ((old >>> b) & 1) ^ 1
      x += y
      if (x >= m) x -= m
      y += i + 1
      if (y >= m) y -= m
    }
    return fresh
  }

  /** Set the bits of scheme 1 (frame version 1); returns how many were 0. */
  private addKirschMitzenmacher(hashHi: number, hashLo: number): number {
    let xh = hashHi >>> 0
    let xl = hashLo >>> 0
    const bh = (xl | 1) >>> 0
    const bl = (xh | 1) >>> 0
    const m = this.bitCount
    const k = this.hashCount
    const words = this.words
    let fresh = 0
    for (let i = 0; i < k; i++) {
      const pos = mulHi(xh, xl, m)
      const w = Math.floor(pos * 0.03125)
      const b = pos & 31
      const old = words[w]
      // branch-free: a mispredicted "was it set?" branch would serialize the cache misses
      words[w] = old | (1 << b)
      fresh += ((old >>> b) & 1) ^ 1
      // 64-bit add of B with the carry, every word kept a uint32
      xl = (xl + bl) >>> 0
      xh = (xh + bh + (xl < bl ? 1 : 0)) >>> 0
    }
    return fresh
  }

  /**
   * Whether the item may have been added: false means surely not added; true means added
   * or a false positive.
   * @param item a string (UTF-8) or a Uint8Array
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` for another type
   */
  mightContain(item: string | Uint8Array): boolean {
    const hasher = this.hasher
    hasher.hashKey(item)
    return this.mightContainHashed(hasher.hashHi, hasher.hashLo)
  }

  /**
   * {@link BloomFilter.mightContain} by the item's 64-bit hash under this filter's hasher.
   * @param hashHi high 32 bits of the hash (int32 or uint32)
   * @param hashLo low 32 bits of the hash (int32 or uint32)
   * @internal
   */
  mightContainHashed(hashHi: number, hashLo: number): boolean {
    if (this.loop === LOOP_DISTINCT) return this.containsDistinct(hashHi, hashLo)
    if (this.loop === LOOP_EDH) return this.containsEnhanced(hashHi, hashLo)
    return this.containsKirschMitzenmacher(hashHi, hashLo)
  }

  /** Whether every bit of scheme 2 for m ≤ 2^20 is set; stops at the first clear one. */
  private containsDistinct(hashHi: number, hashLo: number): boolean {
    const m = this.bitCount
    const kk = this.distinctCount
    const words = this.words
    const mark = marks!
    const key = fmix32(hashHi) >>> 0
    let a = hashLo >>> 0
    let n = 0
    let all = true
    while (n < kk) {
      a = (a + GOLDEN32) >>> 0
      const pos = Math.floor((fmix32(a ^ key) >>> 0) * m * INV32)
      const w = pos >>> 5
      const bit = 1 << (pos & 31)
      if ((words[w] & bit) === 0) {
        all = false
        break
      }
      if ((mark[w] & bit) !== 0) continue
      mark[w] |= bit
      picked[n++] = pos
    }
    for (let i = 0; i < n; i++) mark[picked[i] >>> 5] = 0
    return all
  }

  /** Whether every bit of scheme 2 for m > 2^20 is set. */
  private containsEnhanced(hashHi: number, hashLo: number): boolean {
    const m = this.bitCount
    const k = this.hashCount
    const words = this.words
    let x = mulHi(hashHi >>> 0, hashLo >>> 0, m)
    let y = mulHi(hashLo >>> 0, hashHi >>> 0, m)
    for (let i = 0; i < k; i++) {
      if ((words[Math.floor(x * 0.03125)] & (1 << (x & 31))) === 0) return false
      x += y
      if (x >= m) x -= m
      y += i + 1
      if (y >= m) y -= m
    }
    return true
  }

  /** Whether every bit of scheme 1 (frame version 1) is set. */
  private containsKirschMitzenmacher(hashHi: number, hashLo: number): boolean {
    let xh = hashHi >>> 0
    let xl = hashLo >>> 0
    const bh = (xl | 1) >>> 0
    const bl = (xh | 1) >>> 0
    const m = this.bitCount
    const k = this.hashCount
    const words = this.words
    for (let i = 0; i < k; i++) {
      // mulHi inlined by hand: this is the hot loop
      let c = Math.floor((xl & 0xffff) * m * INV16)
      c = Math.floor(((xl >>> 16) * m + c) * INV16)
      c = Math.floor(((xh & 0xffff) * m + c) * INV16)
      const pos = Math.floor(((xh >>> 16) * m + c) * INV16)
      if ((words[Math.floor(pos * 0.03125)] & (1 << (pos & 31))) === 0) return false
      // 64-bit add of B with the carry, every word kept a uint32
      xl = (xl + bl) >>> 0
      xh = (xh + bh + (xl < bl ? 1 : 0)) >>> 0
    }
    return true
  }

  /**
   * Whether bit `index` is set (for inspection and tests).
   * @param index an integer in [0, bitCount)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for an index out of range
   */
  isBitSet(index: number): boolean {
    if (!Number.isInteger(index) || index < 0 || index >= this.bitCount) {
      invalidOption('index', `an integer in [0, ${this.bitCount})`, index)
    }
    return (this.words[Math.floor(index / 32)] & (1 << (index & 31))) !== 0
  }

  /** The fraction of bits set, X / m, in [0, 1]. */
  fillRatio(): number {
    return this.setBits / this.bitCount
  }

  /**
   * The false-positive rate at the current fill X of m bits, the chance that a non-member's
   * positions all hit set bits, with the set bits taken as uniformly placed (Bloom 1970): for
   * k distinct positions (version 2 up to 2^20 bits) the hypergeometric
   * `X(X − 1)…(X − k′ + 1) / (m(m − 1)…(m − k′ + 1))`, k′ = min(k, m); for independent ones
   * (enhanced double hashing above 2^20 bits, version 1's Kirsch–Mitzenmacher) `(X / m)^k`.
   * With distinct positions `(X / m)^k` overstated small filters 10×–10⁵× (one item at 1e-2:
   * 8.2e-2 against 8.3e-3 measured; at 1e-4: 6.8e-3 against 2.7e-5).
   * @returns a probability in [0, 1]
   */
  estimatedFalsePositiveRate(): number {
    const x = this.setBits
    const m = this.bitCount
    if (this.loop !== LOOP_DISTINCT) return Math.pow(x / m, this.hashCount)
    let p = 1
    for (let i = 0; i < this.distinctCount && p > 0; i++) p *= Math.max(0, x - i) / (m - i)
    return p
  }

  /**
   * The number of distinct items inserted, estimated from the fill:
   * `n̂ = −(m / k) · ln(1 − X / m)` (Swamidass & Baldi, "Mathematical correction for
   * fingerprint similarity measures to improve chemical retrieval", J. Chem. Inf. Model.
   * 2007). Duplicates are not counted; a saturated filter (X = m) gives `Infinity`.
   * @returns a number ≥ 0 (not rounded), or Infinity
   */
  estimatedCardinality(): number {
    const m = this.bitCount
    if (this.setBits >= m) return Infinity
    return (-m / this.hashCount) * Math.log1p(-this.setBits / m)
  }

  /**
   * Whether `other` can be {@link BloomFilter.merge}d into this filter: same bits,
   * hashes, hash function and seed (and both of this family).
   */
  isCompatible(other: unknown): boolean {
    return other instanceof BloomFilter && incompatibility(this, other) === null
  }

  /**
   * OR `other` into this filter, in place: afterwards it answers true for every item
   * added to either. `addedCount` becomes the sum. Union is commutative, associative and
   * idempotent on the bits.
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming what differs,
   * `ERR_GRUDGE_MERGE_SELF` when `other` is this filter
   */
  merge(other: BloomFilter): void {
    if (other === this)
      throw new GrudgeError('ERR_GRUDGE_MERGE_SELF', 'merge: expected another filter, received this filter itself')
    if (!(other instanceof BloomFilter)) {
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        `merge: expected a BloomFilter, received ${describeValue(other)}`,
      )
    }
    const why = incompatibility(this, other)
    if (why !== null) throw new GrudgeError('ERR_GRUDGE_MERGE_INCOMPATIBLE', `merge: ${why}`)
    const a = this.words
    const b = other.words
    for (let i = 0; i < a.length; i++) a[i] |= b[i]
    this.added += other.added
    this.setBits = popcount(a)
  }

  /** A deep copy (same hasher and seed). */
  clone(): BloomFilter {
    const f = new BloomFilter(
      this.bitCount,
      this.hashCount,
      this.hasher.withSeed(this.hasher.seed),
      this.positionScheme,
    )
    f.words.set(this.words)
    f.added = this.added
    f.setBits = this.setBits
    return f
  }

  /**
   * The filter as a grudge frame of family 3, version `positionScheme`
   * (2, or 1 for a filter read from a version-1 frame; `spec/bloom.md`): params
   * `bits u64 | hashes u32 | hasher u8 | 3 × 0 | addedCount u64` (24 bytes, little-endian),
   * the hasher seed, and ceil(m / 8) payload bytes with bit p at bit (p mod 8) of byte
   * floor(p / 8); the unused high bits of the last byte are 0.
   * @returns a new Uint8Array
   */
  serialize(): Uint8Array {
    const n = Math.ceil(this.bitCount / 8)
    const payload = new Uint8Array(n)
    if (LITTLE_ENDIAN) {
      payload.set(new Uint8Array(this.words.buffer, this.words.byteOffset, n))
    } else {
      for (let i = 0; i < n; i++) payload[i] = (this.words[i >>> 2] >>> ((i & 3) * 8)) & 0xff
    }
    return writeFrame({ ...this.frameHeader(), payload })
  }

  /**
   * The frame's fixed parts (everything except the payload), for writers that stream
   * the payload themselves (checkpoints).
   * @internal
   */
  frameHeader(): BloomFrameHeader {
    return {
      family: FAMILY.bloom,
      version: this.positionScheme,
      flags: 0,
      seed: this.hasher.seed,
      params: encodeParams(this),
    }
  }

  /**
   * The payload bytes as a view (no copy) on little-endian hosts; a copy otherwise. The
   * view changes as items are added. Length ceil(m / 8).
   * @internal
   */
  payloadView(): Uint8Array {
    const n = Math.ceil(this.bitCount / 8)
    if (LITTLE_ENDIAN) return new Uint8Array(this.words.buffer, this.words.byteOffset, n)
    const payload = new Uint8Array(n)
    for (let i = 0; i < n; i++) payload[i] = (this.words[i >>> 2] >>> ((i & 3) * 8)) & 0xff
    return payload
  }

  /**
   * Read a filter from a frame written by {@link BloomFilter.serialize}. Every field is
   * checked; nothing half-loaded is returned.
   * @param bytes the frame
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_TRUNCATED`, `ERR_GRUDGE_FORMAT_MAGIC`,
   * `ERR_GRUDGE_FORMAT_CHECKSUM`, `ERR_GRUDGE_FORMAT_FAMILY`, `ERR_GRUDGE_FORMAT_VERSION`,
   * `ERR_GRUDGE_FORMAT_INVALID` (bad params, payload length or bits set beyond m)
   */
  static deserialize(bytes: Uint8Array): BloomFilter {
    const frame = readFrame(bytes, FAMILY.bloom, BLOOM_FORMAT_VERSION)
    if (frame.flags !== 0) invalidField('flags', '0', frame.flags)
    const p = frame.params
    if (p.length !== BLOOM_PARAMS_BYTES) invalidField('params length', `${BLOOM_PARAMS_BYTES}`, p.length)
    const dv = new DataView(p.buffer, p.byteOffset, p.byteLength)
    const bits = dv.getUint32(0, true) + dv.getUint32(4, true) * TWO32
    const hashes = dv.getUint32(8, true)
    const hasherId = p[12]
    if (p[13] !== 0 || p[14] !== 0 || p[15] !== 0) invalidField('reserved', '0', p[13] | p[14] | p[15])
    const added = dv.getUint32(16, true) + dv.getUint32(20, true) * TWO32
    if (!Number.isInteger(bits) || bits < 1 || bits > MAX_BITS) invalidField('bits', 'an integer in [1, 2^36]', bits)
    if (hashes < 1 || hashes > MAX_HASHES) invalidField('hashes', 'an integer in [1, 1024]', hashes)
    if (!Number.isSafeInteger(added)) invalidField('addedCount', 'a safe integer', added)
    const hasher = hasherFromId(hasherId, frame.seed)
    const n = Math.ceil(bits / 8)
    if (frame.payload.length !== n) invalidField('payload length', `${n} bytes for ${bits} bits`, frame.payload.length)
    const tail = bits % 8
    if (tail !== 0 && frame.payload[n - 1] >>> tail !== 0) {
      invalidField('payload', `bits beyond bit ${bits} clear`, frame.payload[n - 1])
    }
    // the version is the position scheme: a version-1 frame keeps its old positions
    const f = new BloomFilter(bits, hashes, hasher, frame.version === 1 ? POSITIONS_KM : POSITIONS_V2)
    if (LITTLE_ENDIAN) {
      new Uint8Array(f.words.buffer, f.words.byteOffset, n).set(frame.payload)
    } else {
      const pl = frame.payload
      for (let i = 0; i < n; i++) f.words[i >>> 2] |= pl[i] << ((i & 3) * 8)
    }
    f.added = added
    f.setBits = popcount(f.words)
    return f
  }
}

/** Params block of the Bloom frame: bits u64 | hashes u32 | hasher u8 | 3 × 0 | addedCount u64. */
function encodeParams(f: BloomFilter): Uint8Array {
  const p = new Uint8Array(BLOOM_PARAMS_BYTES)
  const dv = new DataView(p.buffer)
  dv.setUint32(0, f.bitCount % TWO32, true)
  dv.setUint32(4, Math.floor(f.bitCount / TWO32), true)
  dv.setUint32(8, f.hashCount, true)
  p[12] = f.hasher.id
  dv.setUint32(16, f.addedCount % TWO32, true)
  dv.setUint32(20, Math.floor(f.addedCount / TWO32), true)
  return p
}

/** Why two filters cannot be merged, or null. */
function incompatibility(a: BloomFilter, b: BloomFilter): string | null {
  if (a.bitCount !== b.bitCount) return `expected bits ${a.bitCount}, received ${b.bitCount}`
  if (a.hashCount !== b.hashCount) return `expected hashes ${a.hashCount}, received ${b.hashCount}`
  if (a.hasher.id !== b.hasher.id) return `expected hasher ${a.hasher.name}, received ${b.hasher.name}`
  if (a.positionScheme !== b.positionScheme)
    return `expected bit positions of frame version ${a.positionScheme}, received version ${b.positionScheme}`
  if (!sameBytes(a.hasher.seed, b.hasher.seed)) return 'expected the same seed, received another seed'
  return null
}

/**
 * Whether two byte arrays are equal.
 * @internal
 */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * The geometry of a by-accuracy filter: m = {@link bloomOptimalBits}(capacity, errorRate),
 * k = {@link bloomOptimalHashes}(m, capacity) capped at 1024. Managed and sharded filters
 * size their checkpoints by it too, so a filter can always reload its own checkpoint.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `capacity` (not a positive safe
 * integer, or needing more than 2^36 bits) or `errorRate` (outside (0, 1))
 * @internal
 */
export function accuracyGeometry(capacity: unknown, errorRate: unknown): { bits: number; hashes: number } {
  if (typeof capacity !== 'number' || !Number.isSafeInteger(capacity) || capacity < 1)
    invalidOption('capacity', 'a positive safe integer', capacity)
  if (typeof errorRate !== 'number' || !(errorRate > 0 && errorRate < 1))
    invalidOption('errorRate', 'a number in (0, 1)', errorRate)
  const bits = bloomOptimalBits(capacity, errorRate)
  if (bits > MAX_BITS)
    invalidOption(
      'capacity',
      `a capacity needing at most 2^36 bits at errorRate ${errorRate} (needs ${bits})`,
      capacity,
    )
  return { bits, hashes: Math.min(bloomOptimalHashes(bits, capacity), MAX_HASHES) }
}

/**
 * Check bits and hashes of a by-size construction.
 * @internal
 */
export function checkGeometry(bits: unknown, hashes: unknown): void {
  if (typeof bits !== 'number' || !Number.isInteger(bits) || bits < 1 || bits > MAX_BITS) {
    invalidOption('bits', 'an integer in [1, 2^36]', bits)
  }
  if (typeof hashes !== 'number' || !Number.isInteger(hashes) || hashes < 1 || hashes > MAX_HASHES) {
    invalidOption('hashes', 'an integer in [1, 1024]', hashes)
  }
}

/**
 * The hasher of a filter's options (see {@link resolveHasher}).
 * @internal
 */
export function pickHasher(options: BloomHashOptions): Hasher {
  return resolveHasher(options.hasher, options.seed)
}

/** Number of set bits in the words (SWAR popcount). */
function popcount(words: Uint32Array): number {
  let total = 0
  for (let i = 0; i < words.length; i++) {
    let v = words[i]
    if (v === 0) continue
    v = v - ((v >>> 1) & 0x55555555)
    v = (v & 0x33333333) + ((v >>> 2) & 0x33333333)
    total += Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24
  }
  return total
}
