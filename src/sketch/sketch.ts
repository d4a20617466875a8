import { systemClock, systemNowMs, wallClockMs, type Clock } from '../clock.js'
import { GrudgeError, GrudgeRangeError, GrudgeTypeError, describeValue, invalidOption } from '../errors.js'
import { keyHashOf, resolveHasher, type Hasher } from '../hash/hasher.js'
import { modByReciprocal } from '../hash/indexes.js'
import { checkKnownOptions } from '../options.js'
import { finiteNow, writerStamp } from './clock-stamp.js'
import {
  CELL_SCORE,
  CELL_STRIDE,
  FOLD_CHUNK_CELLS,
  foldLevels,
  interleaveInto,
  interleavedView,
  type CellView,
} from './cells.js'
import { checkDecay } from './decay.js'
import { addCells, assertMergeable } from './merge.js'
import {
  AGGREGATOR_IDS,
  DESERIALIZE_OPTION_KEYS,
  MAX_CELLS,
  MAX_CELLS_PER_LEVEL,
  DEFAULT_CELLS_PER_LEVEL,
  DEFAULT_LEVELS,
  MAX_LEVELS,
  SKETCH_OPTION_KEYS,
  incompatibility,
  type Aggregator,
  type Decay,
  type DeserializeOptions,
  type SketchOptions,
} from './shape.js'
import { decodeSketch, encodeSketch } from './sketch-codec.js'
import {
  SketchDelta,
  applyDeltaOf,
  foldBaselineOf,
  lazyFoldBaselineOf,
  markSyncedOf,
  takeDeltaOf,
} from './sketch-delta.js'

/** The result of {@link Sketch.estimateDetailed}. */
export interface SketchDetail {
  /** The aggregate score of the key. */
  value: number
  /** The decayed score of the key's cell in each level. */
  scores: number[]
  /** The index of the key's cell in each level, in [0, cellsPerLevel). */
  cells: number[]
}

const AGG_MIN = AGGREGATOR_IDS.min
const AGG_MAX = AGGREGATOR_IDS.max
const AGG_MEAN = AGGREGATOR_IDS.mean
const DECAY_NONE = 0
const DECAY_EXP = 1
const DECAY_LIN = 2

// The slots of Sketch.hot, a Float64Array that carries doubles between the hot-path methods
// without allocating. Why a typed array and not fields or arguments: see the docstring of
// `hot` below (measured: 64 B per update for a field merged into the clamp, 16 to 32 B per
// updateAndEstimate for doubles passed between calls V8 does not inline), the README
// "Allocation" note under "Benchmarks", and test/sketch/alloc.test.ts, which fails on any
// allocation in these paths.
/** Lower clamp bound (a copy of `lo`). */
const SLOT_LO = 0
/** Upper clamp bound (a copy of `hi`). */
const SLOT_HI = 1
/** Decay rate per ms. */
const SLOT_RATE = 2
/** The aggregate after the last updateAndEstimate / admitting tracked write (lastAggregate). */
const SLOT_LAST = 3
/** The floor of the updateWithFloor in progress. */
const SLOT_FLOOR = 4
/** 1 / cellsPerLevel, for the index reduction by reciprocal. */
const SLOT_INV_M = 5
/** The sum of the gathered cells: a sink that keeps locate's early loads from being removed. */
const SLOT_SINK = 6
/** The time of the operation in progress (ms): the clock reading or the At form's nowMs. */
const SLOT_NOW = 7
/** The delta of the operation in progress. */
const SLOT_DELTA = 8
/** The aggregate computed by `aggregate()` (before any delta). */
const SLOT_AGGREGATE = 9

/**
 * A lazy fold in progress ({@link Sketch.foldLazilyFrom}): this sketch is made of a smaller one
 * a chunk of cells at a time. The smaller one is neither read nor written by anyone else from the
 * fold's start (the caller's promise: it replaces it), so a chunk copied later is exactly what
 * `foldLevels` made it at the start: cell level·M′ + j from the smaller one's level·M + (j mod M).
 */
interface LazyFold {
  /** The smaller sketch's cells per level, M. */
  readonly fromCells: number
  /** log2 of the chunk's cells: the largest power of two dividing M, at most the chunk asked for. */
  readonly shift: number
  /** The smaller sketch's cells (2 doubles a cell), held until the fold ends: chunk k is its cells [k·chunk, (k + 1)·chunk). */
  readonly from: Float64Array
  /** The smaller sketch's delta baseline, and this one's (allocated at the start); undefined: none. */
  readonly baseFrom: Float64Array | undefined
  readonly baseline: Float64Array | undefined
  /**
   * Bytes of the smaller sketch kept alive by `from` and `baseFrom` until the fold ends: its
   * cells, L·M·16, and its delta baseline, L·M·16 more when it has one (the same from the
   * fold's start to its end).
   */
  readonly heldBytes: number
  /** Per chunk of this sketch: 1 once folded. */
  readonly done: Uint8Array
  /** The sweep's next chunk: every chunk below it is folded. */
  next: number
}

/**
 * A constant-memory sketch of decaying scores over an unbounded key space: L levels × M
 * cells, each cell a score and a last-touched time (two float64, side by side in one
 * 16-byte pair: one cache line per level, see `cells.ts`). A key maps to one cell
 * per level by Kirsch–Mitzenmacher double hashing of one 64-bit hash; its score is the
 * aggregate (min, max or mean) of its L cells. Decay is lazy, per cell, applied when the
 * cell is touched; nothing runs in the background.
 *
 * With the `'min'` aggregator and non-negative updates the error is one-sided: collisions
 * only add, so a key is never judged *better* than it is (the Count-Min sketch argument:
 * Cormode & Muthukrishnan, "An improved data stream summary: the count-min sketch and its
 * applications", J. Algorithms 2005). Read it as a debt meter (linear decay, `tryUpdate`),
 * a feedback score (exponential decay), a decayed counter or a forgetting Bloom filter.
 *
 * Semantics are normative in `spec/SPEC.md`.
 */
export class Sketch {
  /** L, number of levels. */
  readonly levels: number
  /** M, cells per level. */
  readonly cellsPerLevel: number
  /** The decay of every cell. */
  readonly decay: Decay
  /** Lower clamp bound. */
  readonly lo: number
  /** Upper clamp bound. */
  readonly hi: number
  /** How levels combine. */
  readonly aggregator: Aggregator
  /** The seeded hash function. */
  readonly hasher: Hasher
  /** The time source (ms). */
  readonly clock: Clock

  /**
   * The cells, level-major and interleaved (`cells.ts`): cell p = i·M + j (level i, cell j)
   * has its score at `2p` and its last-touched time in ms at `2p + 1` (0 for a
   * never-touched cell).
   */
  protected readonly cells: Float64Array
  private readonly aggId: number
  private readonly decayId: number
  /** Decay rate per millisecond. */
  private readonly ratePerMs: number
  /** The cell index per level of the last key located (reused scratch). */
  protected readonly idx: Uint32Array
  /**
   * The offset in `cells` of the score of the last located key's cell in each level,
   * 2·(i·M + idx[i]) (reused scratch): the cell loops read it as it is, with no index
   * arithmetic, which keeps them small enough for V8 to inline (test/sketch/alloc.test.ts).
   */
  protected readonly pos: Uint32Array
  /**
   * The `SLOT_*` values for the hot paths (lo, hi, rate per ms, last aggregate, floor,
   * 1 / cellsPerLevel, gather sink, now, delta, aggregate). A typed array because a number read from a
   * class field is a tagged value: merged with a computed score (the clamp) it would box
   * every score into a heap number (measured: 64 B per update). The clock reading, the
   * delta and the aggregate pass between the methods of an operation through it too: a
   * double passed to or returned from a call V8 does not inline is boxed (measured: 16 to
   * 32 B per `updateAndEstimate` while its cell loop took and returned doubles).
   */
  private readonly hot: Float64Array
  /**
   * The step that replaces a Kirsch–Mitzenmacher step ≡ 0 (mod M): 1 under the keyed-mix
   * placement (rotator generations, fleet; M > 1), so no key has one column repeated at
   * every level; 0 (the step as it is) for a hasher that hashes the key itself, whose
   * frames were written with that placement (spec/hashing.md §4).
   */
  private readonly zeroStep: number
  /** A lazy fold in progress (see `foldLazilyFrom`), else undefined: every keyed operation's `locate` folds its key's chunks first. */
  private lazy: LazyFold | undefined

  /**
   * @param options see {@link SketchOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option: levels or
   * cellsPerLevel not a positive integer (or L×M above 2^31), lo/hi not finite or not
   * `lo ≤ 0 ≤ hi, lo < hi`, unknown aggregator, hasher or decay, bad seed or clock, or a
   * key that is not an option of {@link SketchOptions} (the message suggests the closest name)
   */
  constructor(options: SketchOptions = {}) {
    checkKnownOptions(options, SKETCH_OPTION_KEYS)
    const levels = options.levels ?? DEFAULT_LEVELS
    const cells = options.cellsPerLevel ?? DEFAULT_CELLS_PER_LEVEL
    if (!Number.isInteger(levels) || levels < 1 || levels > MAX_LEVELS) {
      invalidOption('levels', 'an integer in [1, 2^20]', levels)
    }
    if (!Number.isInteger(cells) || cells < 1 || cells > MAX_CELLS_PER_LEVEL) {
      invalidOption('cellsPerLevel', 'an integer in [1, 2^32]', cells)
    }
    if (levels * cells > MAX_CELLS) {
      invalidOption('cellsPerLevel', `levels × cellsPerLevel ≤ 2^30 (levels = ${levels})`, cells)
    }
    const lo = options.lo ?? 0
    const hi = options.hi ?? Number.MAX_VALUE
    if (typeof lo !== 'number' || !Number.isFinite(lo) || lo > 0) invalidOption('lo', 'a finite number ≤ 0', lo)
    if (typeof hi !== 'number' || !Number.isFinite(hi) || hi < 0) invalidOption('hi', 'a finite number ≥ 0', hi)
    if (!(lo < hi)) invalidOption('hi', `a number greater than lo (${lo})`, hi)
    const aggregator = options.aggregator ?? 'min'
    if (aggregator !== 'min' && aggregator !== 'max' && aggregator !== 'mean') {
      invalidOption('aggregator', "'min', 'max' or 'mean'", aggregator)
    }
    const decay = checkDecay(options.decay)
    const hasher = resolveHasher(options.hasher, options.seed)
    const clock = options.clock ?? systemClock
    if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function') {
      invalidOption('clock', 'an object with now(): number', clock)
    }
    this.levels = levels
    this.cellsPerLevel = cells
    this.decay = decay
    this.lo = lo
    this.hi = hi
    this.aggregator = aggregator
    this.hasher = hasher
    this.clock = clock
    this.zeroStep = keyHashOf(hasher) !== undefined && cells > 1 ? 1 : 0
    this.lazy = undefined
    try {
      this.cells = new Float64Array(CELL_STRIDE * levels * cells)
    } catch (err) {
      // the memory is not there (within MAX_CELLS, a machine may still refuse 16 GiB)
      if (!(err instanceof RangeError)) throw err
      invalidOption(
        'cellsPerLevel',
        `a shape this process can allocate (levels × cellsPerLevel × 16 B = ${((levels * cells * 16) / 2 ** 30).toFixed(1)} GiB was refused: ${err.message})`,
        cells,
      )
    }
    this.aggId = AGGREGATOR_IDS[aggregator]
    this.decayId = decay.kind === 'exponential' ? DECAY_EXP : decay.kind === 'linear' ? DECAY_LIN : DECAY_NONE
    this.ratePerMs = decay.ratePerSecond / 1000
    this.idx = new Uint32Array(levels)
    this.pos = new Uint32Array(levels)
    const hot = new Float64Array(SLOT_AGGREGATE + 1)
    hot[SLOT_LO] = lo
    hot[SLOT_HI] = hi
    hot[SLOT_RATE] = this.ratePerMs
    hot[SLOT_LAST] = NaN
    hot[SLOT_FLOOR] = -Infinity
    hot[SLOT_INV_M] = 1 / cells
    hot[SLOT_AGGREGATE] = NaN
    this.hot = hot
  }

  /**
   * Memory held by the cells in bytes: L × M × 16 (a float64 score and time per cell), and while
   * a lazy fold is in progress (`foldLazilyFrom`, internal: an early growth) also what it keeps alive of the
   * smaller sketch until it ends: its cells, L × M_smaller × 16, and its delta baseline when it
   * had one, L × M_smaller × 16 more (the fold holds the whole buffers, from its start to
   * its last chunk). So L × (M + M_smaller) × 16 (+ L × M_smaller × 16) while folding, L × M × 16
   * once the fold ends. Not counted, folding or not: this sketch's own delta baseline
   * (16 B per cell, allocated by the first `takeDelta`, `applyDelta` or `markSynced`), its
   * L-sized scratch arrays, and a lazy fold's bookkeeping (one byte per chunk of this sketch's
   * cells).
   */
  sizeBytes(): number {
    const cells = this.levels * this.cellsPerLevel * 16
    return this.lazy === undefined ? cells : cells + this.lazy.heldBytes
  }

  // Time. Every method that reads the clock has an explicit-time twin `<verb>At(nowMs, …)`,
  // time first (golang.org/x/time/rate's AllowN(t, n)). Both forms write their time into
  // hot[SLOT_NOW] (the clock's reading, or nowMs read the same way) before the same cell
  // work, so they behave the same for the same time: a time behind a cell's decays nothing
  // and the cell keeps its time (spec/sketch.md §3), and a NaN or ±Infinity time is read as
  // −Infinity (decays nothing, stamps nothing). The plain forms keep their own bodies, a
  // measured copy of the At forms' few lines: calling the At form, or a shared private body,
  // from the plain form costs 8 to 16 B per call (test/sketch/alloc.test.ts saw one scavenge
  // per run for `update` under systemClock and for `updateAndEstimate`: one more call level
  // spends V8's inlining budget, readClock is no longer inlined and its double is boxed).

  /**
   * Add `delta` to each of the key's L cells (after decaying each to now), clamped to
   * [lo, hi]. Allocates nothing. {@link Sketch.updateAt} at the clock's time.
   * @param key a string (UTF-8) or bytes; the empty key is valid
   * @param delta a finite number (may be negative)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for NaN/±Infinity (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` for a key of another type
   */
  update(key: string | Uint8Array, delta: number): void {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    this.locate(key)
    const hot = this.hot
    hot[SLOT_NOW] = readClock(this.clock)
    hot[SLOT_DELTA] = delta
    this.addAll()
  }

  /**
   * {@link Sketch.update} at time `nowMs` instead of the clock's.
   * @param nowMs the time in ms on this sketch's time base; NaN or ±Infinity is read as a
   * broken clock reading (decays nothing, stamps nothing)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity delta (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  updateAt(nowMs: number, key: string | Uint8Array, delta: number): void {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    this.updateNow(key, delta)
  }

  /** update at `hot[SLOT_NOW]`. */
  private updateNow(key: string | Uint8Array, delta: number): void {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    this.locate(key)
    this.hot[SLOT_DELTA] = delta
    this.addAll()
  }

  /**
   * The key's aggregate score now (its cells are decayed to now and written back).
   * {@link Sketch.estimateAt} at the clock's time.
   * @param key a string (UTF-8) or bytes
   * @returns the min / max / mean of the key's L decayed cell scores
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  estimate(key: string | Uint8Array): number {
    this.locate(key)
    this.hot[SLOT_NOW] = readClock(this.clock)
    this.aggregate()
    return this.hot[SLOT_AGGREGATE]
  }

  /**
   * {@link Sketch.estimate} at time `nowMs` (see {@link Sketch.updateAt} for the time).
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  estimateAt(nowMs: number, key: string | Uint8Array): number {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    this.locate(key)
    this.aggregate()
    return this.hot[SLOT_AGGREGATE]
  }

  /**
   * {@link Sketch.update} then {@link Sketch.estimate} in one pass over the cells.
   * {@link Sketch.updateAndEstimateAt} at the clock's time.
   * @returns the aggregate after the update
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  updateAndEstimate(key: string | Uint8Array, delta: number): number {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    this.locate(key)
    const hot = this.hot
    hot[SLOT_NOW] = readClock(this.clock)
    hot[SLOT_DELTA] = delta
    this.addAll()
    this.aggregateWritten()
    return hot[SLOT_LAST]
  }

  /**
   * {@link Sketch.updateAndEstimate} at time `nowMs` (see {@link Sketch.updateAt} for the time).
   * @returns the aggregate after the update
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  updateAndEstimateAt(nowMs: number, key: string | Uint8Array, delta: number): number {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    this.updateNow(key, delta)
    this.aggregateWritten()
    return this.hot[SLOT_LAST]
  }

  /**
   * The aggregate of the located cells as they stand (just written by `addAll`, so already
   * decayed to now) into `hot[SLOT_LAST]`. A second pass over L cells that are in cache,
   * kept apart from `addAll` so that each stays small enough for V8 to inline.
   */
  private aggregateWritten(): void {
    const cells = this.cells
    const pos = this.pos
    const L = this.levels
    const agg = this.aggId
    let acc = agg === AGG_MIN ? Infinity : agg === AGG_MAX ? -Infinity : 0
    for (let i = 0; i < L; i++) {
      const s = cells[pos[i]]
      if (agg === AGG_MIN) {
        if (s < acc) acc = s
      } else if (agg === AGG_MAX) {
        if (s > acc) acc = s
      } else acc += s
    }
    if (agg === AGG_MEAN) this.hot[SLOT_LAST] = this.mean(acc)
    else this.hot[SLOT_LAST] = acc
  }

  /**
   * Atomic conditional consume: decay the key's cells to now and, if and only if
   * `aggregate + delta ≤ limit` (inclusive), add `delta` to all L cells (clamped).
   * As a debt meter (linear decay, lo 0, Min): admit a request of cost `delta` under a
   * burst of `limit`. The decay to now is written back whether or not the delta is applied.
   * {@link Sketch.tryUpdateAt} at the clock's time.
   * @param key a string (UTF-8) or bytes
   * @param delta a finite number
   * @param limit a finite number
   * @returns whether the delta was applied
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity delta or limit (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  tryUpdate(key: string | Uint8Array, delta: number, limit: number): boolean {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    if (!Number.isFinite(limit)) checkFinite('limit', limit)
    this.locate(key)
    const hot = this.hot
    hot[SLOT_NOW] = readClock(this.clock)
    this.aggregate()
    if (hot[SLOT_AGGREGATE] + delta > limit) return false
    hot[SLOT_DELTA] = delta
    this.addAll()
    return true
  }

  /**
   * {@link Sketch.tryUpdate} at time `nowMs` (see {@link Sketch.updateAt} for the time).
   * @returns whether the delta was applied
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity delta or limit (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  tryUpdateAt(nowMs: number, key: string | Uint8Array, delta: number, limit: number): boolean {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    return this.tryUpdateNow(key, delta, limit, false)
  }

  /**
   * {@link Sketch.tryUpdate} that also leaves the aggregate after an admit in
   * {@link Sketch.lastAggregate} (the Rotator's deciding generation).
   * @internal
   */
  tryUpdateTracked(key: string | Uint8Array, delta: number, limit: number): boolean {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    if (!Number.isFinite(limit)) checkFinite('limit', limit)
    this.locate(key)
    const hot = this.hot
    hot[SLOT_NOW] = readClock(this.clock)
    this.aggregate()
    if (hot[SLOT_AGGREGATE] + delta > limit) return false
    hot[SLOT_DELTA] = delta
    this.addAllTracked() // the cells were just decayed to now by aggregate()
    return true
  }

  /**
   * {@link Sketch.tryUpdateTracked} at time `nowMs`.
   * @internal
   */
  tryUpdateTrackedAt(nowMs: number, key: string | Uint8Array, delta: number, limit: number): boolean {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    return this.tryUpdateNow(key, delta, limit, true)
  }

  /** tryUpdate at `hot[SLOT_NOW]`; `tracked` leaves the aggregate after an admit in `hot[SLOT_LAST]`. */
  private tryUpdateNow(key: string | Uint8Array, delta: number, limit: number, tracked: boolean): boolean {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    if (!Number.isFinite(limit)) checkFinite('limit', limit)
    this.locate(key)
    const hot = this.hot
    this.aggregate()
    if (hot[SLOT_AGGREGATE] + delta > limit) return false
    hot[SLOT_DELTA] = delta
    if (tracked)
      this.addAllTracked() // the cells were just decayed to now by aggregate()
    else this.addAll()
    return true
  }

  /**
   * Add `delta` to each of the key's L cells (after decaying each to now), then raise each
   * cell to at least `floor`, then clamp to [lo, hi]: cell ← clamp(max(decayed + delta,
   * floor)). One pass, allocates nothing. With floor = −Infinity it is {@link Sketch.update}.
   * The Rotator's carry-forward (`spec/rotator.md` §1) uses it to keep a younger
   * generation's reading of a key at least the deciding generation's.
   * {@link Sketch.updateWithFloorAt} at the clock's time.
   * @param key a string (UTF-8) or bytes
   * @param delta a finite number (may be negative)
   * @param floor a number or −Infinity (not NaN, not +Infinity); above hi it yields hi
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity delta, or
   * a NaN/+Infinity floor (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_OPTION_INVALID` for a floor that is not a number
   * (a string, boolean, null, undefined or BigInt is never coerced; nothing changes);
   * `ERR_GRUDGE_KEY_INVALID` for a key of another type
   */
  updateWithFloor(key: string | Uint8Array, delta: number, floor: number): void {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    if (typeof floor !== 'number' || (!(floor < Infinity) && floor !== -Infinity)) checkFloor(floor)
    this.locate(key)
    // the time, the delta and the floor go through the typed array for the reason lo and hi
    // do (a tagged argument merged with a computed score boxes the score)
    const hot = this.hot
    hot[SLOT_NOW] = readClock(this.clock)
    hot[SLOT_DELTA] = delta
    hot[SLOT_FLOOR] = floor
    this.addAllWithFloor()
  }

  /**
   * {@link Sketch.updateWithFloor} at time `nowMs` (see {@link Sketch.updateAt} for the time).
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity delta, or
   * a NaN/+Infinity floor (nothing changes)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  updateWithFloorAt(nowMs: number, key: string | Uint8Array, delta: number, floor: number): void {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    this.updateWithFloorNow(key, delta, floor)
  }

  /** updateWithFloor at `hot[SLOT_NOW]`. */
  private updateWithFloorNow(key: string | Uint8Array, delta: number, floor: number): void {
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    if (typeof floor !== 'number' || (!(floor < Infinity) && floor !== -Infinity)) checkFloor(floor)
    this.locate(key)
    const hot = this.hot
    hot[SLOT_DELTA] = delta
    hot[SLOT_FLOOR] = floor
    this.addAllWithFloor()
  }

  /**
   * The store's conditional consume in one pass over the key's cells: decay them to now
   * (written back), and if and only if `aggregate + delta ≤ limit` (a NaN never admits) add
   * `delta` to all L cells (clamped) and leave the aggregate after the write in
   * {@link Sketch.lastAggregate}. Unlike {@link Sketch.tryUpdate}, a denial never throws, and
   * the aggregate it decided on is returned.
   * @returns the aggregate before the delta (decayed to now)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a non-finite delta that would be applied (nothing is added)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   * @internal
   */
  consumeTracked(key: string | Uint8Array, delta: number, limit: number): number {
    this.locate(key)
    const hot = this.hot
    hot[SLOT_NOW] = readClock(this.clock)
    this.aggregate()
    const a = hot[SLOT_AGGREGATE]
    if (!(a + delta <= limit)) return a
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    hot[SLOT_DELTA] = delta
    this.addAllTracked() // the cells were just decayed to now by aggregate()
    return a
  }

  /**
   * {@link Sketch.consumeTracked} at time `nowMs`.
   * @internal
   */
  consumeTrackedAt(nowMs: number, key: string | Uint8Array, delta: number, limit: number): number {
    this.hot[SLOT_NOW] = timeOf(nowMs)
    this.consumeTrackedNow(key, delta, limit)
    return this.hot[SLOT_AGGREGATE]
  }

  /** consumeTracked at `hot[SLOT_NOW]`; the aggregate it decided on stays in `hot[SLOT_AGGREGATE]`. */
  private consumeTrackedNow(key: string | Uint8Array, delta: number, limit: number): void {
    this.locate(key)
    const hot = this.hot
    this.aggregate()
    if (!(hot[SLOT_AGGREGATE] + delta <= limit)) return
    if (!Number.isFinite(delta)) checkFinite('delta', delta)
    hot[SLOT_DELTA] = delta
    this.addAllTracked() // the cells were just decayed to now by aggregate(); writes SLOT_LAST only
  }

  /**
   * The aggregate of the cells written by the last `updateAndEstimate` or admitting
   * tracked write (NaN before any): lets the Rotator read the deciding generation's score
   * after an admit without hashing the key again.
   * @internal
   */
  get lastAggregate(): number {
    return this.hot[SLOT_LAST]
  }

  /**
   * The key's aggregate with the per-level detail, for debugging (allocates).
   * {@link Sketch.estimateDetailedAt} at the clock's time.
   * @returns `{ value, scores, cells }` (see {@link SketchDetail})
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  estimateDetailed(key: string | Uint8Array): SketchDetail {
    return this.estimateDetailedAt(readClock(this.clock), key)
  }

  /**
   * {@link Sketch.estimateDetailed} at time `nowMs` (see {@link Sketch.updateAt} for the time).
   * @returns `{ value, scores, cells }` (see {@link SketchDetail})
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  estimateDetailedAt(nowMs: number, key: string | Uint8Array): SketchDetail {
    const value = this.estimateAt(nowMs, key)
    const scores: number[] = []
    const cells: number[] = []
    for (let i = 0; i < this.levels; i++) {
      cells.push(this.idx[i])
      scores.push(this.cells[CELL_STRIDE * (i * this.cellsPerLevel + this.idx[i]) + CELL_SCORE])
    }
    return { value, scores, cells }
  }

  /**
   * Hash the key and fill `idx` with its cell index in each level: Kirsch–Mitzenmacher
   * `(h1 + i·h2) mod M` with h1 = low 32 bits, h2 = high 32 bits | 1 (spec/hashing.md).
   * Computed incrementally as `c_0 = h1 mod M`, `c_{i+1} = (c_i + h2 mod M) mod M`, which
   * is the same integer and avoids a float64 `%` per level.
   */
  protected locate(key: string | Uint8Array): void {
    const hasher = this.hasher
    hasher.hashKey(key)
    const h1 = hasher.hashLo >>> 0
    const h2 = (hasher.hashHi | 1) >>> 0
    const M = this.cellsPerLevel
    const M2 = 2 * M
    const idx = this.idx
    const invM = this.hot[SLOT_INV_M]
    let c = modByReciprocal(h1, M, invM)
    let step = modByReciprocal(h2, M, invM)
    if (step === 0) step = this.zeroStep
    const cells = this.cells
    // Each level's cell is read here, back to back, before any is worked on: the L cache
    // misses (one line per level: a cell's score and time share it) then overlap instead
    // of being taken one level at a time behind each level's decay arithmetic. The sum
    // only keeps the loads from being removed as dead code.
    const pos = this.pos
    idx[0] = c
    pos[0] = 2 * c
    let z = cells[2 * c]
    for (let i = 1, base = M2; i < this.levels; i++, base += M2) {
      c += step
      if (c >= M) c -= M
      idx[i] = c
      const p = base + 2 * c
      pos[i] = p
      z += cells[p]
    }
    this.hot[SLOT_SINK] = z
    if (this.lazy !== undefined) this.foldLocated()
  }

  /** A lazy fold in progress: fold the chunk of each located cell not folded yet (before the operation reads or writes it). */
  private foldLocated(): void {
    const f = this.lazy!
    const idx = this.idx
    const M = this.cellsPerLevel
    for (let i = 0; i < this.levels; i++) {
      const c = (i * M + idx[i]) >>> f.shift
      if (c >= f.next && f.done[c] === 0) this.foldChunk(f, c)
    }
  }

  /**
   * Fold chunk `c` (cells, and the delta baseline if any) from the smaller sketch, for an
   * operation: a plain loop over its 2 × chunk doubles, allocating nothing on the request's path.
   */
  private foldChunk(f: LazyFold, c: number): void {
    const p0 = c << f.shift
    const q0 = this.foldSource(f, p0)
    const n = CELL_STRIDE << f.shift
    const to = CELL_STRIDE * p0
    const at = CELL_STRIDE * q0
    const src = f.from
    const dst = this.cells
    for (let i = 0; i < n; i++) dst[to + i] = src[at + i]
    const base = f.baseline
    if (base !== undefined) {
      const bsrc = f.baseFrom!
      for (let i = 0; i < n; i++) base[to + i] = bsrc[at + i]
    }
    f.done[c] = 1
    this.foldedChunk(q0, p0, 1 << f.shift)
  }

  /** The smaller sketch's cell that this one's cell `p` (level-major) folds from: level·M + (j mod M). */
  private foldSource(f: LazyFold, p: number): number {
    const M2 = this.cellsPerLevel
    const level = Math.floor(p / M2)
    return level * f.fromCells + ((p - level * M2) % f.fromCells)
  }

  /**
   * Fold the chunks [c0, c1) (none folded yet, their sources contiguous) for the sweep: with
   * `native`, one native copy of the run's cells (and baseline) through one view made for it (a
   * slice's chunks are one run unless an operation folded one or j mod M wraps); without, a plain
   * loop, allocating nothing (a sweep on a request's path: the Redis sync store's calls). Tried in the `fold
   * pause` rows of `npm run bench -- rotator` (2026-12-08, one run each): a plain loop read
   * 0.330 ms for the longest slice at the default shape, where native copies read 0.030; views
   * made for every chunk at the fold's start (8,192 for a 2^19-cell generation of 4 levels, as
   * before) put the check at 4.70 ms, about as much as the larger generation's allocation
   * (spec/rotator.md §1, _Bounded pause_).
   */
  private foldRun(f: LazyFold, c0: number, c1: number, native: boolean): void {
    const p0 = c0 << f.shift
    const q0 = this.foldSource(f, p0)
    const cells = (c1 - c0) << f.shift
    const to = CELL_STRIDE * p0
    const at = CELL_STRIDE * q0
    const n = CELL_STRIDE * cells
    const base = f.baseline
    if (native) {
      this.cells.set(f.from.subarray(at, at + n), to)
      if (base !== undefined) base.set(f.baseFrom!.subarray(at, at + n), to)
    } else {
      const src = f.from
      const dst = this.cells
      for (let i = 0; i < n; i++) dst[to + i] = src[at + i]
      if (base !== undefined) {
        const bsrc = f.baseFrom!
        for (let i = 0; i < n; i++) base[to + i] = bsrc[at + i]
      }
    }
    for (let c = c0; c < c1; c++) f.done[c] = 1
    this.foldedChunk(q0, p0, cells)
  }

  /**
   * Called after a lazy fold copied a chunk: `cells` cells from the smaller sketch's cell
   * `fromCell` to this one's `toCell` (a subclass folds what it keeps beside the cells alike).
   * @internal
   */
  protected foldedChunk(fromCell: number, toCell: number, cells: number): void {
    void fromCell
    void toCell
    void cells
  }

  /**
   * A lazy fold in progress: fold the chunk of cell `p` (level-major index) now unless it is folded already.
   * @internal
   */
  foldChunkOf(p: number): void {
    const f = this.lazy
    if (f === undefined) return
    const c = p >>> f.shift
    if (c >= f.next && f.done[c] === 0) this.foldChunk(f, c)
  }

  /**
   * A lazy fold's sweep: from where it stands, the chunks of up to `budgetCells` cells (one at
   * least), each folded unless an operation folded it already; the last one ends the fold.
   * @param native copy each run of chunks natively, through a view made for it (a turn of the
   * event loop, off the request path); default false: a plain loop that allocates nothing
   * @returns the cells swept (0 when no fold is in progress)
   * @internal
   */
  foldSome(budgetCells: number, native = false): number {
    const f = this.lazy
    if (f === undefined) return 0
    const count = f.done.length
    const start = f.next
    const chunks = Math.max(1, Math.floor(budgetCells / (1 << f.shift)))
    const end = count - start > chunks ? start + chunks : count
    const chunk = 1 << f.shift
    // runs of chunks not folded yet whose sources follow each other: one native copy each
    for (let c = start; c < end;) {
      if (f.done[c] !== 0) {
        c++
        continue
      }
      let last = c + 1
      let q = this.foldSource(f, c << f.shift)
      while (last < end && f.done[last] === 0) {
        const next = this.foldSource(f, last << f.shift)
        if (next !== q + chunk) break
        q = next
        last++
      }
      this.foldRun(f, c, last, native)
      c = last
    }
    f.next = end
    if (end === count) this.lazy = undefined
    return (end - start) << f.shift
  }

  /**
   * Whether a lazy fold is in progress ({@link Sketch.foldLazilyFrom}).
   * @internal
   */
  get folding(): boolean {
    return this.lazy !== undefined
  }

  /** Finish a lazy fold in progress at once: every operation on all the cells (frames, merge, deltas) runs after it. */
  private finishFold(): void {
    if (this.lazy !== undefined) this.foldSome(Infinity)
  }

  /** For each of the located cells: decay to `hot[SLOT_NOW]`, add `hot[SLOT_DELTA]`, clamp to [lo, hi]. */
  private addAll(): void {
    const now = this.hot[SLOT_NOW]
    const delta = this.hot[SLOT_DELTA]
    const cells = this.cells
    const pos = this.pos
    const L = this.levels
    const hot = this.hot
    const lo = hot[SLOT_LO]
    const hi = hot[SLOT_HI]
    const kind = this.decayId
    const rate = this.hot[SLOT_RATE]
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      const t = cells[p + 1]
      if (now > t) {
        if (s !== 0) {
          // decay inlined (the arithmetic of applyDecay in decay.ts): no call per level on the hot path
          if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
          else if (kind === DECAY_LIN) {
            const step = rate * (now - t)
            s = s > 0 ? (s > step ? s - step : 0) : -s > step ? s + step : 0
          }
        }
        cells[p + 1] = now
      } else if (s === 0 && t === 0 && now > -Infinity) {
        // a never-touched cell (time 0) under a clock reading ≤ 0: take the reading, or the
        // score added now would not decay until the clock passes 0
        cells[p + 1] = now
      }
      s += delta
      if (s < lo) s = lo
      else if (s > hi) s = hi
      cells[p] = s
    }
  }

  /**
   * For each of the located cells: decay to `hot[SLOT_NOW]`, add `hot[SLOT_DELTA]`, raise
   * to at least `hot[SLOT_FLOOR]`, clamp to [lo, hi]. The loop of addAll plus a floor, written
   * out again: a shared loop would take the floor as an argument or test for it per cell,
   * and the plain update path is measured without either.
   */
  private addAllWithFloor(): void {
    const hot = this.hot
    const now = hot[SLOT_NOW]
    const delta = hot[SLOT_DELTA]
    const cells = this.cells
    const pos = this.pos
    const L = this.levels
    const lo = hot[SLOT_LO]
    const hi = hot[SLOT_HI]
    const kind = this.decayId
    const rate = hot[SLOT_RATE]
    const fl = hot[SLOT_FLOOR]
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      const t = cells[p + 1]
      if (now > t) {
        if (s !== 0) {
          // decay inlined (the arithmetic of applyDecay in decay.ts): no call per level on the hot path
          if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
          else if (kind === DECAY_LIN) {
            const step = rate * (now - t)
            s = s > 0 ? (s > step ? s - step : 0) : -s > step ? s + step : 0
          }
        }
        cells[p + 1] = now
      } else if (s === 0 && t === 0 && now > -Infinity) {
        // a never-touched cell (time 0) under a clock reading ≤ 0: take the reading, or the
        // score added now would not decay until the clock passes 0
        cells[p + 1] = now
      }
      s += delta
      if (s < fl) s = fl
      if (s < lo) s = lo
      else if (s > hi) s = hi
      cells[p] = s
    }
  }

  /**
   * For the located cells, already decayed to now (by `aggregate`): add `hot[SLOT_DELTA]`,
   * clamp to [lo, hi], and leave their aggregate in `hot[SLOT_LAST]` (read by
   * {@link Sketch.lastAggregate}). Kept apart from `addAll` so the plain update path stays
   * as small as before.
   */
  private addAllTracked(): void {
    const delta = this.hot[SLOT_DELTA]
    const cells = this.cells
    const pos = this.pos
    const L = this.levels
    const hot = this.hot
    const lo = hot[SLOT_LO]
    const hi = hot[SLOT_HI]
    const agg = this.aggId
    let acc = agg === AGG_MIN ? Infinity : agg === AGG_MAX ? -Infinity : 0
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      s += delta
      if (s < lo) s = lo
      else if (s > hi) s = hi
      cells[p] = s
      if (agg === AGG_MIN) {
        if (s < acc) acc = s
      } else if (agg === AGG_MAX) {
        if (s > acc) acc = s
      } else acc += s
    }
    // two stores, not one of a conditional: merged with mean()'s (tagged) result, acc would be
    // boxed on every call
    if (agg === AGG_MEAN) hot[SLOT_LAST] = this.mean(acc)
    else hot[SLOT_LAST] = acc
  }

  /**
   * The mean of the located cells given their sum, within [lo, hi] as spec/sketch.md
   * promises. Cells near ±Number.MAX_VALUE can sum to ±Infinity although their mean is in
   * [lo, hi]; then the cells (already decayed and written back) are summed again divided by
   * L first, and that sum, whose L roundings can still overflow or pass the largest cell
   * (3 × fl(MAX_VALUE / 3) rounds to Infinity), is clamped to [smallest, largest] cell,
   * where the exact mean lies. A finite `sum / L` is clamped to [lo, hi]: with L cells at
   * hi its rounding can land one ulp above hi.
   */
  private mean(sum: number): number {
    const L = this.levels
    const m = sum / L
    if (m - m === 0) {
      const hot = this.hot
      return m > hot[SLOT_HI] ? hot[SLOT_HI] : m < hot[SLOT_LO] ? hot[SLOT_LO] : m
    }
    const cells = this.cells
    const pos = this.pos
    let acc = 0
    let least = Infinity
    let most = -Infinity
    for (let i = 0; i < L; i++) {
      const s = cells[pos[i]]
      acc += s / L
      if (s < least) least = s
      if (s > most) most = s
    }
    return acc > most ? most : acc < least ? least : acc
  }

  /** Decay the located cells to `hot[SLOT_NOW]` (written back) and leave their aggregate in `hot[SLOT_AGGREGATE]`. */
  private aggregate(): void {
    const now = this.hot[SLOT_NOW]
    const cells = this.cells
    const pos = this.pos
    const L = this.levels
    const agg = this.aggId
    const kind = this.decayId
    const rate = this.hot[SLOT_RATE]
    let acc = agg === AGG_MIN ? Infinity : agg === AGG_MAX ? -Infinity : 0
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      const t = cells[p + 1]
      if (now > t) {
        if (s !== 0) {
          if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
          else if (kind === DECAY_LIN) {
            const step = rate * (now - t)
            s = s > 0 ? (s > step ? s - step : 0) : -s > step ? s + step : 0
          }
          cells[p] = s
        }
        cells[p + 1] = now
      } else if (s === 0 && t === 0 && now > -Infinity) {
        // a never-touched cell (time 0) under a clock reading ≤ 0: take the reading, or the
        // score added now would not decay until the clock passes 0
        cells[p + 1] = now
      }
      if (agg === AGG_MIN) {
        if (s < acc) acc = s
      } else if (agg === AGG_MAX) {
        if (s > acc) acc = s
      } else acc += s
    }
    if (agg === AGG_MEAN) this.hot[SLOT_AGGREGATE] = this.mean(acc)
    else this.hot[SLOT_AGGREGATE] = acc
  }

  // Serialization, merge and replica deltas. Thin methods: the logic lives in
  // sketch-codec.ts, merge.ts and sketch-delta.ts, so the hot path above stays untouched.

  /**
   * The sketch as a binary frame (family 1, version 1; byte table in `spec/format.md`):
   * shape, seed, the writer's wall-clock and clock times, and every cell. Size
   * 40 + 52 + 16·L·M bytes. Restore with {@link Sketch.deserialize}.
   * {@link Sketch.serializeAt} at the clock's time and `Date.now()`.
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity (nothing changes)
   */
  serialize(): Uint8Array {
    return this.serializeAt(finiteNow(this.clock, 'serialize'), wallClockMs())
  }

  /**
   * {@link Sketch.serialize} stamped with explicit times: the same state and times give
   * the same bytes (golden files, tests). The cells are written as they are; a reader ages
   * them by `nowMs − cell time` plus the downtime after `wallMs`.
   * @param nowMs the writer's time in ms on this sketch's clock, finite
   * @param wallMs the writer's wall-clock time in ms (Unix epoch), finite
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` naming a non-finite time
   */
  serializeAt(nowMs: number, wallMs: number): Uint8Array {
    this.finishFold()
    return encodeSketch(this, writerStamp(nowMs, wallMs), interleavedView(this.cells), false)
  }

  /**
   * Rebuild a sketch from {@link Sketch.serialize}'s frame. Cell times are mapped onto the
   * reader's clock so that every cell has aged by the time since serialization plus the
   * downtime `max(0, wallMs − writer's wallMs)` (`spec/rotator.md`, "Time across processes"):
   * scores keep decaying across a restart. Every field is checked first; nothing
   * half-loaded is returned. The delta baseline of the result is zero (see
   * {@link Sketch.markSynced}).
   * @param bytes the frame
   * @param options `clock` (default system clock), `wallMs` (default `Date.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_TRUNCATED`, `_MAGIC`, `_CHECKSUM`, `_FAMILY`,
   * `_VERSION`, `_INVALID` (a bad field, a delta frame, or a size that does not match);
   * `ERR_GRUDGE_OPTION_INVALID` for a bad or unknown option
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the reader's clock reads NaN or ±Infinity
   */
  static deserialize(bytes: Uint8Array, options?: DeserializeOptions): Sketch {
    checkKnownOptions(options, DESERIALIZE_OPTION_KEYS)
    const d = decodeSketch(bytes, false, options)
    const sketch = new Sketch({ ...d.shape, clock: d.clock })
    interleaveInto(sketch.cells, d.cells.scores, d.cells.touched)
    return sketch
  }

  /**
   * Whether {@link Sketch.merge} would accept `other`: another Sketch (not this one) with the
   * same levels, cells per level, decay (kind and rate), lo, hi, aggregator, hasher and seed.
   */
  isCompatible(other: Sketch): boolean {
    return other instanceof Sketch && other !== this && incompatibility(this, other) === undefined
  }

  /**
   * Add `other`'s scores into this sketch: every cell of both decayed to now (each on its
   * own clock), `other`'s added, clamped to [lo, hi]; `other` is not changed. Exact for
   * exponential and no decay while no cell reaches a bound; for linear decay it charges
   * `other`'s current debt to this sketch at the merge instant (`spec/rotator.md`).
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_SELF` when `other === this`;
   * `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming the first difference
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when either clock reads NaN or ±Infinity (nothing changes)
   */
  merge(other: Sketch): void {
    if (!(other instanceof Sketch)) {
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        'sketch: expected a Sketch to merge, received another value',
      )
    }
    assertMergeable('sketch', this, other)
    const now = finiteNow(this.clock, 'merge')
    const otherNow = finiteNow(other.clock, "merge (the other sketch's clock)")
    this.finishFold()
    other.finishFold()
    addCells(this, this.cells, now, interleavedView(other.cells), otherNow, false)
  }

  /**
   * What this replica added since its last sync: per cell `view − baseline` at now; then
   * the baseline becomes the view. The baseline starts at zero and also absorbs every
   * applied delta, so a delta never carries what came from other replicas and repeated
   * syncs never double count (algebra in `spec/rotator.md`). O(L·M); costs nothing on
   * the update path (the first call allocates a 16·L·M-byte baseline).
   * @returns the delta; ship it with `delta.serialize()`
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity (nothing changes)
   */
  takeDelta(): SketchDelta {
    this.finishFold()
    return takeDeltaOf(this, this.cells)
  }

  /**
   * Add another replica's delta (object or serialized frame) into this sketch's view and
   * its baseline. Never apply a replica's delta to itself.
   * @param delta a {@link SketchDelta} or the bytes of `delta.serialize()`
   * @param options for bytes: `clock` (default this sketch's clock), `wallMs`
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE`; `ERR_GRUDGE_FORMAT_*` for bad bytes
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when this sketch's or the delta's clock reads NaN or ±Infinity (nothing changes)
   */
  applyDelta(delta: SketchDelta | Uint8Array, options?: DeserializeOptions): void {
    const d =
      delta instanceof Uint8Array
        ? SketchDelta.deserialize(delta, { ...options, clock: options?.clock ?? this.clock })
        : delta
    this.finishFold()
    applyDeltaOf(this, this.cells, d)
  }

  /**
   * Set the delta baseline to the current view: everything held now counts as known to
   * the fleet (call after loading a fleet snapshot, so it is not shipped back).
   */
  markSynced(): void {
    this.finishFold()
    markSyncedOf(this, this.cells)
  }

  /**
   * The seed and a view of the live cells, for a containing structure's frame writer (the Rotator).
   * @internal
   */
  cellsForFrame(): { seed: Uint8Array; cells: CellView } {
    this.finishFold()
    return { seed: this.hasher.seed, cells: interleavedView(this.cells) }
  }

  /**
   * Fill this (empty) sketch with `smaller`'s cells folded out: with M' = this sketch's cells
   * per level a multiple k of smaller's M, cell j of level i becomes a copy (score and time)
   * of smaller's cell j mod M of level i, so each level is smaller's level repeated k times.
   * Under one seed a key's index at level i is `(h1 + i·h2) mod M'`, and reducing it mod M
   * gives its index in `smaller` (M divides M'; the step replacement for h2 ≡ 0 never applies
   * when M is a power of two, h2 being odd), so every key reads here at least what it read
   * there, and what it will add lands on a cell shared by 1/k of the keys it shared with
   * before (spec/rotator.md §1 "Self-sizing", _Early growth by folding_). The delta baseline,
   * if any, is folded alike. O(L·M′). The caller guarantees the same hasher (give this sketch
   * `smaller.hasher`).
   * @internal
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` when the levels differ, M is not a
   * power of two or does not divide M', or the decay, bounds or aggregator differ
   */
  foldFrom(smaller: Sketch): void {
    this.checkFold(smaller)
    smaller.finishFold()
    foldLevels(smaller.cells, this.cells, this.levels, smaller.cellsPerLevel, this.cellsPerLevel)
    // the delta baseline folds alike: what was synced stays synced, or the next delta would ship it again
    foldBaselineOf(smaller, this, this.levels, smaller.cellsPerLevel, this.cellsPerLevel)
  }

  /**
   * {@link Sketch.foldFrom} made lazily: nothing is copied now; every keyed operation first
   * folds the chunks of its key's cells, {@link Sketch.foldSome} sweeps the rest a slice at a
   * time, and every operation on all the cells (frames, merge, deltas) first finishes the fold.
   * Every cell reads and is written as after `foldFrom` (spec/rotator.md §1, _Early growth by
   * folding_, _Cost_): the caller guarantees that nothing else reads or writes `smaller` from
   * now on (it replaces it), and the same hasher. The delta baseline, if any, folds alike,
   * chunk by chunk. O(L·M′ / chunk) now (a byte per chunk of this sketch), O(chunk) a chunk. Until
   * the fold ends the smaller sketch's cells (and its baseline) stay held, and
   * {@link Sketch.sizeBytes} counts them.
   * @param chunkCells the chunk's cells at most (a power of two; default `FOLD_CHUNK_CELLS`, 256):
   * the largest power of two dividing smaller's M at most this is used
   * @internal
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` as {@link Sketch.foldFrom}
   */
  foldLazilyFrom(smaller: Sketch, chunkCells: number = FOLD_CHUNK_CELLS): void {
    this.checkFold(smaller)
    smaller.finishFold()
    const M = smaller.cellsPerLevel
    const shift = 31 - Math.clz32(Math.min(M & -M, chunkCells))
    const b = lazyFoldBaselineOf(smaller, this, this.levels * this.cellsPerLevel)
    this.lazy = {
      fromCells: M,
      shift,
      from: smaller.cells,
      baseFrom: b?.from,
      baseline: b?.to,
      heldBytes: smaller.cells.byteLength + (b === undefined ? 0 : b.from.byteLength),
      done: new Uint8Array((this.levels * this.cellsPerLevel) >>> shift),
      next: 0,
    }
  }

  /**
   * The checks of a fold from `smaller` ({@link Sketch.foldFrom}).
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE`
   */
  private checkFold(smaller: Sketch): void {
    const M = smaller.cellsPerLevel
    const M2 = this.cellsPerLevel
    if (
      smaller.levels !== this.levels ||
      (M & (M - 1)) !== 0 ||
      M2 % M !== 0 ||
      smaller.decayId !== this.decayId ||
      smaller.ratePerMs !== this.ratePerMs ||
      smaller.lo !== this.lo ||
      smaller.hi !== this.hi ||
      smaller.aggId !== this.aggId
    ) {
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        `cannot fold ${smaller.levels} × ${M} cells into ${this.levels} × ${M2}: a fold needs the same levels, decay, bounds and aggregator, and a power-of-two cells per level dividing the larger`,
      )
    }
  }

  /**
   * Copy cells decoded and checked by a frame reader into this sketch.
   * @internal
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` when the lengths differ from L × M
   */
  loadCellsFromFrame(scores: Float64Array, touched: Float64Array): void {
    const n = this.levels * this.cellsPerLevel
    if (scores.length !== n || touched.length !== n) {
      throw new GrudgeError(
        'ERR_GRUDGE_FORMAT_INVALID',
        `cells: expected ${n} scores and times, received ${scores.length} and ${touched.length}`,
      )
    }
    // every cell is overwritten: nothing is left to fold
    this.lazy = undefined
    interleaveInto(this.cells, scores, touched)
  }
}

/**
 * `t`, or −Infinity when it is NaN or ±Infinity: a time that compares below every
 * last-touched time, so a broken clock decays nothing and stamps nothing (a NaN or
 * infinite stamp would freeze or poison the cell for every key hashing to it).
 */
function timeOf(t: number): number {
  return t - t === 0 ? t : -Infinity
}

/** The clock's time in ms as {@link timeOf} reads it, for the plain (clock-reading) forms. */
function readClock(clock: Clock): number {
  // the default clock by a direct call: monomorphic whatever other clocks the process uses
  const t = clock === systemClock ? systemNowMs() : clock.now()
  return t - t === 0 ? t : -Infinity
}

/**
 * Throw a coded RangeError for a non-finite number argument.
 * @internal
 * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE`
 */
export function checkFinite(name: string, value: number): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new GrudgeRangeError(
      'ERR_GRUDGE_VALUE_NOT_FINITE',
      `${name}: expected a finite number, received ${describeValue(value)}`,
    )
  }
}

/**
 * Throw the coded error for a bad `floor` of `updateWithFloor`: a non-number is a type
 * error (never coerced: `'5'`, `true` and `null` would otherwise compare as numbers, and a
 * BigInt would throw an uncoded TypeError when stored), NaN and +Infinity a range error.
 * @throws {GrudgeTypeError} `ERR_GRUDGE_OPTION_INVALID` for a non-number
 * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for NaN or +Infinity
 */
function checkFloor(floor: unknown): never {
  if (typeof floor !== 'number') {
    throw new GrudgeTypeError(
      'ERR_GRUDGE_OPTION_INVALID',
      `floor: expected a number (finite or −Infinity), received ${describeValue(floor)}`,
    )
  }
  throw new GrudgeRangeError(
    'ERR_GRUDGE_VALUE_NOT_FINITE',
    `floor: expected a finite number or −Infinity, received ${describeValue(floor)}`,
  )
}
