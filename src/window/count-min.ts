import { GrudgeRangeError, describeValue, invalidOption } from '../errors.js'
import { FAMILY, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { isHasherId, hasherFromId, resolveHasher, type Hasher, type SeedLike } from '../hash/hasher.js'
import { mergeIncompatible, mergeSelf, sameBytes, type Mergeable } from './mergeable.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Options shared by both ways of building a {@link CountMinSketch}. */
export interface CountMinCommonOptions {
  /**
   * Conservative update (Estan & Varghese, "New directions in traffic measurement and
   * accounting", SIGCOMM 2002): raise only the counters below the new minimum. Tighter
   * estimates, same guarantee (never below the true count). Default false.
   */
  conservative?: boolean
  /** Seed of the hasher (16 bytes, number, bigint or 32 hex digits). Random when absent. */
  seed?: SeedLike
  /** The 64-bit hash: `murmur3()` (default) or `sipHash()`; its seed is used unless `seed` is given. */
  hasher?: Hasher
}

/** Options of {@link CountMinSketch.bySize}. */
export interface CountMinSizeOptions extends CountMinCommonOptions {
  /** w, counters per row: an integer in [1, 2^28]. The additive error is about e/w of the total. */
  width: number
  /** d, rows: an integer in [1, 64], with width × depth ≤ 2^28. The error bound fails with probability about e^−d. */
  depth: number
}

/** Options of {@link CountMinSketch.byAccuracy}. */
export interface CountMinAccuracyOptions extends CountMinCommonOptions {
  /** ε in (0, 1): estimates exceed the true count by at most ε × total (with probability 1 − δ). */
  epsilon: number
  /** δ in (0, 1): the probability that the ε bound fails for a given item. */
  delta: number
}

/** Largest counter value; counters saturate here instead of wrapping. */
export const CMS_MAX_COUNT = 0xffffffff
const MAX_WIDTH = 2 ** 28
const MAX_DEPTH = 64
const MAX_CELLS = 2 ** 28
const VERSION = 1
const FLAG_CONSERVATIVE = 1
const COUNTER_BITS = 32
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1

function badSizing(name: string, expected: string, value: unknown): never {
  throw new GrudgeRangeError(
    'ERR_GRUDGE_SIZING_INVALID',
    `${name}: expected ${expected}, received ${describeValue(value)}`,
  )
}

/**
 * Count-Min width for an additive error of ε × total: `w = ceil(e / ε)` (Cormode &
 * Muthukrishnan, "An improved data stream summary: the count-min sketch and its
 * applications", J. Algorithms 55(1), 2005, Theorem 1). ε = 0.001 gives 2719.
 * @param epsilon ε in (0, 1)
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for ε outside (0, 1) or NaN
 */
export function countMinWidth(epsilon: number): number {
  if (typeof epsilon !== 'number' || !(epsilon > 0 && epsilon < 1)) badSizing('epsilon', 'a number in (0, 1)', epsilon)
  return Math.ceil(Math.E / epsilon)
}

/**
 * Count-Min depth for a failure probability δ: `d = ceil(ln(1/δ))` (Cormode &
 * Muthukrishnan 2005, Theorem 1). δ = 0.001 gives 7.
 * @param delta δ in (0, 1)
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for δ outside (0, 1) or NaN
 */
export function countMinDepth(delta: number): number {
  if (typeof delta !== 'number' || !(delta > 0 && delta < 1)) badSizing('delta', 'a number in (0, 1)', delta)
  return Math.max(1, Math.ceil(Math.log(1 / delta)))
}

/**
 * The option names of {@link CountMinSizeOptions}; any other key is refused.
 * @internal
 */
export const COUNT_MIN_SIZE_KEYS = optionKeys<CountMinSizeOptions>({
  width: true,
  depth: true,
  conservative: true,
  seed: true,
  hasher: true,
})
/**
 * The option names of {@link CountMinAccuracyOptions}; any other key is refused.
 * @internal
 */
export const COUNT_MIN_ACCURACY_KEYS = optionKeys<CountMinAccuracyOptions>({
  epsilon: true,
  delta: true,
  conservative: true,
  seed: true,
  hasher: true,
})

/**
 * Count-Min sketch (Cormode & Muthukrishnan 2005): d rows of w unsigned 32-bit counters.
 * An item maps to one counter per row (Kirsch–Mitzenmacher double hashing of one 64-bit
 * hash: exactly `kmIndexes` of src/hash/indexes.ts, `(h1 + i·h2) mod w`, computed incrementally as
 * `(h1 mod w) + i·(h2 mod w)` reduced by one subtraction per row, so two divisions per
 * item instead of d); `add` raises its d counters and `estimate` returns their
 * minimum, which is never below the item's true count (collisions only add) and, with
 * probability 1 − δ, at most ε × {@link CountMinSketch.totalCount} above it.
 *
 * Counters saturate at 2^32 − 1 instead of wrapping (a wrapped counter would
 * underestimate); an estimate of 2^32 − 1 means "at least that many".
 *
 * Mergeable (see {@link Mergeable}): merge adds counters and totals (saturating).
 */
export class CountMinSketch implements Mergeable {
  /** w, counters per row. */
  readonly width: number
  /** d, rows. */
  readonly depth: number
  /** Whether conservative update is on. */
  readonly conservative: boolean
  /** The seeded 64-bit hash. */
  readonly hasher: Hasher
  /** Counters, row-major: counter j of row i at i·w + j. */
  private readonly counters: Uint32Array
  private readonly idx: Uint32Array
  private total = 0

  /** An empty sketch of a checked shape: every path (bySize, byAccuracy, emptyLike, deserialize) ends here. */
  private constructor(width: number, depth: number, conservative: boolean, hasher: Hasher) {
    this.width = width
    this.depth = depth
    this.conservative = conservative
    this.hasher = hasher
    this.counters = new Uint32Array(width * depth)
    this.idx = new Uint32Array(depth)
  }

  /**
   * An empty sketch of `depth` rows × `width` counters (4·w·d bytes).
   * @param options see {@link CountMinSizeOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `width`, `depth`,
   * `conservative`, `seed` or `hasher`, or a key that is not an option of {@link CountMinSizeOptions}
   */
  static bySize(options: CountMinSizeOptions): CountMinSketch {
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object with width and depth', options)
    checkKnownOptions(options, COUNT_MIN_SIZE_KEYS)
    const { width, depth } = options
    if (typeof width !== 'number' || !Number.isInteger(width) || width < 1 || width > MAX_WIDTH) {
      invalidOption('width', 'an integer in [1, 2^28]', width)
    }
    if (typeof depth !== 'number' || !Number.isInteger(depth) || depth < 1 || depth > MAX_DEPTH) {
      invalidOption('depth', 'an integer in [1, 64]', depth)
    }
    if (width * depth > MAX_CELLS) invalidOption('width', `width × depth ≤ 2^28 (depth = ${depth})`, width)
    return CountMinSketch.withCommon(width, depth, options)
  }

  /**
   * A sketch sized for an error of at most ε × total with probability 1 − δ:
   * width = ceil(e/ε), depth = ceil(ln(1/δ)) ({@link countMinWidth}, {@link countMinDepth});
   * ε = 0.001, δ = 0.001 gives 2719 × 7.
   * @param options see {@link CountMinAccuracyOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `epsilon` or `delta` outside
   * (0, 1), a width × depth above 2^28, a bad `conservative`, `seed` or `hasher`, or a key
   * that is not an option of {@link CountMinAccuracyOptions}
   */
  static byAccuracy(options: CountMinAccuracyOptions): CountMinSketch {
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object with epsilon and delta', options)
    checkKnownOptions(options, COUNT_MIN_ACCURACY_KEYS)
    const { epsilon, delta } = options
    if (typeof epsilon !== 'number' || !(epsilon > 0 && epsilon < 1))
      invalidOption('epsilon', 'a number in (0, 1)', epsilon)
    if (typeof delta !== 'number' || !(delta > 0 && delta < 1)) invalidOption('delta', 'a number in (0, 1)', delta)
    const width = countMinWidth(epsilon)
    const depth = countMinDepth(delta)
    if (width * depth > MAX_CELLS)
      invalidOption('epsilon', `an ε and δ giving width × depth ≤ 2^28 (${width} × ${depth})`, epsilon)
    return CountMinSketch.withCommon(width, depth, options)
  }

  /** The sketch of a checked shape with the options both constructors share. */
  private static withCommon(width: number, depth: number, options: CountMinCommonOptions): CountMinSketch {
    const conservative = options.conservative ?? false
    if (typeof conservative !== 'boolean') invalidOption('conservative', 'a boolean', conservative)
    return new CountMinSketch(width, depth, conservative, resolveHasher(options.hasher, options.seed))
  }

  /** The sum of every count added (merges included), saturating at 2^53 − 1. */
  get totalCount(): number {
    return this.total
  }

  /**
   * Add `count` occurrences of `item`. No allocation.
   * @param item a string (hashed as UTF-8) or bytes
   * @param count a non-negative safe integer, default 1 (0 changes nothing)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for NaN/±Infinity,
   * `ERR_GRUDGE_OPTION_INVALID` for a negative or fractional count (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` for an item of another type
   */
  add(item: string | Uint8Array, count = 1): void {
    // fast path for counts that fit a u32; the full check only on the slow path
    if (count >>> 0 !== count && (typeof count !== 'number' || !Number.isSafeInteger(count) || count < 0))
      badCount(count)
    const h = this.hasher
    h.hashKey(item)
    const w = this.width
    const d = this.depth
    const c = this.counters
    // row i's counter is (h1 + i·h2) mod w, walked incrementally (see the class doc)
    const step = ((h.hashHi | 1) >>> 0) % w
    let x = (h.hashLo >>> 0) % w
    if (this.conservative) {
      const idx = this.idx
      let min = CMS_MAX_COUNT
      for (let i = 0, row = 0; i < d; i++, row += w) {
        const p = row + x
        idx[i] = p
        const v = c[p]
        if (v < min) min = v
        x += step
        if (x >= w) x -= w
      }
      const target = min + count > CMS_MAX_COUNT ? CMS_MAX_COUNT : min + count
      for (let i = 0; i < d; i++) {
        const p = idx[i]
        if (c[p] < target) c[p] = target
      }
    } else {
      for (let row = 0, end = d * w; row < end; row += w) {
        const p = row + x
        const v = c[p] + count
        c[p] = v > CMS_MAX_COUNT ? CMS_MAX_COUNT : v
        x += step
        if (x >= w) x -= w
      }
    }
    const t = this.total + count
    this.total = t > Number.MAX_SAFE_INTEGER ? Number.MAX_SAFE_INTEGER : t
  }

  /**
   * The estimated count of `item`: the minimum of its d counters. Never below the true
   * count (unless a counter saturated at 2^32 − 1); above it by at most ε × total with
   * probability 1 − δ. No allocation.
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  estimate(item: string | Uint8Array): number {
    const h = this.hasher
    h.hashKey(item)
    const w = this.width
    const c = this.counters
    const step = ((h.hashHi | 1) >>> 0) % w
    let x = (h.hashLo >>> 0) % w
    let min = CMS_MAX_COUNT
    for (let row = 0, end = this.depth * w; row < end; row += w) {
      const v = c[row + x]
      if (v < min) min = v
      x += step
      if (x >= w) x -= w
    }
    return min
  }

  /** Memory held by the counters in bytes: 4 × w × d. */
  sizeBytes(): number {
    return this.counters.byteLength
  }

  /** Reset every counter and the total to 0 (the seed is kept). */
  clear(): void {
    this.counters.fill(0)
    this.total = 0
  }

  /** Whether `other` is a CountMinSketch with the same width, depth, update rule, hasher and seed. */
  isCompatible(other: unknown): boolean {
    return (
      other instanceof CountMinSketch &&
      other.width === this.width &&
      other.depth === this.depth &&
      other.conservative === this.conservative &&
      other.hasher.id === this.hasher.id &&
      sameBytes(other.hasher.seed, this.hasher.seed)
    )
  }

  /**
   * Fold `other` into this sketch: counters and totals add (saturating). Afterwards
   * estimates cover both streams and still never fall below the true counts. Commutative
   * and associative.
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming what differs (family,
   * width, depth, conservative, hasher, seed); `ERR_GRUDGE_MERGE_SELF` for `this`
   */
  merge(other: CountMinSketch): void {
    if (other === this) mergeSelf('CountMinSketch')
    if (!(other instanceof CountMinSketch)) {
      mergeIncompatible('family', 'CountMinSketch', (other as object | null)?.constructor?.name ?? other)
    }
    if (other.width !== this.width) mergeIncompatible('width', this.width, other.width)
    if (other.depth !== this.depth) mergeIncompatible('depth', this.depth, other.depth)
    if (other.conservative !== this.conservative)
      mergeIncompatible('conservative', this.conservative, other.conservative)
    if (other.hasher.id !== this.hasher.id) mergeIncompatible('hasher', this.hasher.name, other.hasher.name)
    if (!sameBytes(other.hasher.seed, this.hasher.seed)) mergeIncompatible('seed', this.hasher.seed, other.hasher.seed)
    const a = this.counters
    const b = other.counters
    for (let i = 0; i < a.length; i++) {
      const v = a[i] + b[i]
      a[i] = v > CMS_MAX_COUNT ? CMS_MAX_COUNT : v
    }
    const t = this.total + other.total
    this.total = t > Number.MAX_SAFE_INTEGER ? Number.MAX_SAFE_INTEGER : t
  }

  /** A new empty sketch with the same width, depth, update rule, hasher and seed. */
  emptyLike(): CountMinSketch {
    return new CountMinSketch(this.width, this.depth, this.conservative, this.hasher.withSeed(this.hasher.seed))
  }

  /**
   * The sketch as a grudge frame (family 5, version 1; layout in `spec/window.md`):
   * flags bit 0 = conservative; params = width u32, depth u32, hasher id u8, counter bits
   * u8 (32), reserved u16 (0); payload = total u64, then the w·d counters u32, row-major,
   * all little-endian.
   */
  serialize(): Uint8Array {
    const params = new Uint8Array(12)
    const pv = new DataView(params.buffer)
    pv.setUint32(0, this.width, true)
    pv.setUint32(4, this.depth, true)
    params[8] = this.hasher.id
    params[9] = COUNTER_BITS
    const n = this.counters.length
    const payload = new Uint8Array(8 + 4 * n)
    const dv = new DataView(payload.buffer)
    dv.setUint32(0, this.total % 0x100000000, true)
    dv.setUint32(4, Math.floor(this.total / 0x100000000), true)
    if (LITTLE_ENDIAN) payload.set(new Uint8Array(this.counters.buffer, this.counters.byteOffset, 4 * n), 8)
    else for (let i = 0; i < n; i++) dv.setUint32(8 + 4 * i, this.counters[i], true)
    return writeFrame({
      family: FAMILY.countMin,
      version: VERSION,
      flags: this.conservative ? FLAG_CONSERVATIVE : 0,
      seed: this.hasher.seed,
      params,
      payload,
    })
  }

  /**
   * Read a sketch back from {@link CountMinSketch.serialize}'s frame. Every field is
   * checked before use, including that no row sums to more than the total (nor, under
   * plain update, less, unless the row holds a saturated counter).
   * @throws {GrudgeError} a `ERR_GRUDGE_FORMAT_*` code (truncated, magic, checksum,
   * family, version, invalid field: flags, width, depth, hasher, counter bits, payload
   * length, total, a row above the total)
   */
  static deserialize(bytes: Uint8Array): CountMinSketch {
    const f = readFrame(bytes, FAMILY.countMin, VERSION)
    if ((f.flags & ~FLAG_CONSERVATIVE) !== 0) invalidField('flags', 'only bit 0 (conservative)', f.flags)
    if (f.params.length !== 12) invalidField('params', '12 bytes', f.params.length)
    const pv = new DataView(f.params.buffer, f.params.byteOffset, 12)
    const width = pv.getUint32(0, true)
    const depth = pv.getUint32(4, true)
    const hasherId = f.params[8]
    if (width < 1 || width > MAX_WIDTH) invalidField('width', 'an integer in [1, 2^28]', width)
    if (depth < 1 || depth > MAX_DEPTH) invalidField('depth', 'an integer in [1, 64]', depth)
    if (width * depth > MAX_CELLS) invalidField('width', `width × depth ≤ 2^28 (depth = ${depth})`, width)
    if (!isHasherId(hasherId)) invalidField('hasher', '1, 2 or 3', hasherId)
    if (f.params[9] !== COUNTER_BITS) invalidField('counterBits', '32', f.params[9])
    if (f.params[10] !== 0 || f.params[11] !== 0) invalidField('reserved', '0', pv.getUint16(10, true))
    const n = width * depth
    if (f.payload.length !== 8 + 4 * n)
      invalidField('payload', `${8 + 4 * n} bytes for ${width} × ${depth}`, f.payload.length)
    const dv = new DataView(f.payload.buffer, f.payload.byteOffset, f.payload.byteLength)
    const total = dv.getUint32(0, true) + dv.getUint32(4, true) * 0x100000000
    if (total > Number.MAX_SAFE_INTEGER) invalidField('total', 'at most 2^53 − 1', total)
    const cms = new CountMinSketch(width, depth, (f.flags & FLAG_CONSERVATIVE) !== 0, hasherFromId(hasherId, f.seed))
    const c = cms.counters
    for (let i = 0; i < n; i++) c[i] = dv.getUint32(8 + 4 * i, true)
    // every add raises each row by at most the count, so no row can sum above the total
    // (unless the total itself saturated); plain update raises each row by exactly the
    // count, so there a row without a saturated counter sums to the total
    const plain = (f.flags & FLAG_CONSERVATIVE) === 0
    for (let r = 0; r < depth && total < Number.MAX_SAFE_INTEGER; r++) {
      let sum = 0
      let saturated = false
      for (let j = r * width, end = j + width; j < end; j++) {
        sum += c[j]
        if (c[j] === CMS_MAX_COUNT) saturated = true
      }
      if (sum > total) invalidField(`rows[${r}]`, `a sum ≤ total (${total})`, sum)
      if (plain && !saturated && sum !== total) invalidField(`rows[${r}]`, `a sum = total (${total})`, sum)
    }
    cms.total = total
    return cms
  }
}

function badCount(count: unknown): never {
  if (typeof count === 'number' && !Number.isFinite(count)) {
    throw new GrudgeRangeError(
      'ERR_GRUDGE_VALUE_NOT_FINITE',
      `count: expected a finite non-negative integer, received ${describeValue(count)}`,
    )
  }
  throw new GrudgeRangeError(
    'ERR_GRUDGE_OPTION_INVALID',
    `count: expected a non-negative safe integer, received ${describeValue(count)}`,
  )
}
