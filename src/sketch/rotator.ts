import {
  longPeriodTicker,
  systemClock,
  systemTicker,
  wallClockMs,
  type Clock,
  type Ticker,
  type TickerHandle,
} from '../clock.js'
import { GrudgeError, invalidOption } from '../errors.js'
import { invalidField } from '../format/frame.js'
import {
  GenerationHasher,
  Murmur3Hasher,
  keyHashOf,
  randomSeed,
  seedBytes,
  type Hasher,
  type KeyHash,
} from '../hash/hasher.js'
import { checkKnownOptions } from '../options.js'
import { finiteNow, writerStamp } from './clock-stamp.js'
import { generationSeed, keyHashFor } from './generation-seed.js'
import { decodeRotator, encodeRotator } from './rotator-codec.js'
import { RotatorDelta } from './rotator-delta.js'
import { assertAmnesty } from './rotator-period.js'
import {
  LoadMeter,
  checkSizing,
  earlyGrowthCells,
  sizeFromLoad,
  sizeNextWithHysteresis,
  sizingLimitEvent,
  METER_BYTES,
  initialCellsPerLevel,
  type EarlyGeneration,
  type GenerationLoad,
  type ResolvedSizing,
  type SizingLimitEvent,
} from './rotator-sizing.js'
import { FOLD_CHUNK_CELLS, FOLD_SLICE_CELLS } from './cells.js'
import { checkDecay } from './decay.js'
import {
  DEFAULT_LEVELS,
  MAX_LEVELS,
  ROTATOR_DESERIALIZE_KEYS,
  ROTATOR_OPTION_KEYS,
  SKETCH_OPTION_KEYS,
  incompatibility,
  shapeOf,
  type DeserializeOptions,
  type RotatorDeserializeOptions,
  type RotatorOptions,
  type SketchOptions,
} from './shape.js'
import { Sketch, type SketchDetail } from './sketch.js'

/**
 * A rotator restored from its decoded parts (a frame): the options a constructor would
 * check, already checked by the frame reader, plus the state that options cannot carry.
 * Module-private, so only {@link Rotator.deserialize} can build one; the constructor takes
 * it instead of checking options and creating fresh generations.
 */
class RotatorParts implements RotatorOptions {
  constructor(
    readonly sketch: SketchOptions,
    readonly generations: number,
    readonly periodMs: number,
    readonly clock: Clock,
    readonly ticker: Ticker,
    readonly seed: Uint8Array | undefined,
    /** Generations, oldest first, their cells loaded. */
    readonly gens: Sketch[],
    /** Completed rotations (the generation index of `gens[0]`). */
    readonly rotations: number,
    /** Clock time in ms of the last rotation. */
    readonly lastRotationAtMs: number,
    /** Per generation, oldest first, its creation time on the reader's clock. */
    readonly createdAtMs: number[],
    readonly sizing: RotatorOptions['sizing'],
    /** Rotations missed while down, applied right after construction: the oldest this many generations retire then. */
    readonly missed: number,
  ) {}
}

/**
 * Check a Rotator's own options (the sketch options are checked by each generation's Sketch).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
 */
function checkRotatorOptions(options: RotatorOptions): RotatorOptions {
  if (typeof options !== 'object' || options === null) invalidOption('options', 'an object', options)
  checkKnownOptions(options, ROTATOR_OPTION_KEYS)
  if (typeof options.sketch !== 'object' || options.sketch === null)
    invalidOption('sketch', 'an object (SketchOptions)', options.sketch)
  checkKnownOptions(options.sketch, SKETCH_OPTION_KEYS, 'sketch.')
  const generations = options.generations ?? 2
  if (!Number.isInteger(generations) || generations < 2 || generations > 0xffff) {
    invalidOption('generations', 'an integer in [2, 65535] (the frame limit)', generations)
  }
  const periodMs = options.periodMs
  if (typeof periodMs !== 'number' || !Number.isFinite(periodMs) || periodMs <= 0) {
    invalidOption('periodMs', 'a finite number > 0 (ms)', periodMs)
  }
  const ticker = options.ticker ?? systemTicker
  if (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function') {
    invalidOption('ticker', 'an object with every(periodMs, fn)', ticker)
  }
  return options
}

/** The master seed of the options: `seed`, else `sketch.seed`, else none (random generation seeds). */
function masterSeedOf(options: RotatorOptions): Uint8Array | undefined {
  const master = options.seed ?? options.sketch.seed
  return master === undefined ? undefined : seedBytes(master, options.seed !== undefined ? 'seed' : 'sketch.seed')
}

/**
 * The resolved `sizing` option of a rotator, checked against the shape of its
 * generations (`first`, the oldest of a restored rotator, or the options of a new one).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
 */
function sizingOf(o: RotatorOptions, first: Sketch | undefined): ResolvedSizing {
  const levels = first?.levels ?? o.sketch.levels ?? DEFAULT_LEVELS
  if (!Number.isInteger(levels) || levels < 1 || levels > MAX_LEVELS)
    invalidOption('sketch.levels', 'an integer in [1, 2^20]', levels)
  const decay = first?.decay ?? checkDecay(o.sketch.decay)
  return checkSizing(o.sizing!, levels, o.generations ?? 2, o.periodMs, decay)
}

/**
 * N generations of {@link Sketch} under different seeds. Reads answer from the oldest
 * generation; writes go to all of them, so successors are warm; every `periodMs` the
 * oldest is retired and a fresh one (new seed) is appended. Because a collision under one
 * seed is independent of collisions under the next, even a false positive ends: it lasts
 * at most generations × periodMs. (The rotating-seed construction follows the
 * "aging"/generational Bloom filters, e.g. Yoon, "Aging Bloom Filter with Two Active
 * Buffers", IEEE TKDE 2010.)
 *
 * `tryUpdate` decides on the oldest generation; only if it admits is the delta written to
 * all the others. Normative semantics, serialization and replica deltas: `spec/rotator.md`.
 */
export class Rotator {
  /** N, the number of generations. */
  readonly generations: number
  /** Rotation period in ms. */
  readonly periodMs: number
  /** The time source. */
  readonly clock: Clock
  /** The per-generation sketch options (without seed; the rotator's clock). */
  readonly sketchOptions: Readonly<SketchOptions>
  /** The master seed (16 bytes) when generation seeds are derived, else undefined (random seeds). */
  readonly seed: Uint8Array | undefined
  /** Generations, oldest first. */
  protected gens: Sketch[]
  /**
   * The key hash every generation mixes (the keyed-mix placement: one hash call per
   * decision, spec/rotator.md §1 "Placement"); undefined for a rotator restored from a frame
   * written before it, whose generations, fresh ones included, keep hashing the key each
   * under its own seed (the placement those frames were written with).
   */
  private readonly keyHash: KeyHash | undefined
  private completed: number
  private lastRotationAtMs: number
  private handle: TickerHandle | undefined
  private closed = false
  /**
   * Whether writes carry the oldest generation's aggregate forward into the younger ones
   * (linear decay, the debt meter guarded by the amnesty check; `spec/rotator.md` §1).
   */
  private readonly carry: boolean
  /** Clock time in ms at which each generation was created, oldest first (kept beside `gens`). */
  private readonly createdAtMs: number[]
  /** The resolved `sizing` option, or undefined for a fixed shape. */
  private readonly sizing: ResolvedSizing | undefined
  /** The youngest generation's load meter (self-sized only); null keeps the fixed path's test to one compare. */
  private readonly meter: LoadMeter | null
  /**
   * The youngest age in ms at which a self-sized rotation promotes a generation to the
   * oldest: hi / rate × 1000 with linear decay (the amnesty guard), (N − 1) × periodMs otherwise.
   */
  private readonly minPromotionAgeMs: number
  /**
   * The check window's admitted cost at which a write runs the check at once instead of at the
   * next tick: M_youngest × rate × checkEveryMs / 1000 × min(1, growAtLoadFactor), a full
   * window's cost at ρ = 1 (or at the threshold); Infinity for a fixed shape, a youngest at
   * the budget or a decay without a rate ({@link Rotator.armCheck}).
   */
  private checkAtCost = Infinity
  /** Generation indexes of the live generations grown early (for {@link Rotator.earlyGenerations}; pruned as they retire). */
  private readonly earlyIndexes: number[] = []
  /** The cells per level an early growth in progress folds to, or 0 when none is (see {@link Rotator.growEarly}). */
  private growCells = 0
  /** Generation indexes the early growth in progress will fold next, one at a time, oldest first. */
  private readonly growQueue: number[] = []
  /** When the lazy fold in progress started (ms, this rotator's clock): {@link Rotator.check} ends one a window old that no turn swept since the check before. */
  private foldStartedAtMs = 0
  /** Slices swept since the last check ({@link Rotator.foldSlice}): a fold none swept in a window is a stalled one. */
  private slicesSinceCheck = 0
  private earlyGrowthCount = 0
  private resizeCount = 0
  private limitCount = 0
  private readonly limitReported = { budget: false, invalid: false }
  /** Sizing events to hand to onSizingLimit once the rotator's state is consistent again. */
  private readonly pendingEvents: SizingLimitEvent[] = []
  /** The next turn's slice of the lazy folds in progress (`setImmediate`), or undefined when none is due. */
  private foldTurn: ReturnType<typeof setImmediate> | undefined = undefined
  /**
   * Cells a fold's slice copies at most (`FOLD_SLICE_CELLS`), one slice per turn of the event
   * loop; a generation of at most this many cells (L × M′) is folded at once. Tests lower it,
   * or set it to Infinity (every fold at once, as before: the reference).
   * @internal
   */
  foldSliceCells = FOLD_SLICE_CELLS
  /**
   * A lazy fold's chunk at most (`FOLD_CHUNK_CELLS`, a power of two); tests lower it.
   * @internal
   */
  foldChunkCells = FOLD_CHUNK_CELLS

  /**
   * @param options see {@link RotatorOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option (generations,
   * periodMs, ticker, seed, or any sketch option), also a key that is not an option of
   * {@link RotatorOptions} or of `sketch` (e.g. `sketch.level`, with the closest name
   * suggested); `ERR_GRUDGE_ROTATOR_AMNESTY` when the
   * decay is linear and (generations − 1) × periodMs < hi / rate × 1000 (the message names
   * the smallest valid period); `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity;
   * with `sizing`, `ERR_GRUDGE_OPTION_INVALID` naming the bad `sizing.*` option (also a
   * budget too small for N generations of `sizing.minCellsPerLevel`, and a
   * `sketch.cellsPerLevel` that is not a power of two between the minimum and the maximum)
   */
  constructor(options: RotatorOptions) {
    // a restored rotator's parts were checked by the frame reader (see Rotator.fromParts)
    const restored = options instanceof RotatorParts ? options : undefined
    const o = restored ?? checkRotatorOptions(options)
    this.seed = restored !== undefined ? restored.seed : masterSeedOf(o)
    this.clock = o.clock ?? o.sketch.clock ?? systemClock
    this.generations = o.generations ?? 2
    this.periodMs = o.periodMs
    this.sizing = o.sizing === undefined ? undefined : sizingOf(o, restored?.gens[0])
    if (restored !== undefined && this.sizing !== undefined)
      assertFrameFits(restored.gens, this.sizing.maxCellsPerLevel, restored.missed)
    const sketch =
      this.sizing !== undefined && restored === undefined
        ? { ...o.sketch, cellsPerLevel: initialCellsPerLevel(this.sizing, o.sketch.cellsPerLevel) }
        : o.sketch
    this.sketchOptions = Object.freeze({ ...sketch, seed: undefined, clock: this.clock })
    // a fresh rotator without a master seed gets a private random one: its generation seeds
    // and key hash seed derive from it as a seeded rotator's do from its master
    this.keyHash =
      restored !== undefined
        ? keyHashOf(restored.gens[0].hasher)
        : keyHashFor(this.sketchOptions.hasher ?? new Murmur3Hasher(randomSeed()), this.seed ?? randomSeed())
    this.completed = restored?.rotations ?? 0
    this.gens = restored?.gens ?? []
    if (restored === undefined) for (let i = 0; i < this.generations; i++) this.gens.push(this.freshGeneration(i))
    const first = this.gens[0]
    this.carry = first.decay.kind === 'linear'
    if (this.carry) assertAmnesty(first.hi, first.decay.ratePerSecond, this.generations, this.periodMs)
    this.lastRotationAtMs = restored?.lastRotationAtMs ?? finiteNow(this.clock, 'Rotator')
    this.createdAtMs = restored?.createdAtMs ?? this.gens.map(() => this.lastRotationAtMs)
    this.minPromotionAgeMs = this.carry
      ? (first.hi / first.decay.ratePerSecond) * 1000
      : (this.generations - 1) * this.periodMs
    this.meter = this.sizing === undefined ? null : new LoadMeter(finiteNow(this.clock, 'Rotator'))
    this.armCheck()
    // the default ticker goes through longPeriodTicker, which keeps periods beyond the timer
    // range (2^31 − 1 ms) on the clock; an injected ticker is the caller's schedule as it is
    const ticker = o.ticker ?? systemTicker
    const schedule = ticker === systemTicker ? longPeriodTicker(ticker, this.clock) : ticker
    // a fixed shape rotates on every tick; a self-sized rotator ticks every checkEveryMs and
    // rotates when the clock says a period has passed (and the promotion-age guard allows)
    this.handle =
      this.sizing === undefined
        ? schedule.every(this.periodMs, () => this.rotate())
        : schedule.every(this.sizing.checkEveryMs, () => this.check())
  }

  /**
   * A rotator built from a decoded frame's parts: its generations as loaded, its rotation
   * count and last rotation time, on the reader's clock and ticker. The constructor's one
   * other path (no option check, no fresh generations, no clock reading).
   */
  private static fromParts(parts: RotatorParts): Rotator {
    return new Rotator(parts)
  }

  /**
   * A new generation for generation index `g`: its seed derived from the master seed, or
   * random; `cellsPerLevel` cells per level (default: the sketch options').
   */
  protected freshGeneration(g: number, cellsPerLevel?: number): Sketch {
    const o = cellsPerLevel === undefined ? this.sketchOptions : { ...this.sketchOptions, cellsPerLevel }
    const keys = this.keyHash
    if (keys !== undefined) {
      return new Sketch({ ...o, hasher: new GenerationHasher(keys, generationSeed(keys.master, g)), seed: undefined })
    }
    const hasher = this.sketchOptions.hasher ?? new Murmur3Hasher(randomSeed())
    const seed = this.seed === undefined ? randomSeed() : generationSeed(this.seed, g)
    return new Sketch({ ...o, hasher: hasher.withSeed(seed), seed: undefined })
  }

  /** Count of completed rotations (also the generation index of the oldest generation). */
  get rotations(): number {
    return this.completed
  }

  /**
   * Retire the oldest generation and append a fresh one. Called by the ticker every
   * periodMs; callable directly.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED` after close()
   */
  rotate(): void {
    this.assertOpen()
    this.advance(1)
    this.stampRotation()
    this.flushEvents()
  }

  /**
   * Rotate until {@link Rotator.rotations} equals `rotations` (nothing when already there
   * or past): lets replicas align their generations (e.g. from a fleet-wide schedule).
   * Rotating N or more times leaves only fresh generations.
   * @param rotations target count, a safe integer ≥ 0
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`; `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  rotateTo(rotations: number): void {
    this.assertOpen()
    if (!Number.isSafeInteger(rotations) || rotations < 0) invalidOption('rotations', 'a safe integer ≥ 0', rotations)
    if (rotations <= this.completed) return
    this.advance(rotations - this.completed)
    this.stampRotation()
    this.flushEvents()
  }

  /**
   * Record the time of a rotation. A NaN or ±Infinity clock reading keeps the previous
   * time (rotation runs from a timer, so it must not throw; a non-finite time would make
   * the rotator's frame unreadable).
   */
  private stampRotation(): void {
    const t = this.clock.now()
    if (Number.isFinite(t)) this.lastRotationAtMs = t
  }

  /**
   * Complete `k` ≥ 1 rotations at once. New generations take the youngest's cells per
   * level (fixed shape), or what the sizer makes of the youngest's measured load.
   */
  private advance(k: number): void {
    const N = this.generations
    const t = this.clock.now()
    const now = Number.isFinite(t) ? t : this.lastRotationAtMs
    const cells = this.nextCellsPerLevel(now)
    if (k >= N) {
      this.completed += k
      for (let i = 0; i < N; i++) {
        this.gens[i] = this.freshGeneration(this.completed + i, cells)
        this.createdAtMs[i] = now
      }
    } else {
      for (let j = 0; j < k; j++) {
        this.gens.shift()
        this.createdAtMs.shift()
        this.completed++
        this.gens.push(this.freshGeneration(this.completed + N - 1, cells))
        this.createdAtMs.push(now)
      }
    }
    // a growth in progress: the generations it queued that retired leave its queue
    if (this.growCells > 0) {
      const live = this.growQueue.filter((i) => i >= this.completed)
      this.growQueue.length = 0
      this.growQueue.push(...live)
      if (live.length === 0 && !this.gens.some((g) => g.folding)) this.growCells = 0
    }
    this.armCheck()
  }

  /**
   * Set {@link Rotator.checkAtCost} for the youngest generation's size. A jump lands its first
   * check window on the youngest's cells: on 64 cells per level at 3,000 requests/s a 1-s
   * window fills them far past a burst of 10 before the tick sees it, and what a fold keeps
   * then drains for seconds (a fresh-user review: 2,268 of 327,000 fresh requests refused
   * after a 350-s quiet spell, 45 % in the worst second). Checking once a window's cost at
   * ρ = 1 has arrived grows before a cell holds more than about one request's cost, and a
   * check it triggers sees a window rate at least the threshold's, so it grows no more often
   * than the tick would have at the window's end (spec/rotator.md §1, _Schedule_).
   */
  private armCheck(): void {
    const sizing = this.sizing
    if (sizing === undefined) return
    const youngest = this.gens[this.generations - 1]
    const rate = youngest.decay.ratePerSecond
    // an early growth in progress folds the youngest to growCells soon: measure against that
    const M = Math.max(youngest.cellsPerLevel, this.growCells)
    this.checkAtCost =
      M >= sizing.maxCellsPerLevel || !(rate > 0)
        ? Infinity
        : ((M * rate * sizing.checkEveryMs) / 1000) * Math.min(1, sizing.growAtLoadFactor ?? 1)
  }

  /** Cells per level of the generation(s) appended at a rotation at `nowMs`. */
  private nextCellsPerLevel(nowMs: number): number {
    const youngest = this.gens[this.generations - 1].cellsPerLevel
    const meter = this.meter
    if (meter === null) return youngest
    const cells = this.decideCells(meter.lifeLoad(nowMs, this.loadBase('rotation')), meter.peakWindowCostPerSecond())
    meter.reset(nowMs)
    if (cells !== youngest) this.resizeCount++
    return cells
  }

  /** The fields of a measurement that do not come from the meter. */
  private loadBase(
    reason: GenerationLoad['reason'],
  ): Omit<GenerationLoad, 'distinctKeys' | 'costPerSecond' | 'periodMs'> {
    const youngest = this.gens[this.generations - 1]
    return {
      currentCellsPerLevel: youngest.cellsPerLevel,
      levels: youngest.levels,
      generations: this.generations,
      decay: youngest.decay,
      reason,
    }
  }

  /**
   * The sizer's answer for `load`, rounded up to a power of two and clamped to [min, max];
   * an answer above the maximum, or an invalid one (kept: the youngest's size), is counted
   * and queued for onSizingLimit.
   */
  private decideCells(load: GenerationLoad, peakWindowCostPerSecond?: number): number {
    const s = this.sizing!
    // a rotation shrinks only with the margin (hysteresis); a check only ever grows
    const { cells, limit, wanted } =
      peakWindowCostPerSecond === undefined
        ? sizeFromLoad(s, load)
        : sizeNextWithHysteresis(s, load, peakWindowCostPerSecond)
    if (limit !== undefined) {
      this.limitCount++
      const event = sizingLimitEvent(s, this.limitReported, limit, wanted, cells, load, peakWindowCostPerSecond)
      if (event !== undefined && s.onSizingLimit !== undefined) this.pendingEvents.push(event)
    }
    return cells
  }

  /** Hand the queued sizing events to onSizingLimit (after the state change that raised them). */
  private flushEvents(): void {
    const hook = this.sizing?.onSizingLimit
    if (hook === undefined) return
    while (this.pendingEvents.length > 0) hook(this.pendingEvents.shift()!)
  }

  /**
   * The self-sized rotator's tick (every checkEveryMs): rotate when a period has passed on
   * the clock, provided the generation to be promoted is at least minPromotionAgeMs old;
   * otherwise measure the youngest generation over the last window and, on a load jump, fold
   * the live generations into a larger shape now (`spec/rotator.md` §1 "Self-sizing").
   */
  private check(): void {
    if (this.closed) return
    const now = this.clock.now()
    if (!Number.isFinite(now)) return
    const swept = this.slicesSinceCheck > 0
    this.slicesSinceCheck = 0
    if (now >= this.promotionAtMs(this.lastRotationAtMs, 1)) {
      this.advance(1)
      this.lastRotationAtMs = now
      this.flushEvents()
      return
    }
    // a fold the event loop did not sweep within a window (a synchronous caller: no turn since
    // the last check): end it now; a loop that turns, however slowly, goes on slicing it
    if (this.growCells > 0 && !swept && now - this.foldStartedAtMs >= this.sizing!.checkEveryMs)
      this.finishStalledFold()
    const meter = this.meter!
    const load = meter.windowLoad(now, this.loadBase('check'))
    meter.closeWindow(now)
    if (load !== undefined) {
      const cells = this.earlyCells(load)
      if (cells > load.currentCellsPerLevel) this.growEarly(cells, now)
    }
    this.armCheck()
    this.flushEvents()
  }

  /**
   * The check a write runs when the window's cost passes {@link Rotator.checkAtCost}: the
   * early-growth rule on the window so far, its cost spread over at least checkEveryMs (the
   * rate the tick would measure if nothing more came, so it never grows more eagerly than the
   * tick would), the window left open for the tick. Without a growth, no more such checks
   * until the next tick re-arms.
   */
  private checkWithinWindow(): void {
    this.checkAtCost = Infinity
    const now = this.clock.now()
    if (this.closed || !Number.isFinite(now)) return
    const load = this.meter!.windowLoad(now, this.loadBase('check'), this.sizing!.checkEveryMs)
    if (load === undefined) return
    const cells = this.earlyCells(load)
    if (cells > load.currentCellsPerLevel) this.growEarly(cells, now)
    this.flushEvents()
  }

  /** The cells per level of a generation to start early for `load`, or 0 for none (`earlyGrowthCells`, the fleet's rule too). */
  private earlyCells(load: GenerationLoad): number {
    return earlyGrowthCells(this.sizing!, load, (l) => this.decideCells(l))
  }

  /** Run {@link Rotator.foldSlice} at the next turn of the event loop, and again while a fold is in progress. */
  private scheduleFold(): void {
    if (this.foldTurn !== undefined || this.closed) return
    this.foldTurn = setImmediate(() => {
      this.foldTurn = undefined
      if (!this.closed && this.foldSlice() > 0) this.scheduleFold()
    })
  }

  /**
   * One slice of the lazy fold in progress (spec/rotator.md §1, _Early growth by folding_,
   * _Cost_): at most `foldSliceCells` cells (whole chunks, one at least); when it ends, the next
   * queued generation's fold starts (one at a time: Memory). Run once per turn of the event loop
   * after an early growth; an operation in between folds its key's chunks itself.
   * @returns the generations still folding or queued to fold
   * @internal
   */
  foldSlice(): number {
    this.slicesSinceCheck++
    let budget = this.foldSliceCells
    let left = 0
    for (const g of this.gens) {
      if (!g.folding) continue
      // a turn of the event loop (or a test's direct call), off any request's path: native copies
      if (budget > 0) budget -= g.foldSome(budget, true)
      if (g.folding) left++
    }
    if (left === 0 && this.foldNextQueued()) left = 1
    return left + this.growQueue.length
  }

  /**
   * Grow every live generation smaller than `cells` cells per level to `cells` by folding
   * ({@link Sketch.foldFrom}: each level repeated, under the same seed, so every key reads at
   * least what it read before and shares its cells with fewer keys from now on), one at a time,
   * oldest first: the deciding generation first (it is the one refusing innocent keys, and a
   * fold loses nothing it holds, so it decides on at once and keeps its age; so does every other
   * folded generation, and the promotion-age guard holds unchanged), and the next once the fold
   * before has ended, so that only one smaller generation is held beside the live ones at any
   * time (spec/rotator.md §1 "Self-sizing", _Early growth by folding_, Memory). A fold in progress
   * towards a smaller size is finished at once first. A generation whose cells per level are not
   * a power of two dividing `cells` (only a restored frame can hold one) keeps its shape. A growth
   * to at most the size already under way joins it: the generations it does not hold yet (a
   * rotation appended them since it began) are queued behind it, to that size.
   */
  private growEarly(cells: number, nowMs: number): void {
    // a growth to at most the size under way joins it: it queues only the generations it does
    // not hold yet (a rotation since appended them), which then fold to that size
    const joins = cells <= this.growCells
    const queue: number[] = []
    for (let g = 0; g < this.generations; g++) {
      const M = this.gens[g].cellsPerLevel
      const index = this.completed + g
      // only a restored frame can hold a shape that does not fold (sized shapes are powers of two)
      if (M < cells && canFold(M, cells) && !(joins && this.growQueue.includes(index))) queue.push(index)
    }
    if (queue.length === 0) return
    if (!joins) {
      // one smaller generation held at a time: a fold towards a smaller size ends now
      for (const g of this.gens) if (g.folding) g.foldSome(Infinity)
      this.growCells = cells
      this.growQueue.length = 0
    }
    this.growQueue.push(...queue)
    this.growQueue.sort((a, b) => a - b)
    this.meter!.reset(nowMs, true)
    this.resizeCount++
    this.earlyGrowthCount++
    // joined, a fold may be in progress: the queue goes on when it ends
    if (!this.gens.some((g) => g.folding) && this.foldNextQueued()) this.scheduleFold()
    this.armCheck()
  }

  /**
   * End the lazy fold in progress at once and start the next queued one: the check's rule when
   * a fold began at least a check window ago and no turn of the event loop swept a slice since
   * the last check (a caller that never yields), so a queued generation never waits on turns
   * that do not come; a loop that turns, however busy, goes on slicing it, since ending it at
   * once is the pause the lazy fold exists to avoid (spec/rotator.md §1, _Early growth by
   * folding_, Memory).
   */
  private finishStalledFold(): void {
    for (const g of this.gens) if (g.folding) g.foldSome(Infinity)
    if (this.foldNextQueued()) this.scheduleFold()
  }

  /**
   * Start the fold of the next queued generation to `growCells` (at once when it has at most
   * `foldSliceCells` cells, then the next, and so on; lazily otherwise), skipping any retired
   * since it was queued. The larger generation takes the smaller one's place and hasher at
   * once; the smaller is held by the lazy fold until it ends.
   * @returns whether a lazy fold is now in progress (false: the queue is empty and the growth done)
   */
  private foldNextQueued(): boolean {
    const cells = this.growCells
    while (this.growQueue.length > 0) {
      const index = this.growQueue.shift()!
      const g = index - this.completed
      if (g < 0) continue
      const old = this.gens[g]
      if (old.cellsPerLevel >= cells) continue
      // the old generation's own hasher: a restored frame without a master seed has no seed derivation to redo
      const next = new Sketch({ ...this.sketchOptions, cellsPerLevel: cells, hasher: old.hasher, seed: undefined })
      // a large one lazily: each operation folds its key's chunks, a slice per turn the rest
      if (next.levels * cells <= this.foldSliceCells) next.foldFrom(old)
      else next.foldLazilyFrom(old, this.foldChunkCells)
      this.gens[g] = next
      const live = this.earlyIndexes.filter((i) => i >= this.completed && i !== index)
      live.push(index)
      live.sort((a, b) => a - b)
      this.earlyIndexes.length = 0
      this.earlyIndexes.push(...live)
      if (next.folding) {
        const t = this.clock.now()
        this.foldStartedAtMs = Number.isFinite(t) ? t : this.lastRotationAtMs
        return true
      }
    }
    this.growCells = 0
    return false
  }

  // Time: as on Sketch, every clock-reading method has an At twin taking the time first.
  // The plain forms call the generations' plain forms (each reads the clock, as the
  // Sketch's zero-allocation path does); the At forms pass nowMs on. The shared parts take
  // `nowMs: number | undefined`, undefined meaning "read the clock": a tagged value, so
  // nothing is boxed on the plain path.

  /**
   * Add `delta` to the key in every generation (see {@link Sketch.update}).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  update(key: string | Uint8Array, delta: number): void {
    this.write(undefined, key, delta)
  }

  /**
   * {@link Rotator.update} at time `nowMs` (read as {@link Sketch.updateAt} reads it).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  updateAt(nowMs: number, key: string | Uint8Array, delta: number): void {
    this.write(nowMs, key, delta)
  }

  private write(nowMs: number | undefined, key: string | Uint8Array, delta: number): void {
    this.assertOpen()
    const g0 = this.gens[0]
    // with the carry, the oldest generation's write leaves its aggregate for the younger ones
    if (nowMs === undefined) {
      if (this.carry) g0.updateAndEstimate(key, delta)
      else g0.update(key, delta)
    } else if (this.carry) g0.updateAndEstimateAt(nowMs, key, delta)
    else g0.updateAt(nowMs, key, delta)
    this.writeYounger(nowMs, key, delta)
  }

  /**
   * Write `delta` to every generation but the oldest, which has just been written. With
   * linear decay and delta ≥ 0 this is the carry-forward (`spec/rotator.md` §1): each
   * younger cell becomes clamp(max(decayed + delta, A)) where A is the oldest generation's
   * aggregate after its write, so no younger generation reads the key lower than the
   * deciding one did. Otherwise a plain add.
   */
  private writeYounger(nowMs: number | undefined, key: string | Uint8Array, delta: number): void {
    const gens = this.gens
    if (this.carry && delta >= 0) {
      const floor = gens[0].lastAggregate
      for (let i = 1; i < gens.length; i++) {
        if (nowMs === undefined) gens[i].updateWithFloor(key, delta, floor)
        else gens[i].updateWithFloorAt(nowMs, key, delta, floor)
      }
    } else {
      for (let i = 1; i < gens.length; i++) {
        if (nowMs === undefined) gens[i].update(key, delta)
        else gens[i].updateAt(nowMs, key, delta)
      }
    }
    // self-sized only: the youngest generation's hash of the key (just computed) feeds the
    // load meter; for a fixed shape this compare is all the hot path gains
    const meter = this.meter
    if (meter !== null) this.recordLoad(meter, gens[gens.length - 1].hasher, delta)
  }

  /**
   * Self-sized only: feed the youngest generation's hash of the key to the load meter and, on
   * a jump within the check window, check now, not at the next tick ({@link Rotator.armCheck}).
   * A method of its own so that writeYounger, on every write's path, stays as small as it was
   * for a fixed shape.
   */
  private recordLoad(meter: LoadMeter, hasher: Hasher, delta: number): void {
    meter.record(hasher, delta)
    if (meter.windowCost() > this.checkAtCost) this.checkWithinWindow()
  }

  /**
   * The key's aggregate in the oldest generation.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  estimate(key: string | Uint8Array): number {
    this.assertOpen()
    return this.gens[0].estimate(key)
  }

  /**
   * {@link Rotator.estimate} at time `nowMs`.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  estimateAt(nowMs: number, key: string | Uint8Array): number {
    this.assertOpen()
    return this.gens[0].estimateAt(nowMs, key)
  }

  /**
   * Update every generation, return the oldest generation's aggregate after the update.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  updateAndEstimate(key: string | Uint8Array, delta: number): number {
    this.assertOpen()
    const a = this.gens[0].updateAndEstimate(key, delta)
    this.writeYounger(undefined, key, delta)
    return a
  }

  /**
   * {@link Rotator.updateAndEstimate} at time `nowMs`.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  updateAndEstimateAt(nowMs: number, key: string | Uint8Array, delta: number): number {
    this.assertOpen()
    const a = this.gens[0].updateAndEstimateAt(nowMs, key, delta)
    this.writeYounger(nowMs, key, delta)
    return a
  }

  /**
   * Decide on the oldest generation (`aggregate + delta ≤ limit`); only if it admits, add
   * `delta` to every other generation.
   * @returns whether the delta was applied
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  tryUpdate(key: string | Uint8Array, delta: number, limit: number): boolean {
    return this.tryWrite(undefined, key, delta, limit)
  }

  /**
   * {@link Rotator.tryUpdate} at time `nowMs`.
   * @returns whether the delta was applied
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  tryUpdateAt(nowMs: number, key: string | Uint8Array, delta: number, limit: number): boolean {
    return this.tryWrite(nowMs, key, delta, limit)
  }

  private tryWrite(nowMs: number | undefined, key: string | Uint8Array, delta: number, limit: number): boolean {
    this.assertOpen()
    const g0 = this.gens[0]
    let admitted: boolean
    if (nowMs === undefined)
      admitted = this.carry ? g0.tryUpdateTracked(key, delta, limit) : g0.tryUpdate(key, delta, limit)
    else
      admitted = this.carry ? g0.tryUpdateTrackedAt(nowMs, key, delta, limit) : g0.tryUpdateAt(nowMs, key, delta, limit)
    if (!admitted) return false
    this.writeYounger(nowMs, key, delta)
    return true
  }

  /**
   * A debt meter's consume: read the key in the oldest generation and, if and only if
   * `aggregate + delta ≤ limit` (a NaN never admits), add `delta` to every generation, as
   * {@link Rotator.estimate} then {@link Rotator.update} would, hashing the key once per
   * generation instead of twice in the oldest.
   * @returns the oldest generation's aggregate before the delta; the delta was applied iff `aggregate + delta ≤ limit`
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   * @internal
   */
  consume(key: string | Uint8Array, delta: number, limit: number): number {
    this.assertOpen()
    const a = this.gens[0].consumeTracked(key, delta, limit)
    if (a + delta <= limit) this.writeYounger(undefined, key, delta)
    return a
  }

  /**
   * {@link Rotator.consume} at time `nowMs`.
   * @internal
   */
  consumeAt(nowMs: number, key: string | Uint8Array, delta: number, limit: number): number {
    this.assertOpen()
    const a = this.gens[0].consumeTrackedAt(nowMs, key, delta, limit)
    if (a + delta <= limit) this.writeYounger(nowMs, key, delta)
    return a
  }

  /**
   * Per-level detail of the oldest generation (see {@link Sketch.estimateDetailed}).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  estimateDetailed(key: string | Uint8Array): SketchDetail {
    this.assertOpen()
    return this.gens[0].estimateDetailed(key)
  }

  /**
   * {@link Rotator.estimateDetailed} at time `nowMs`.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  estimateDetailedAt(nowMs: number, key: string | Uint8Array): SketchDetail {
    this.assertOpen()
    return this.gens[0].estimateDetailedAt(nowMs, key)
  }

  /**
   * Memory in bytes of all generations' cells (the generations of a self-sized rotator may
   * differ in size) plus, when self-sized, the 2 KiB of its load meter: what `sizing.maxBytes`
   * bounds. While an early growth's lazy fold is in progress, also the smaller generation it
   * replaces, still held until it ends (`Sketch.sizeBytes()`: its cells, and its delta baseline
   * when it had one); one generation folds at a time, so without deltas this stays within
   * 2048 + (N + ½) × L × max × 16 ≤ `maxBytes` (spec/rotator.md §1, _Early growth by folding_,
   * Memory). The generations' own delta baselines (16 B per cell once `takeDelta`, `applyDelta`
   * or `markSynced` ran) are not counted.
   */
  sizeBytes(): number {
    let bytes = this.meter === null ? 0 : METER_BYTES
    for (const g of this.gens) bytes += g.sizeBytes()
    return bytes
  }

  /** Cells per level of each generation, oldest first (all equal for a fixed shape). Allocates. */
  get generationCellsPerLevel(): readonly number[] {
    return this.gens.map((g) => g.cellsPerLevel)
  }

  /** Whether the rotator sizes its generations (the `sizing` option). */
  get selfSized(): boolean {
    return this.sizing !== undefined
  }

  /** The largest cells per level a generation may have (the budget), or undefined for a fixed shape. */
  get maxCellsPerLevel(): number | undefined {
    return this.sizing?.maxCellsPerLevel
  }

  /** Generations created with another size than the youngest before them at rotations, plus the early growths. 0 for a fixed shape. */
  get resizes(): number {
    return this.resizeCount
  }

  /** Early growths on a load jump so far (each folds the live generations smaller than its size; each also counted in {@link Rotator.resizes}). 0 for a fixed shape. */
  get earlyGrowths(): number {
    return this.earlyGrowthCount
  }

  /**
   * The one home of the self-sized schedule's promotion rule: the earliest time (ms, this
   * rotator's clock) at which the generation now at position `j` (≥ 1) may be promoted, the
   * one before it having been promoted at `sinceMs`: once a period has passed since then and
   * it is at least minPromotionAgeMs old (the promotion-age guard; a generation grown early
   * by folding keeps its age). {@link Rotator.check} promotes position 1 at the first check at
   * or after it; {@link Rotator.earlyGenerations} walks it forward.
   */
  private promotionAtMs(sinceMs: number, j: number): number {
    return Math.max(sinceMs + this.periodMs, this.createdAtMs[j] + this.minPromotionAgeMs)
  }

  /**
   * The live generations grown early on a load jump, oldest first (spec/rotator.md §1
   * "Self-sizing", _Early growth by folding_): each was folded into a larger shape in its
   * place (`twin: false`), so its cells are those of `generationCellsPerLevel[generation]`. A
   * deciding one (position 0) decides since the last rotation (a fold keeps it deciding); a
   * pending one from the earliest time the schedule allows, reached at the first check at or
   * after it: the promotions before it walked from the last rotation, each when a period has
   * passed since the one before and the generation it promotes is A old (the promotion-age
   * guard). Empty for a fixed shape. Allocates.
   */
  earlyGenerations(): readonly EarlyGeneration[] {
    const out: EarlyGeneration[] = []
    for (const index of this.earlyIndexes) {
      const k = index - this.completed
      if (k < 0 || k >= this.generations) continue
      let at = this.lastRotationAtMs
      for (let j = 1; j <= k; j++) at = this.promotionAtMs(at, j)
      out.push({
        generation: k,
        cellsPerLevel: this.gens[k].cellsPerLevel,
        twin: false,
        decidesAtMs: at,
        deciding: k === 0,
      })
    }
    return out
  }

  /**
   * How many sizing decisions could not be honoured (the sizer asked for more than the
   * budget, or returned an invalid size); `onSizingLimit` hears only the first of each kind.
   */
  get sizingLimitCount(): number {
    return this.limitCount
  }

  /**
   * The load the youngest generation measured since it was created (distinct keys, admitted
   * cost per second), as the sizer will see it at the next rotation; undefined for a fixed
   * shape. Read-only: it changes nothing. Allocates.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity
   */
  measuredLoad(): GenerationLoad | undefined {
    this.assertOpen()
    if (this.meter === null) return undefined
    return this.meter.lifeLoad(finiteNow(this.clock, 'measuredLoad'), this.loadBase('rotation'))
  }

  /** Stop the rotation timer; idempotent. Any later use throws `ERR_GRUDGE_ROTATOR_CLOSED`. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.handle?.cancel()
    this.handle = undefined
    if (this.foldTurn !== undefined) clearImmediate(this.foldTurn)
    this.foldTurn = undefined
  }

  /**
   * The rotator as a binary frame (family 2, version 1; byte table in `spec/format.md`):
   * shape, master seed, period, rotation count, time of the last rotation, and every
   * generation's seed and cells, oldest first. Restore with {@link Rotator.deserialize}.
   * {@link Rotator.serializeAt} at the clock's time and `Date.now()`.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity
   */
  serialize(): Uint8Array {
    this.assertOpen()
    return this.serializeAt(finiteNow(this.clock, 'serialize'), wallClockMs())
  }

  /**
   * {@link Rotator.serialize} stamped with explicit times: the same state and times give
   * the same bytes.
   * @param nowMs the writer's time in ms on this rotator's clock, finite
   * @param wallMs the writer's wall-clock time in ms (Unix epoch), finite
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` naming a non-finite time
   */
  serializeAt(nowMs: number, wallMs: number): Uint8Array {
    this.assertOpen()
    return encodeRotator(
      this.gens[0],
      writerStamp(nowMs, wallMs),
      {
        generations: this.generations,
        periodMs: this.periodMs,
        rotations: this.completed,
        lastRotationAtMs: this.lastRotationAtMs,
      },
      this.seed,
      this.keyHash?.master,
      this.gens.map((g, i) => ({
        ...g.cellsForFrame(),
        cellsPerLevel: g.cellsPerLevel,
        createdAtMs: this.createdAtMs[i],
      })),
      false,
    )
  }

  /**
   * Rebuild a rotator from {@link Rotator.serialize}'s frame, on the reader's clock and
   * ticker. Times map as for `Sketch.deserialize` (downtime counts as elapsed time); then
   * the rotations missed while down (floor(time since the last rotation / periodMs)) are
   * applied at once, so the rotation phase is kept to within one period: the next
   * ticker-driven rotation comes periodMs after the load. Every field is checked first;
   * nothing half-loaded is returned.
   * @param bytes the frame
   * @param options `clock` (default system clock), `ticker` (default unref'd setInterval),
   * `wallMs` (default `Date.now()`), `sizing` (see {@link RotatorOptions}: a frame carries
   * each generation's shape, not the sizer; without it new generations take the youngest's shape)
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*` (`_INVALID` also when the missed rotations
   * would take the rotation count past 2^53); `ERR_GRUDGE_ROTATOR_AMNESTY` for a frame whose
   * period fails the amnesty guard; `ERR_GRUDGE_OPTION_INVALID` for a bad or unknown option;
   * `ERR_GRUDGE_SIZING_CONFLICT` when `sizing` is given and a generation of the frame that the
   * missed rotations do not retire has more cells per level than its budget's largest shape (so
   * `sizeBytes()` never exceeds the budget)
   */
  static deserialize(bytes: Uint8Array, options?: RotatorDeserializeOptions): Rotator {
    checkKnownOptions(options, ROTATOR_DESERIALIZE_KEYS)
    const ticker = options?.ticker ?? systemTicker
    if (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function') {
      invalidOption('ticker', 'an object with every(periodMs, fn)', ticker)
    }
    const d = decodeRotator(bytes, false, options)
    const { rotations, periodMs, lastRotationAtMs } = d.fields
    const missed = Math.max(0, Math.floor((finiteNow(d.clock, 'deserialize') - lastRotationAtMs) / periodMs))
    if (!Number.isSafeInteger(rotations + missed)) {
      invalidField(
        'rotations after the downtime',
        `a safe integer (${rotations} + the rotations missed at periodMs ${periodMs}; check the writer wall-clock ms)`,
        rotations + missed,
      )
    }
    const rotator = Rotator.fromParts(
      new RotatorParts(
        shapeOf(d.gens[0].shape),
        d.fields.generations,
        periodMs,
        d.clock,
        ticker,
        d.masterSeed,
        d.gens.map((g) => {
          const sketch = new Sketch({ ...g.shape, clock: d.clock })
          sketch.loadCellsFromFrame(g.cells.scores, g.cells.touched)
          return sketch
        }),
        rotations,
        lastRotationAtMs + missed * periodMs,
        d.gens.map((g) => g.createdAtMs),
        options?.sizing,
        missed,
      ),
    )
    // the rotations missed while down, as the ticker would have run them
    if (missed > 0) rotator.advance(missed)
    return rotator
  }

  /**
   * Whether {@link Rotator.merge} would accept `other`: a Rotator with the same generation
   * count, period, rotation count and sketch configuration whose generations have the same
   * seeds (build replicas with the same master `seed`).
   */
  isCompatible(other: Rotator): boolean {
    return other instanceof Rotator && other !== this && this.incompatibility(other) === undefined
  }

  private incompatibility(other: Rotator): string | undefined {
    if (this.generations !== other.generations) return `generations: ${this.generations} vs ${other.generations}`
    if (this.periodMs !== other.periodMs) return `periodMs: ${this.periodMs} vs ${other.periodMs}`
    if (this.completed !== other.completed)
      return `rotations: ${this.completed} vs ${other.completed} (align with rotateTo)`
    for (let i = 0; i < this.generations; i++) {
      const diff = incompatibility(this.gens[i], other.gens[i])
      if (diff !== undefined) return `generation ${i}: ${diff}`
    }
    return undefined
  }

  /**
   * Merge `other` generation by generation (see `Sketch.merge`); `other` is unchanged.
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_SELF`; `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming
   * what differs; `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  merge(other: Rotator): void {
    this.assertOpen()
    if (!(other instanceof Rotator))
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        'rotator: expected a Rotator to merge, received another value',
      )
    if (other === this)
      throw new GrudgeError('ERR_GRUDGE_MERGE_SELF', 'rotator: expected another rotator, received the same instance')
    other.assertOpen()
    const diff = this.incompatibility(other)
    if (diff !== undefined)
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        `rotator: expected the same configuration, seeds and rotation count, received different ${diff}`,
      )
    for (let i = 0; i < this.generations; i++) this.gens[i].merge(other.gens[i])
  }

  /**
   * What this replica added since its last sync, per generation (see `Sketch.takeDelta`).
   * A generation created since the last sync starts from a zero baseline.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  takeDelta(): RotatorDelta {
    this.assertOpen()
    return new RotatorDelta(
      this.completed,
      this.periodMs,
      this.seed,
      this.gens.map((g) => g.takeDelta()),
    )
  }

  /**
   * Apply another replica's delta: each generation delta of index g (= delta.rotations + i)
   * goes into this rotator's generation of the same index; generations this rotator has
   * already retired or not yet created are skipped (align rotation counts with
   * {@link Rotator.rotateTo} to lose nothing).
   * @param delta a {@link RotatorDelta} or the bytes of `delta.serialize()`
   * @param options for bytes: `clock` (default this rotator's clock), `wallMs`
   * @returns the number of generations applied
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` (other shape, or another seed for
   * the same generation index); `ERR_GRUDGE_FORMAT_*`; `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  applyDelta(delta: RotatorDelta | Uint8Array, options?: DeserializeOptions): number {
    this.assertOpen()
    const d =
      delta instanceof Uint8Array
        ? RotatorDelta.deserialize(delta, { ...options, clock: options?.clock ?? this.clock })
        : delta
    if (!(d instanceof RotatorDelta))
      throw new GrudgeError(
        'ERR_GRUDGE_OPTION_INVALID',
        'applyDelta: expected a RotatorDelta or its bytes, received another value',
      )
    // generations of different sizes are compared by index below, so the cells per level
    // are left out of this first check of the configuration
    const shapeDiff = incompatibility(
      { ...shapeOf(this.gens[0]), cellsPerLevel: d.deltas[0].cellsPerLevel },
      d.deltas[0],
      true,
    )
    if (shapeDiff !== undefined) {
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        `rotator delta: expected the same configuration, received different ${shapeDiff}`,
      )
    }
    // every generation it would reach is checked before any is written: nothing half-applied
    for (let i = 0; i < d.deltas.length; i++) {
      const j = d.rotations + i - this.completed
      if (j < 0 || j >= this.generations) continue
      const diff = incompatibility(this.gens[j], d.deltas[i])
      if (diff !== undefined)
        throw new GrudgeError(
          'ERR_GRUDGE_MERGE_INCOMPATIBLE',
          `rotator delta: expected generation index ${d.rotations + i} of the same shape and seed, received different ${diff}`,
        )
    }
    let applied = 0
    for (let i = 0; i < d.deltas.length; i++) {
      const j = d.rotations + i - this.completed
      if (j < 0 || j >= this.generations) continue
      this.gens[j].applyDelta(d.deltas[i])
      applied++
    }
    return applied
  }

  /**
   * Set every generation's delta baseline to its current view (see `Sketch.markSynced`).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  markSynced(): void {
    this.assertOpen()
    for (const g of this.gens) g.markSynced()
  }

  private assertOpen(): void {
    if (this.closed)
      throw new GrudgeError(
        'ERR_GRUDGE_ROTATOR_CLOSED',
        'rotator: expected an open rotator, received one that was closed',
      )
  }
}

/**
 * Whether a generation of `from` cells per level can be folded into `to` ({@link Sketch.foldFrom}):
 * `from` a power of two dividing `to`.
 */
function canFold(from: number, to: number): boolean {
  return (from & (from - 1)) === 0 && to % from === 0
}

/**
 * A restored frame's generations must fit the budget's largest shape: a generation above it
 * would hold more than `sizing.maxBytes` (or `maxCellsPerLevel`) allows until it retires, up to
 * N periods. Refused rather than kept (the budget is a promise) or shrunk (the caller still holds
 * the frame: restore it with a budget that holds it). The oldest `retiring` generations (the
 * rotations missed while down, applied at the load) are not held, and not checked.
 * @throws {GrudgeError} `ERR_GRUDGE_SIZING_CONFLICT` naming the generation and both sizes
 */
function assertFrameFits(gens: readonly Sketch[], maxCellsPerLevel: number, retiring: number): void {
  gens.forEach((g, i) => {
    if (i >= retiring && g.cellsPerLevel > maxCellsPerLevel) {
      throw new GrudgeError(
        'ERR_GRUDGE_SIZING_CONFLICT',
        `rotator frame: generation ${i} holds ${g.cellsPerLevel} cells per level, above the ${maxCellsPerLevel} that option "sizing" allows; restore it with a budget that holds ${g.cellsPerLevel} (or without sizing)`,
      )
    }
  })
}
