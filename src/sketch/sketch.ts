import { systemClock, systemNowMs, wallClockMs, type Clock } from '../clock.js'
import { GrudgeError, GrudgeRangeError, GrudgeTypeError, describeValue, invalidOption } from '../errors.js'
import { keyHashOf, resolveHasher, type Hasher } from '../hash/hasher.js'
import { modByReciprocal } from '../hash/indexes.js'
import { checkKnownOptions } from '../options.js'
import { finiteNow, writerStamp } from './clock-stamp.js'
import {
  CELL_BYTES,
  CELL_SCORE,
  CELL_STRIDE,
  EPOCH_HALF_RANGE,
  MAX_TICK,
  PackedCells,
  cellBounds,
  packedView,
  roundUpF32,
  type CellView,
} from './cells.js'
import { applyDecay, checkDecay } from './decay.js'
import { addCells, assertMergeable } from './merge.js'
import {
  AGGREGATOR_IDS,
  DESERIALIZE_OPTION_KEYS,
  MAX_CELLS,
  MAX_CELLS_PER_LEVEL,
  MAX_LEVELS,
  SKETCH_OPTION_KEYS,
  incompatibility,
  type Aggregator,
  type Decay,
  type DeserializeOptions,
  type SketchOptions,
} from './shape.js'
import { decodeSketch, encodeSketch } from './sketch-codec.js'
import { SketchDelta, applyDeltaOf, checkDeltaFor, markSyncedOf, takeDeltaOf } from './sketch-delta.js'

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
/** Lower clamp bound: `lo` as a cell holds it (`cellBounds` in cells.ts). */
const SLOT_LO = 0
/** Upper clamp bound: `hi` as a cell holds it (`cellBounds` in cells.ts). */
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
/** The epoch in ms: cell times count ticks (ms) from it. NaN until the first time is read. */
const SLOT_EPOCH = 10
/**
 * The operation's time as a tick after the epoch, left by `rebaseFor` for a time that was
 * out of range: 2^31 after a move of the epoch, or −1 for a time behind every cell.
 */
const SLOT_TICK = 11

/**
 * A constant-memory sketch of decaying scores over an unbounded key space: L levels × M
 * cells, each cell a score and a last-touched time (a Float32 and a Uint32 in one 8-byte
 * cell: one cache line per level, see `cells.ts`). A key maps to one cell
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
   * The cells' scores, level-major (`cells.ts`): cell p = i·M + j (level i, cell j) has its
   * score at `2p`; `words`, a view of the same buffer, has its last-touched time at
   * `2p + 1` in ticks (ms) after the epoch `hot[SLOT_EPOCH]`.
   */
  protected readonly cells: Float32Array
  /**
   * The cells' buffer as 32-bit words: a cell's time at `2p + 1`, its score's bits at `2p`.
   * @internal
   */
  protected readonly words: Uint32Array
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
  /**
   * Whether a clock reading was NaN or ±Infinity before the first time was read (the epoch
   * still NaN): an update may then have added to a cell without a time, which the first
   * time stamps (see {@link Sketch.setFirstEpoch}).
   */
  private brokenBeforeEpoch = false

  /**
   * @param options see {@link SketchOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option: levels or
   * cellsPerLevel not a positive integer (or L×M above 2^31), lo/hi not finite or not
   * `lo ≤ 0 ≤ hi, lo < hi`, unknown aggregator, hasher or decay, bad seed or clock, or a
   * key that is not an option of {@link SketchOptions} (the message suggests the closest name)
   */
  constructor(options: SketchOptions = {}) {
    checkKnownOptions(options, SKETCH_OPTION_KEYS)
    const levels = options.levels ?? 4
    const cells = options.cellsPerLevel ?? 1024
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
    try {
      const buffer = new ArrayBuffer(CELL_BYTES * levels * cells)
      this.cells = new Float32Array(buffer)
      this.words = new Uint32Array(buffer)
    } catch (err) {
      // the memory is not there (within MAX_CELLS, a machine may still refuse 8 GiB)
      if (!(err instanceof RangeError)) throw err
      invalidOption(
        'cellsPerLevel',
        `a shape this process can allocate (levels × cellsPerLevel × ${CELL_BYTES} B = ${((levels * cells * CELL_BYTES) / 2 ** 30).toFixed(1)} GiB was refused: ${err.message})`,
        cells,
      )
    }
    this.aggId = AGGREGATOR_IDS[aggregator]
    this.decayId = decay.kind === 'exponential' ? DECAY_EXP : decay.kind === 'linear' ? DECAY_LIN : DECAY_NONE
    this.ratePerMs = decay.ratePerSecond / 1000
    this.idx = new Uint32Array(levels)
    this.pos = new Uint32Array(levels)
    const hot = new Float64Array(SLOT_TICK + 1)
    const bounds = cellBounds(lo, hi)
    hot[SLOT_LO] = bounds.lo
    hot[SLOT_HI] = bounds.hi
    hot[SLOT_RATE] = this.ratePerMs
    hot[SLOT_LAST] = NaN
    hot[SLOT_FLOOR] = -Infinity
    hot[SLOT_INV_M] = 1 / cells
    hot[SLOT_AGGREGATE] = NaN
    hot[SLOT_EPOCH] = NaN
    this.hot = hot
  }

  /** Memory held by the cells in bytes: L × M × 8 (a Float32 score and a Uint32 time per cell). */
  sizeBytes(): number {
    return this.levels * this.cellsPerLevel * CELL_BYTES
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
   * The key's aggregate score now (its cells decayed to now; a read writes nothing back).
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
   * burst of `limit`. A denial writes nothing.
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
   * (applied by the write, a denial writes nothing), and if and only if `aggregate + delta ≤ limit` (a NaN never admits) add
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
      scores.push(this.decayedLocated(i)) // the read stored nothing: each level decayed as it saw it
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
  }

  /** For each of the located cells: decay to `hot[SLOT_NOW]`, add `hot[SLOT_DELTA]`, clamp to [lo, hi]. */
  private addAll(): void {
    const hot = this.hot
    // The time as a tick after the epoch (cells.ts), computed in each cell loop, in as few
    // bytecodes as it takes: a call of its own spends V8's inlining
    // budget, and updateAndEstimate then boxes its result (test/sketch/alloc.test.ts). An
    // integer in [0, 2^32) is a tick in range (now >>> 0 === now); anything else (a
    // fractional ms, a time out of range, NaN before the first time) takes rebaseFor.
    // Slots 10 and 11 are SLOT_EPOCH and SLOT_TICK written as numbers: each read of a
    // module constant costs this function 6 bytecodes of hole check, and these 12 keep
    // updateAndEstimate within V8's inlining budget (measured with --trace-turbo-inlining:
    // 663 inlined bytecodes boxed its result, 651 did not; test/sketch/alloc.test.ts).
    let now = hot[SLOT_NOW] - hot[10]
    if (now >>> 0 !== now) {
      this.rebaseFor()
      now = hot[11]
    }
    const delta = hot[SLOT_DELTA]
    const cells = this.cells
    const words = this.words
    const pos = this.pos
    const L = this.levels
    const lo = hot[SLOT_LO]
    const hi = hot[SLOT_HI]
    const kind = this.decayId
    const rate = hot[SLOT_RATE]
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      const t = words[p + 1]
      if (now > t) {
        if (s !== 0) {
          // decay inlined (the arithmetic of applyDecay in decay.ts): no call per level on the hot path
          if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
          else if (kind === DECAY_LIN) {
            const step = rate * (now - t)
            s = s > step ? s - step : s < -step ? s + step : 0 // toward 0 by step, never across it
          }
        }
        words[p + 1] = now
      }
      s += delta
      if (s < lo) s = lo
      else if (s > hi) s = hi
      // stored rounded up to a Float32 (cells.ts): never below the computed score
      cells[p] = s
      const f = cells[p]
      if (f < s) words[p] += f < 0 ? -1 : 1 // the next Float32 up (from +0: the smallest subnormal)
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
    let now = hot[SLOT_NOW] - hot[SLOT_EPOCH] // a tick, as in addAll
    if (now >>> 0 !== now) {
      this.rebaseFor()
      now = hot[SLOT_TICK]
    }
    const delta = hot[SLOT_DELTA]
    const cells = this.cells
    const words = this.words
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
      const t = words[p + 1]
      if (now > t) {
        if (s !== 0) {
          // decay inlined (the arithmetic of applyDecay in decay.ts): no call per level on the hot path
          if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
          else if (kind === DECAY_LIN) {
            const step = rate * (now - t)
            s = s > step ? s - step : s < -step ? s + step : 0 // toward 0 by step, never across it
          }
        }
        words[p + 1] = now
      }
      s += delta
      if (s < fl) s = fl
      if (s < lo) s = lo
      else if (s > hi) s = hi
      // stored rounded up to a Float32 (cells.ts): never below the computed score
      cells[p] = s
      const f = cells[p]
      if (f < s) words[p] += f < 0 ? -1 : 1 // the next Float32 up (from +0: the smallest subnormal)
    }
  }

  /**
   * For the located cells, already decayed to now (by `aggregate`, whose tick it stamps on a
   * cell whose time that read kept): add `hot[SLOT_DELTA]`,
   * clamp to [lo, hi], and leave their aggregate in `hot[SLOT_LAST]` (read by
   * {@link Sketch.lastAggregate}). Kept apart from `addAll` so the plain update path stays
   * as small as before.
   */
  private addAllTracked(): void {
    const now = this.hot[SLOT_TICK] // aggregate()'s tick: it may have left a cell's time as it was
    const delta = this.hot[SLOT_DELTA]
    const cells = this.cells
    const pos = this.pos
    const L = this.levels
    const hot = this.hot
    const lo = hot[SLOT_LO]
    const hi = hot[SLOT_HI]
    const agg = this.aggId
    let acc = agg === AGG_MIN ? Infinity : agg === AGG_MAX ? -Infinity : 0
    const words = this.words
    const kind = this.decayId
    const rate = hot[SLOT_RATE]
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      const t = words[p + 1]
      if (now > t) {
        // aggregate() left the decay to this write (a read never writes back)
        if (s !== 0) {
          if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
          else if (kind === DECAY_LIN) {
            const step = rate * (now - t)
            s = s > step ? s - step : s < -step ? s + step : 0 // toward 0 by step, never across it
          }
        }
        words[p + 1] = now // the delta is added at now
      }
      s += delta
      if (s < lo) s = lo
      else if (s > hi) s = hi
      // stored rounded up to a Float32 (cells.ts); the aggregate is of what is stored
      cells[p] = s
      const f = cells[p]
      if (f < s) words[p] += f < 0 ? -1 : 1 // the next Float32 up (from +0: the smallest subnormal)
      s = cells[p]
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
   * [lo, hi]; then the stored cells are summed again divided by
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

  /**
   * Leave the aggregate of the located cells decayed to `hot[SLOT_NOW]` in `hot[SLOT_AGGREGATE]`,
   * and the read's tick in `hot[SLOT_TICK]`. Writes no cell (a read never stores, spec/sketch.md §2).
   */
  private aggregate(): void {
    const hot = this.hot
    let now = hot[SLOT_NOW] - hot[SLOT_EPOCH] // a tick, as in addAll
    if (now >>> 0 !== now) {
      this.rebaseFor()
      now = hot[SLOT_TICK]
    }
    const cells = this.cells
    const words = this.words
    const pos = this.pos
    const L = this.levels
    const agg = this.aggId
    const kind = this.decayId
    const rate = this.hot[SLOT_RATE]
    hot[SLOT_TICK] = now // for addAllTracked, which may follow
    let acc = agg === AGG_MIN ? Infinity : agg === AGG_MAX ? -Infinity : 0
    for (let i = 0; i < L; i++) {
      const p = pos[i]
      let s = cells[p]
      const t = words[p + 1]
      if (now > t && s !== 0) {
        // A read never writes its decay back: storing rounds up to a Float32 (cells.ts), so a
        // written-back decay would carry up to an ulp more each time, and a client polling while
        // refused would still be refused when its Retry-After runs out (test/plugins/
        // fastify.test.ts, "admitted exactly when the debt has drained enough"). The cell keeps
        // its score and time; the read uses the float64 decay of them, and the next write
        // stores the decayed value (spec/sketch.md §2).
        if (kind === DECAY_EXP) s *= Math.exp(-rate * (now - t))
        else if (kind === DECAY_LIN) {
          const step = rate * (now - t)
          s = s > step ? s - step : s < -step ? s + step : 0 // toward 0 by step, never across it
        }
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
   * The sketch as a binary frame (family 1, version 2; byte table in `spec/format.md`):
   * shape, seed, the writer's wall-clock and clock times, the epoch and every 8-byte cell
   * as it is held. Size 40 + 52 + 8 + 8·L·M bytes (version 1 frames, 16·L·M, still load). Restore with {@link Sketch.deserialize}.
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
    return encodeSketch(this, writerStamp(nowMs, wallMs), this.cellView(), false)
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
    sketch.loadCells(d.cells.scores, d.cells.touched, d.cells.epochMs)
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
    const otherNow = timeOf(finiteNow(other.clock, "merge (the other sketch's clock)"))
    const t = this.coldNow(now)
    addCells(this, this.cellStore(), t, other.cellView(), otherNow, false)
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
    const t = this.coldNow(finiteNow(this.clock, 'takeDelta'))
    return takeDeltaOf(this, this.cellStore(), t)
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
    checkDeltaFor(this, d)
    const now = finiteNow(this.clock, 'applyDelta')
    const srcNow = timeOf(finiteNow(d.clock, "applyDelta (the delta's clock)"))
    const t = this.coldNow(now) // before cellStore(): it may set or move the epoch
    applyDeltaOf(this, this.cellStore(), t, d, srcNow)
  }

  /**
   * Set the delta baseline to the current view: everything held now counts as known to
   * the fleet (call after loading a fleet snapshot, so it is not shipped back).
   */
  markSynced(): void {
    markSyncedOf(this, this.cellStore())
  }

  /**
   * The seed and a view of the live cells, for a containing structure's frame writer (the Rotator).
   * @internal
   */
  cellsForFrame(): { seed: Uint8Array; cells: CellView } {
    return { seed: this.hasher.seed, cells: this.cellView() }
  }

  /**
   * Copy cells decoded and checked by a frame reader into this sketch.
   * @param epochMs the frame's epoch on this clock, when it gave one (`DecodedCells.epochMs`)
   * @internal
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` when the lengths differ from L × M
   */
  loadCellsFromFrame(scores: Float64Array, touched: Float64Array, epochMs?: number): void {
    const n = this.levels * this.cellsPerLevel
    if (scores.length !== n || touched.length !== n) {
      throw new GrudgeError(
        'ERR_GRUDGE_FORMAT_INVALID',
        `cells: expected ${n} scores and times, received ${scores.length} and ${touched.length}`,
      )
    }
    this.loadCells(scores, touched, epochMs)
  }

  // Time in ticks. A cell holds its time as a Uint32 count of ms after the sketch's epoch
  // (hot[SLOT_EPOCH], NaN until the first time is read): spec/sketch.md §2 "Time".

  /**
   * For a cell loop whose time (`hot[SLOT_NOW]`, ms) is not a whole tick in the cells'
   * range, leave its tick in `hot[SLOT_TICK]`: a time in range is floored to whole ms (a
   * clock with fractional ms, such as the default one, takes this call on every operation:
   * no allocation, a few ns). The first time read sets the epoch 2^31 ms before it (nothing
   * to move: every cell is 0, or was added to under a broken reading, {@link Sketch.setFirstEpoch}). A time more than 2^32 − 1 ms after the epoch moves it to 2^31
   * ms before that time (the time's tick is then 2^31). A time before the epoch, or NaN or
   * ±Infinity, is behind every cell (−1): it decays nothing and stamps nothing, as time
   * gone backwards does (spec/sketch.md §3, §4); the epoch never moves back, so every
   * reading within 2^31 ms behind the latest move or first reading stays in range.
   */
  private rebaseFor(): void {
    const hot = this.hot
    const t = hot[SLOT_NOW]
    hot[SLOT_TICK] = -1
    const epoch = hot[SLOT_EPOCH]
    if (!(t - t === 0)) {
      if (epoch !== epoch) this.brokenBeforeEpoch = true
      return
    }
    const n = timeOf(t)
    const d = n - epoch
    if (d >= 0 && d <= MAX_TICK) {
      hot[SLOT_TICK] = d
      return
    }
    const next = n - EPOCH_HALF_RANGE
    if (epoch !== epoch) this.setFirstEpoch(next)
    else if (n < epoch) return
    else this.rebase(next)
    hot[SLOT_TICK] = EPOCH_HALF_RANGE
  }

  /**
   * Set the epoch at the first time read, 2^31 ms before it. Every cell is then at tick 0, a
   * time in the past: right for a never-touched cell (score 0, nothing to decay), wrong for one
   * an update added to under a NaN or ±Infinity reading before (no time has passed for it,
   * spec/sketch.md §3: 2^31 ms of decay would wipe it). Those take the first time, tick 2^31:
   * an O(L·M) pass, only after such a reading.
   */
  private setFirstEpoch(next: number): void {
    this.hot[SLOT_EPOCH] = next
    if (!this.brokenBeforeEpoch) return
    this.brokenBeforeEpoch = false
    const cells = this.cells
    const words = this.words
    for (let q = 0; q < cells.length; q += CELL_STRIDE) if (cells[q] !== 0) words[q + 1] = EPOCH_HALF_RANGE
  }

  /**
   * Count every cell's time from epoch `next` (ms) instead: a cell older than `next` is
   * decayed to it (the decay it is owed by then, rounded up as any stored score) and takes
   * tick 0; the others keep their time (`next` is later than the old epoch, so they fit).
   * O(L·M), about once every 2^31 ms (24.9 days) under a steady clock.
   */
  private rebase(next: number): void {
    const hot = this.hot
    const cells = this.cells
    const words = this.words
    const epoch = hot[SLOT_EPOCH]
    for (let q = 0; q < cells.length; q += CELL_STRIDE) {
      const t = epoch + words[q + 1]
      if (t < next) {
        const s = cells[q]
        if (s !== 0) cells[q] = roundUpF32(applyDecay(s, this.decay, next - t))
        words[q + 1] = 0
      } else words[q + 1] = t - next
    }
    hot[SLOT_EPOCH] = next
  }

  /**
   * The time in ms a cold path (merge, replica deltas, a fleet sync) decays and stamps cells
   * at for the clock reading `nowMs` (finite): floored to whole ms like every operation's,
   * with the epoch moved first if it is out of range. Behind every cell when the epoch could
   * not reach it: then nothing is decayed or stamped.
   * @internal
   */
  protected coldNow(nowMs: number): number {
    const hot = this.hot
    const n = timeOf(nowMs)
    const d = n - hot[SLOT_EPOCH]
    if (!(d >= 0 && d <= MAX_TICK)) {
      hot[SLOT_NOW] = nowMs
      this.rebaseFor()
    }
    return n
  }

  /** The epoch in ms, 0 before the first time is read (every cell is then 0 at tick 0). */
  private epochOrZero(): number {
    const e = this.hot[SLOT_EPOCH]
    return e === e ? e : 0
  }

  /** The cells for a frame writer or another sketch's merge. No copy. */
  private cellView(): CellView {
    return packedView(this.cells, this.words, this.epochOrZero())
  }

  /**
   * The cells for the cold paths that write them (merge, replica deltas).
   * @internal
   */
  protected cellStore(): PackedCells {
    return new PackedCells(this.cells, this.words, this.epochOrZero(), this)
  }

  /**
   * Load cells given as float64 scores (in [lo, hi]) and times in ms on this sketch's clock
   * (a decoded frame, or the cells of another layout): scores rounded up to Float32 and
   * clamped to the cell bounds, times rounded up to whole ms. The epoch is the frame's
   * `epochMs` (rounded up) when every set cell's time is within 2^32 − 1 ms at or after it
   * (a frame of 8-byte cells restores its ticks), else 2^31 ms before the newest time; a cell
   * older than the epoch is decayed to it. Zero cells are never-touched.
   */
  private loadCells(scores: Float64Array, touched: Float64Array, epochMs?: number): void {
    const cells = this.cells
    const words = this.words
    const hot = this.hot
    let newest = -Infinity
    let oldest = Infinity
    for (let p = 0; p < scores.length; p++) {
      if (scores[p] === 0) continue
      if (touched[p] > newest) newest = touched[p]
      if (touched[p] < oldest) oldest = touched[p]
    }
    words.fill(0)
    this.brokenBeforeEpoch = false
    if (newest === -Infinity) {
      hot[SLOT_EPOCH] = NaN
      return
    }
    const hinted = epochMs === undefined ? NaN : Math.ceil(epochMs)
    const epoch =
      hinted <= Math.ceil(oldest) && Math.ceil(newest) - hinted <= MAX_TICK
        ? hinted
        : Math.ceil(newest) - EPOCH_HALF_RANGE
    const lo = hot[SLOT_LO]
    const hi = hot[SLOT_HI]
    for (let p = 0; p < scores.length; p++) {
      let s = scores[p]
      if (s === 0) continue
      const t = touched[p]
      if (t < epoch) s = applyDecay(s, this.decay, epoch - t)
      else words[CELL_STRIDE * p + 1] = Math.ceil(t) - epoch
      cells[CELL_STRIDE * p] = roundUpF32(s < lo ? lo : s > hi ? hi : s)
    }
    hot[SLOT_EPOCH] = epoch
  }

  /**
   * The last-touched time of cell p (level-major index i·M + j) in ms, for a subclass's
   * cold paths and tests (the epoch plus the cell's tick; 0 before the first time is read).
   * @internal
   */
  protected cellTime(p: number): number {
    return this.epochOrZero() + this.words[CELL_STRIDE * p + 1]
  }

  /**
   * The score of the last located key's cell in level `i` decayed (float64, nothing stored) to
   * the tick of the last read ({@link Sketch.estimate} and the checks of the conditional
   * writes): what that read saw in the level. For a subclass (a fleet sync's carried write).
   * @param i a level in [0, levels)
   * @internal
   */
  protected decayedLocated(i: number): number {
    const q = this.pos[i]
    return applyDecay(this.cells[q], this.decay, this.hot[SLOT_TICK] - this.words[q + 1])
  }

  /**
   * The score of cell p (level-major index i·M + j), for a subclass's cold paths (a fleet sync).
   * @internal
   */
  protected cellScore(p: number): number {
    return this.cells[CELL_STRIDE * p + CELL_SCORE]
  }

  /**
   * Overwrite cell p with score `s` (clamped to [lo, hi] as a cell holds it, rounded up) at
   * time `atMs`, a value {@link Sketch.coldNow} returned (a time behind every cell stamps the
   * epoch: later than the given time, so the score decays less, never more). For a
   * subclass's cold paths (a fleet sync).
   * @internal
   */
  protected putCell(p: number, s: number, atMs: number): void {
    const lo = this.hot[SLOT_LO]
    const hi = this.hot[SLOT_HI]
    this.cells[CELL_STRIDE * p + CELL_SCORE] = roundUpF32(s < lo ? lo : s > hi ? hi : s)
    const u = atMs - this.hot[SLOT_EPOCH]
    this.words[CELL_STRIDE * p + 1] = u > 0 ? u : 0
  }
}

/**
 * `t` in whole ms (truncated: floored for times after 1970, the Unix scale of the default
 * clock; a monotonic map, so no interval is decayed twice), or −Infinity when it is NaN or
 * ±Infinity: a time that compares below every last-touched time, so a broken clock decays
 * nothing and stamps nothing (a NaN or infinite stamp would freeze or poison the cell for
 * every key hashing to it). Cells count time in whole ms (spec/sketch.md §2 "Time"). The
 * one home of that rounding, with {@link readClock}'s copy (`t - (t % 1)`: fewer bytecodes
 * than Math.floor, for V8's inlining budget, see addAll).
 */
function timeOf(t: number): number {
  return t - t === 0 ? t - (t % 1) : -Infinity
}

/** The clock's time in ms as {@link timeOf} reads it, for the plain (clock-reading) forms. */
function readClock(clock: Clock): number {
  // the default clock by a direct call: monomorphic whatever other clocks the process uses
  const t = clock === systemClock ? systemNowMs() : clock.now()
  return t - t === 0 ? t - (t % 1) : -Infinity
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
