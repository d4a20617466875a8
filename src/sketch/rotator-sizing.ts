import { invalidOption } from '../errors.js'
import type { Hasher } from '../hash/hasher.js'
import { addHashToRegisters, estimateFromRegisters } from '../hash/hyperloglog-registers.js'
import { checkKnownOptions, optionKeys } from '../options.js'
import { MAX_CELLS, MAX_CELLS_PER_LEVEL, SKETCH_BYTES_PER_CELL, type Decay } from './shape.js'

// The self-sizing of a Rotator (`spec/rotator.md` §1, "Self-sizing"): what a generation
// measures while it is the youngest (distinct keys by HyperLogLog, admitted cost per
// second), the options that turn a measurement into the next generation's cells per
// level, and the checks of those options. The Rotator owns the schedule (when to measure,
// when to rotate, the promotion-age guard); this file owns the measurement and the sizes.

/**
 * What the youngest generation of a self-sized Rotator measured over a window of time:
 * the input of {@link RotatorSizing.sizeNextGeneration}. Every field is finite and ≥ 0.
 */
export interface GenerationLoad {
  /** Distinct keys written during the window (HyperLogLog estimate, p = 10: about 3.3 % standard error). */
  readonly distinctKeys: number
  /** Admitted cost per second during the window: the sum of the positive deltas written to the youngest generation (admitted `tryUpdate`s, `update`s, …), divided by the window's length in seconds. */
  readonly costPerSecond: number
  /** Length of the window in ms (> 0): the youngest generation's age at a rotation, the time since the previous check at a check. */
  readonly periodMs: number
  /** Cells per level of the youngest generation (the one measured). */
  readonly currentCellsPerLevel: number
  /** L, levels of every generation. */
  readonly levels: number
  /** N, generations of the Rotator. */
  readonly generations: number
  /** Decay of every generation (its `ratePerSecond` is the drain of a debt meter's cell, or λ). */
  readonly decay: Decay
  /** `'rotation'`: the window is the youngest generation's life, and the result sizes the generation appended now; `'check'`: a periodic check of the last `checkEveryMs`, and a result at least twice the youngest's size starts a larger generation early. */
  readonly reason: 'rotation' | 'check'
}

/** Reported through {@link RotatorSizing.onSizingLimit} when a sizing decision cannot be honoured. */
export interface SizingLimitEvent {
  /** `'budget'`: the sizer asked for more than the maximum, the maximum was used; `'invalid'`: the sizer returned something other than a finite number > 0, or threw, and the youngest's size was kept. */
  readonly kind: 'budget' | 'invalid'
  /** What the sizer returned (for `'invalid'`, the value or the thrown error). */
  readonly wanted: unknown
  /** Cells per level used instead. */
  readonly usedCellsPerLevel: number
  /** The maximum cells per level (the budget). */
  readonly maxCellsPerLevel: number
  /** The measurement the decision was made on: for `'budget'` always a rotation's (`load.reason === 'rotation'`, the youngest generation's whole life, `sizingLimitEvent`). */
  readonly load: GenerationLoad
  /** For `'budget'`: the highest admitted cost per second of a check window in that life (the busiest second at the default 1 s checks), ≥ 0; absent when not measured. */
  readonly peakWindowCostPerSecond?: number
}

/**
 * The one rule of when a sizing limit is reported (spec/sizing.md §5, _The budget notice_):
 * the event to hand to `onSizingLimit`, or undefined. Each kind is reported once (`reported`
 * remembers which, and is set here). `'invalid'` is reported at the first occurrence. `'budget'`
 * only on a rotation's decision (`load.reason === 'rotation'`), whose load is the youngest
 * generation's whole life, one period (less after an early growth): a check window's miss is
 * counted but not reported, since one window is a second of a ramp or a burst, whose figures
 * understate a steady shortfall (a ramp's first second read ρ 0.183 where the steady load was
 * ρ 0.376) or report one that is gone. So the notice comes at most one period after the budget
 * first falls short, and only if the period as a whole does. The Rotator and the Redis fleet
 * (sync and exact stores) call it.
 * @param sizing the resolved sizing (its maximum)
 * @param reported which kinds were reported already (updated)
 * @param kind what could not be honoured, or undefined for nothing
 * @param wanted the sizer's raw answer
 * @param usedCellsPerLevel the cells per level used instead
 * @param load the measurement of the decision
 * @param peakWindowCostPerSecond the busiest check window of the life (a rotation's), when measured
 * @internal
 */
export function sizingLimitEvent(
  sizing: Pick<ResolvedSizing, 'maxCellsPerLevel'>,
  reported: { budget: boolean; invalid: boolean },
  kind: SizingLimitEvent['kind'] | undefined,
  wanted: unknown,
  usedCellsPerLevel: number,
  load: GenerationLoad,
  peakWindowCostPerSecond?: number,
): SizingLimitEvent | undefined {
  if (kind === undefined || reported[kind]) return undefined
  if (kind === 'budget' && load.reason !== 'rotation') return undefined
  reported[kind] = true
  return {
    kind,
    wanted,
    usedCellsPerLevel,
    maxCellsPerLevel: sizing.maxCellsPerLevel,
    load,
    ...(kind === 'budget' && peakWindowCostPerSecond !== undefined ? { peakWindowCostPerSecond } : {}),
  }
}

/**
 * A generation grown early on a load jump (spec/rotator.md §1 "Self-sizing"), as a store
 * reports it beside its generations' shapes ({@link Rotator.earlyGenerations}, the Limiter's
 * `stats()`): in process a live generation folded into a larger shape in its place (the
 * deciding one included); in a Redis fleet a larger _twin_ written beside its generation (the base) and deciding in its place from
 * the fleet's recorded switch time.
 */
export interface EarlyGeneration {
  /** Position of the generation among the live ones, 0 the oldest (deciding), N − 1 the youngest. */
  readonly generation: number
  /** Cells per level of the generation grown early (for a pending twin, not its base's). */
  readonly cellsPerLevel: number
  /**
   * `false`: it was folded in its place (in process): it is the generation at `generation`, and its
   * cells are in the shapes and the bytes as any generation's. `true`: a fleet's twin, held
   * beside its base until it decides: the shapes show the base while it does not decide yet,
   * the twin once it does; the bytes count both while both are held.
   */
  readonly twin: boolean
  /**
   * Time in ms on the store's clock (the Rotator's or Limiter's clock in process, the fleet's
   * server time in sync mode) from which it decides. Pending in process: the earliest time the
   * schedule allows (its age reaches the promotion-age guard A and, with N > 2, the rotations
   * before it are due), reached at the first check at or after it; once deciding, when it began.
   */
  readonly decidesAtMs: number
  /** Whether it decides now (then `generation` is 0). */
  readonly deciding: boolean
}

/**
 * The `sizing` option of a Rotator: each new generation is sized from the load measured
 * over the current youngest one, in powers of two between `minCellsPerLevel` and the
 * budget. Without it a Rotator keeps the shape of `sketch` (the fixed shape).
 */
export interface RotatorSizing {
  /**
   * Cells per level wanted for the next generation, given the measured load: a finite
   * number > 0, rounded up to a power of two and clamped to [minCellsPerLevel, max]. Called
   * at every rotation (`load.reason === 'rotation'`) and at every check (`'check'`); keep
   * it cheap and pure (it runs from a timer: a throw is caught and reported as `'invalid'`).
   * Use the rates (`costPerSecond`, `distinctKeys / periodMs`), not the raw counts: the
   * windows of the two reasons differ in length.
   */
  sizeNextGeneration: (load: GenerationLoad) => number
  /** Smallest cells per level: a power of two in [1, 2^32]. Default 64. */
  minCellsPerLevel?: number
  /** Largest cells per level of any generation: a power of two ≥ minCellsPerLevel. Give this or `maxBytes`, not both. */
  maxCellsPerLevel?: number
  /**
   * The budget in bytes for the whole Rotator: every generation's cells (16 B each), the
   * smaller generation an early growth holds while it folds (one at a time, at most half the
   * largest) and the 2 KiB of the load meter. The maximum cells per level is the largest power
   * of two M with 2048 + (N + ½) × L × M × 16 ≤ maxBytes, so `sizeBytes()` never exceeds it
   * whatever the mix of shapes, during a growth too (spec/rotator.md §1, _Early growth by
   * folding_, Memory; delta baselines, made only by deltas, are outside). At least
   * 2048 + (N + ½) × L × minCellsPerLevel × 16. Give this or `maxCellsPerLevel`, not both.
   */
  maxBytes?: number
  /** How often the youngest generation's load is checked (and a due rotation performed), ms: finite, > 0, ≤ periodMs. Default min(1000, periodMs / 4). The ticker runs at this period instead of periodMs. */
  checkEveryMs?: number
  /**
   * Start a larger generation early when the load factor ρ = costPerSecond / (currentCellsPerLevel × decay rate)
   * measured over the last check passes this number (> 0; needs a decay with a rate). For a debt meter ρ
   * is the issue's load factor: the share of the cells' drain the admitted load takes. When neither
   * this nor `growEarlyWhen` is given, a check grows early when the sizer asks for at least twice the
   * youngest's cells per level.
   */
  growAtLoadFactor?: number
  /** Start a larger generation early when this returns true for the last check's load (overrides `growAtLoadFactor`). */
  growEarlyWhen?: (load: GenerationLoad) => boolean
  /**
   * Called when a decision cannot be honoured (see {@link SizingLimitEvent}): the first time
   * for each kind only, so an adapter can log it once, and `'budget'` only from a rotation's
   * decision (its figures are a whole period's; a check window's miss is not reported,
   * `sizingLimitEvent`); {@link Rotator.sizingLimitCount} counts every occurrence, check
   * windows' included. Default: none (the count still counts).
   */
  onSizingLimit?: (event: SizingLimitEvent) => void
}

/**
 * The option names of {@link RotatorSizing}; any other key is refused.
 * @internal
 */
export const ROTATOR_SIZING_KEYS = optionKeys<RotatorSizing>({
  sizeNextGeneration: true,
  minCellsPerLevel: true,
  maxCellsPerLevel: true,
  maxBytes: true,
  checkEveryMs: true,
  growAtLoadFactor: true,
  growEarlyWhen: true,
  onSizingLimit: true,
})

/** HyperLogLog precision of the load meter: 2^10 one-byte registers, 1.04/32 ≈ 3.3 % standard error. */
const METER_PRECISION = 10
/**
 * Bytes held by a load meter: two HyperLogLog register arrays of 2^10 bytes.
 * @internal
 */
export const METER_BYTES = 2 << METER_PRECISION

/**
 * The sizing options checked and resolved.
 * @internal
 */
export interface ResolvedSizing {
  readonly sizeNextGeneration: (load: GenerationLoad) => number
  readonly minCellsPerLevel: number
  readonly maxCellsPerLevel: number
  readonly checkEveryMs: number
  readonly growAtLoadFactor: number | undefined
  readonly growEarlyWhen: ((load: GenerationLoad) => boolean) | undefined
  readonly onSizingLimit: ((event: SizingLimitEvent) => void) | undefined
}

function isPowerOfTwo(n: unknown): n is number {
  return (
    typeof n === 'number' &&
    Number.isInteger(n) &&
    n >= 1 &&
    n <= MAX_CELLS_PER_LEVEL &&
    2 ** Math.round(Math.log2(n)) === n
  )
}

/** The largest power of two ≤ x (x ≥ 1), or 0 for x < 1. */
function floorPowerOfTwo(x: number): number {
  if (!(x >= 1)) return 0
  let p = 2 ** Math.floor(Math.log2(x))
  while (p > x) p /= 2
  while (p * 2 <= x) p *= 2
  return p
}

/**
 * The cells per level a memory budget holds: the largest power of two M ≤ `maxCells` with
 * `reservedBytes + (generations + h) × levels × M × bytesPerCell ≤ memoryBytes`, or 0 when not
 * even M = 1 fits, where h = 1/2 when `foldHeld` (an in-process early growth folds one generation
 * at a time and holds the smaller one it replaces, at most M / 2, until its fold ends: so the
 * live generations and that one stay within the budget; spec/rotator.md §1, _Early growth by
 * folding_, Memory), else 0. The one rule of every budget: the Limiter's `memory` (16 B per
 * cell, the 2 KiB load meter and the limiter's telemetry reserved), a Rotator's
 * `sizing.maxBytes` and `grudge suggest --memory` (all with `foldHeld`), and the Redis sync
 * store (which holds more per cell, and whose fleet growth caps its twins and their bases at
 * N × M: spec/cluster.md "Early growth").
 * @param memoryBytes the budget in bytes (finite, > 0)
 * @param levels L ≥ 1
 * @param generations N ≥ 1
 * @param bytesPerCell what the store holds per cell, in bytes (16 for a Sketch)
 * @param reservedBytes what the budget holds besides the cells, in bytes (≥ 0)
 * @param maxCells the most cells per level (≥ 1)
 * @param foldHeld whether the budget also holds a fold's smaller generation (half a generation)
 * @internal
 */
export function budgetCellsPerLevel(
  memoryBytes: number,
  levels: number,
  generations: number,
  bytesPerCell: number,
  reservedBytes: number,
  maxCells: number,
  foldHeld: boolean,
): number {
  const rows = foldHeld ? generations + 0.5 : generations
  return floorPowerOfTwo(Math.min(maxCells, Math.floor((memoryBytes - reservedBytes) / (rows * levels * bytesPerCell))))
}

/**
 * The bytes a budget needs for `cellsPerLevel` cells per level at most: the inverse of
 * {@link budgetCellsPerLevel}, `reservedBytes + (generations + h) × levels × cellsPerLevel ×
 * bytesPerCell` (h as there).
 * @internal
 */
export function budgetBytesFor(
  cellsPerLevel: number,
  levels: number,
  generations: number,
  bytesPerCell: number,
  reservedBytes: number,
  foldHeld: boolean,
): number {
  const rows2 = foldHeld ? 2 * generations + 1 : 2 * generations
  return reservedBytes + (rows2 * levels * cellsPerLevel * bytesPerCell) / 2
}

/**
 * The smallest power of two ≥ x (x > 0).
 * @internal
 */
export function ceilPowerOfTwo(x: number): number {
  if (x <= 1) return 1
  let p = 2 ** Math.ceil(Math.log2(x))
  while (p / 2 >= x) p /= 2
  while (p < x) p *= 2
  return p
}

/**
 * Check the `sizing` option of a Rotator against its shape.
 * @param levels L of every generation (checked by the caller: an integer ≥ 1)
 * @param generations N
 * @param periodMs the rotation period
 * @param decay the generations' decay
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad `sizing.*` option; also
 * a budget too small for N generations of `minCellsPerLevel` (the message gives the
 * smallest budget)
 * @internal
 */
export function checkSizing(
  sizing: RotatorSizing,
  levels: number,
  generations: number,
  periodMs: number,
  decay: Decay,
): ResolvedSizing {
  if (typeof sizing !== 'object' || sizing === null) invalidOption('sizing', 'an object (RotatorSizing)', sizing)
  checkKnownOptions(sizing, ROTATOR_SIZING_KEYS, 'sizing.')
  if (typeof sizing.sizeNextGeneration !== 'function')
    invalidOption('sizing.sizeNextGeneration', 'a function (load) => cellsPerLevel', sizing.sizeNextGeneration)
  const min = sizing.minCellsPerLevel ?? 64
  if (!isPowerOfTwo(min)) invalidOption('sizing.minCellsPerLevel', 'a power of two in [1, 2^32]', min)
  if ((sizing.maxCellsPerLevel === undefined) === (sizing.maxBytes === undefined)) {
    invalidOption(
      'sizing.maxCellsPerLevel',
      'exactly one of sizing.maxCellsPerLevel and sizing.maxBytes (the budget)',
      sizing.maxCellsPerLevel,
    )
  }
  let max: number
  if (sizing.maxBytes !== undefined) {
    const bytes = sizing.maxBytes
    if (typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes <= 0)
      invalidOption('sizing.maxBytes', 'a finite number of bytes > 0', bytes)
    const smallest = budgetBytesFor(min, levels, generations, SKETCH_BYTES_PER_CELL, METER_BYTES, true)
    if (bytes < smallest) {
      invalidOption(
        'sizing.maxBytes',
        `at least ${smallest} bytes (2048 for the load meter + ${generations + 0.5} × ${levels} levels × ${min} cells × 16 B: ${generations} generations and the half of one an early growth holds while it folds)`,
        bytes,
      )
    }
    max = budgetCellsPerLevel(bytes, levels, generations, SKETCH_BYTES_PER_CELL, METER_BYTES, MAX_CELLS_PER_LEVEL, true)
  } else {
    max = sizing.maxCellsPerLevel!
    if (!isPowerOfTwo(max)) invalidOption('sizing.maxCellsPerLevel', 'a power of two in [1, 2^32]', max)
    if (max < min) invalidOption('sizing.maxCellsPerLevel', `a power of two ≥ sizing.minCellsPerLevel (${min})`, max)
  }
  while (levels * max > MAX_CELLS) max /= 2
  if (max < min) invalidOption('sizing.minCellsPerLevel', `levels × cells ≤ 2^30 (levels = ${levels})`, min)
  const check = sizing.checkEveryMs ?? Math.min(1000, periodMs / 4)
  if (typeof check !== 'number' || !Number.isFinite(check) || check <= 0 || check > periodMs)
    invalidOption('sizing.checkEveryMs', `a finite number of ms in (0, periodMs = ${periodMs}]`, check)
  const rho = sizing.growAtLoadFactor
  if (rho !== undefined) {
    if (typeof rho !== 'number' || !Number.isFinite(rho) || rho <= 0)
      invalidOption('sizing.growAtLoadFactor', 'a finite number > 0', rho)
    if (!(decay.ratePerSecond > 0))
      invalidOption('sizing.growAtLoadFactor', 'a decay with a rate (linear or exponential), not none', decay.kind)
  }
  if (sizing.growEarlyWhen !== undefined && typeof sizing.growEarlyWhen !== 'function')
    invalidOption('sizing.growEarlyWhen', 'a function (load) => boolean', sizing.growEarlyWhen)
  if (sizing.onSizingLimit !== undefined && typeof sizing.onSizingLimit !== 'function')
    invalidOption('sizing.onSizingLimit', 'a function (event) => void', sizing.onSizingLimit)
  return Object.freeze({
    sizeNextGeneration: sizing.sizeNextGeneration,
    minCellsPerLevel: min,
    maxCellsPerLevel: max,
    checkEveryMs: check,
    growAtLoadFactor: rho,
    growEarlyWhen: sizing.growEarlyWhen,
    onSizingLimit: sizing.onSizingLimit,
  })
}

/**
 * A sizer's answer made a size: rounded up to a power of two and clamped to
 * [minCellsPerLevel, maxCellsPerLevel]; an answer that is not a finite number > 0 keeps
 * `currentCellsPerLevel`. `limit` names what could not be honoured ({@link SizingLimitEvent}).
 * The one rule for the Rotator and the Redis sync store.
 * @internal
 */
export function resolveCells(
  sizing: Pick<ResolvedSizing, 'minCellsPerLevel' | 'maxCellsPerLevel'>,
  wanted: unknown,
  currentCellsPerLevel: number,
): { cells: number; limit?: SizingLimitEvent['kind'] } {
  if (typeof wanted !== 'number' || !Number.isFinite(wanted) || wanted <= 0)
    return { cells: currentCellsPerLevel, limit: 'invalid' }
  const cells = Math.max(sizing.minCellsPerLevel, ceilPowerOfTwo(wanted))
  if (cells <= sizing.maxCellsPerLevel) return { cells }
  return { cells: sizing.maxCellsPerLevel, limit: 'budget' }
}

/**
 * Ask the sizer for the next generation's size and make it one ({@link resolveCells}): a sizer
 * that throws counts as an invalid answer (its error is the `wanted` a {@link SizingLimitEvent}
 * reports). The one call for the Rotator and the Redis fleet (sync and exact stores).
 * @param sizing the resolved sizing
 * @param load the load measured over the current generation
 * @returns the cells per level to use, what could not be honoured (if anything), and the
 *   sizer's raw answer (a number, or what it threw)
 * @internal
 */
export function sizeFromLoad(
  sizing: Pick<ResolvedSizing, 'sizeNextGeneration' | 'minCellsPerLevel' | 'maxCellsPerLevel'>,
  load: GenerationLoad,
): { cells: number; limit?: SizingLimitEvent['kind']; wanted: unknown } {
  let wanted: unknown
  try {
    wanted = sizing.sizeNextGeneration(load)
  } catch (e) {
    wanted = e
  }
  return { ...resolveCells(sizing, wanted, load.currentCellsPerLevel), wanted }
}

/**
 * The shrink margin of a rotation (spec/rotator.md §1 "Self-sizing", _Hysteresis_): a
 * generation is appended smaller than the youngest only with the size the sizer asks for at
 * this many times the load, the larger of the youngest's life rate and its busiest check
 * window (distinct keys scaled alike). A factor of 2 is one power of two of headroom: the
 * load a size was shrunk for may double before the smaller size misses the target.
 * @internal
 */
export const SHRINK_LOAD_MARGIN = 2

/**
 * The size of the generation appended at a rotation, with hysteresis: the one rule for the
 * Rotator and the Redis fleet's proposals ({@link sizeFromLoad} at `load`, then for a
 * shrink the margin of {@link SHRINK_LOAD_MARGIN}).
 *
 * - a grow (the sizer asks for more than `load.currentCellsPerLevel`, or the budget caps
 *   it) is taken at once: a delayed grow refuses innocent clients;
 * - a shrink goes to the larger of the sizer's answer at `load` and its answer at
 *   `SHRINK_LOAD_MARGIN × max(load.costPerSecond, peakWindowCostPerSecond)` (and as many
 *   times the distinct keys), never above the current size: the smaller size must meet the
 *   target at twice the load, and must not be one that the life's busiest check window
 *   would have grown again (the flapping of spec/rotator.md: a 1-s window of one client's
 *   burst grew the youngest early, the rotation on the hour's mean shrank it back, every
 *   generation). An invalid answer at the margin keeps the current size.
 *
 * A load that falls for good is shrunk for at the first rotation whose youngest lived
 * wholly at the lower load (at most two rotations after the fall).
 * @param sizing the resolved sizing
 * @param load the youngest generation's load over its life (`reason: 'rotation'`)
 * @param peakWindowCostPerSecond the highest admitted cost per second of a check window in
 *   that life ({@link LoadMeter.peakWindowCostPerSecond}), ≥ 0
 * @returns as {@link sizeFromLoad}: the cells, what could not be honoured, the raw answer at `load`
 * @internal
 */
export function sizeNextWithHysteresis(
  sizing: Pick<ResolvedSizing, 'sizeNextGeneration' | 'minCellsPerLevel' | 'maxCellsPerLevel'>,
  load: GenerationLoad,
  peakWindowCostPerSecond: number,
): { cells: number; limit?: SizingLimitEvent['kind']; wanted: unknown } {
  const at = sizeFromLoad(sizing, load)
  const current = load.currentCellsPerLevel
  if (at.limit !== undefined || at.cells >= current) return at
  const heavier: GenerationLoad = {
    ...load,
    costPerSecond: SHRINK_LOAD_MARGIN * Math.max(load.costPerSecond, peakWindowCostPerSecond),
    distinctKeys: SHRINK_LOAD_MARGIN * load.distinctKeys,
  }
  const margin = sizeFromLoad(sizing, heavier)
  const cells = margin.limit === 'invalid' ? current : Math.min(current, Math.max(at.cells, margin.cells))
  return { cells, wanted: at.wanted }
}

/**
 * The early-growth rule of a check (spec/rotator.md §1 "Self-sizing", _Schedule_): the cells
 * per level of a larger generation to start now for the last check window's `load`, or 0 for
 * none. `growEarlyWhen(load)` when given, else ρ = costPerSecond / (currentCellsPerLevel ×
 * decay rate) > `growAtLoadFactor` when given, else the sizer asking for at least twice the
 * youngest's cells per level. The one rule for the Rotator and the Redis fleet (sync and exact
 * stores), each passing its own `decide` (the sizer's answer made a size, with its own
 * reporting of what could not be honoured).
 * @param sizing the resolved sizing
 * @param load the youngest generation's load over the last check window (`reason: 'check'`)
 * @param decide the sizer's answer for `load` as cells per level (a power of two within the budget)
 * @returns cells per level (> `load.currentCellsPerLevel` means grow), or 0
 * @internal
 */
export function earlyGrowthCells(
  sizing: Pick<ResolvedSizing, 'growEarlyWhen' | 'growAtLoadFactor'>,
  load: GenerationLoad,
  decide: (load: GenerationLoad) => number,
): number {
  if (sizing.growEarlyWhen !== undefined) return sizing.growEarlyWhen(load) ? decide(load) : 0
  if (sizing.growAtLoadFactor !== undefined) {
    const rho = load.costPerSecond / (load.currentCellsPerLevel * load.decay.ratePerSecond)
    return rho > sizing.growAtLoadFactor ? decide(load) : 0
  }
  const cells = decide(load)
  return cells >= 2 * load.currentCellsPerLevel ? cells : 0
}

/**
 * The initial cells per level of a self-sized Rotator: `sketch.cellsPerLevel` when given
 * (a power of two in [min, max]), else the maximum, so the first period is never
 * undersized (the first rotation shrinks it to what the load needs).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `sketch.cellsPerLevel`
 * @internal
 */
export function initialCellsPerLevel(sizing: ResolvedSizing, given: number | undefined): number {
  if (given === undefined) return sizing.maxCellsPerLevel
  if (!isPowerOfTwo(given) || given < sizing.minCellsPerLevel || given > sizing.maxCellsPerLevel) {
    invalidOption(
      'sketch.cellsPerLevel',
      `with sizing, a power of two in [${sizing.minCellsPerLevel}, ${sizing.maxCellsPerLevel}] (the first generation's size)`,
      given,
    )
  }
  return given
}

/**
 * The load meter of the youngest generation: two HyperLogLogs fed by the hash the
 * youngest generation computed for the key's cells (no second hash), one for the current
 * check window and one for the generation's life, and the admitted cost of each. The
 * window is folded into the generation at each check.
 * @internal
 */
export class LoadMeter {
  /** HyperLogLog registers of the current window and of the generation's life (p = METER_PRECISION). */
  private readonly window = new Uint8Array(1 << METER_PRECISION)
  private readonly life = new Uint8Array(1 << METER_PRECISION)
  /** [0] cost of the window, [1] cost of the generation before the window (a typed array: no boxing on the hot path). */
  private readonly cost = new Float64Array(2)
  /** The highest admitted cost per second of a closed check window since the last {@link reset} that did not keep it. */
  private peak = 0
  /** Clock time in ms at which the youngest generation began to be measured. */
  lifeStartMs: number
  /** Clock time in ms at which the current window began. */
  windowStartMs: number

  constructor(nowMs: number) {
    this.lifeStartMs = nowMs
    this.windowStartMs = nowMs
  }

  /** The hot path: count the key whose hash `hasher` holds, and a positive delta as admitted cost. */
  record(hasher: Hasher, delta: number): void {
    addHashToRegisters(this.window, METER_PRECISION, hasher.hashHi, hasher.hashLo)
    if (delta > 0) this.cost[0] += delta
  }

  /** The admitted cost recorded in the current window. */
  windowCost(): number {
    return this.cost[0]
  }

  /**
   * The window's measurement at `nowMs`, over at least `minMs` (default 0: the time since the
   * window began); undefined when no time has passed.
   */
  windowLoad(
    nowMs: number,
    base: Omit<GenerationLoad, 'distinctKeys' | 'costPerSecond' | 'periodMs'>,
    minMs = 0,
  ): GenerationLoad | undefined {
    const ms = Math.max(nowMs - this.windowStartMs, minMs)
    if (!(ms > 0)) return undefined
    return {
      ...base,
      distinctKeys: estimateFromRegisters(this.window, METER_PRECISION),
      costPerSecond: (this.cost[0] * 1000) / ms,
      periodMs: ms,
    }
  }

  /** The youngest generation's measurement over its life at `nowMs` (folds the window in). */
  lifeLoad(nowMs: number, base: Omit<GenerationLoad, 'distinctKeys' | 'costPerSecond' | 'periodMs'>): GenerationLoad {
    this.foldWindow()
    const ms = Math.max(1, nowMs - this.lifeStartMs)
    return {
      ...base,
      distinctKeys: estimateFromRegisters(this.life, METER_PRECISION),
      costPerSecond: ((this.cost[0] + this.cost[1]) * 1000) / ms,
      periodMs: ms,
    }
  }

  /** End the check window at `nowMs`: fold it into the generation's life, start a new one. */
  closeWindow(nowMs: number): void {
    const ms = nowMs - this.windowStartMs
    if (ms > 0) this.peak = Math.max(this.peak, (this.cost[0] * 1000) / ms)
    this.foldWindow()
    this.window.fill(0)
    this.cost[1] += this.cost[0]
    this.cost[0] = 0
    this.windowStartMs = nowMs
  }

  /** The life's registers become the union with the window's (register-wise maximum; idempotent). */
  private foldWindow(): void {
    const a = this.life
    const b = this.window
    for (let i = 0; i < a.length; i++) if (b[i] > a[i]) a[i] = b[i]
  }

  /**
   * The highest admitted cost per second of a check window closed since the last reset that
   * did not keep it: the busiest window of the youngest generation's life, across early
   * grows (what {@link sizeNextWithHysteresis} shrinks against). 0 before any window closed.
   */
  peakWindowCostPerSecond(): number {
    return this.peak
  }

  /**
   * A new youngest generation at `nowMs`: forget everything, and the busiest window unless
   * `keepPeak` (an early growth folds the youngest within the same life).
   */
  reset(nowMs: number, keepPeak = false): void {
    if (!keepPeak) this.peak = 0
    this.window.fill(0)
    this.life.fill(0)
    this.cost[0] = 0
    this.cost[1] = 0
    this.lifeStartMs = nowMs
    this.windowStartMs = nowMs
  }
}
