import { GrudgeError, invalidOption } from '../errors.js'
import { parseSizeBytes } from '../sketch/sizing.js'
import { DEFAULT_LEVELS, SKETCH_BYTES_PER_CELL } from '../sketch/shape.js'
import {
  METER_BYTES,
  budgetBytesFor,
  budgetCellsPerLevel,
  resolveCells,
  type GenerationLoad,
  type SizingLimitEvent,
} from '../sketch/rotator-sizing.js'
import { telemetryMaxBytes } from './telemetry.js'
import { longPeriodTicker, systemClock, systemTicker, type Clock, type Ticker } from '../clock.js'
import { SipHasher, sipHash, Murmur3Hasher, type Hasher } from '../hash/hasher.js'
import { localStore, type ScoreStore, type StoreFactory } from './store.js'
import type { Decay } from '../sketch/shape.js'
import { optionKeys, type OptionNames } from '../options.js'

/** Sketch size, hashing, time and store shared by a limiter's policies. */
export interface PolicySketchOptions {
  /**
   * Memory budget of each policy's sketches, all generations together: bytes (a positive
   * integer) or a size string such as `'64MB'` (`B`, `KB`, `MB`, `GB`, powers of 1024). The
   * normal way to size: each policy takes L = `levels` (default 4) and the largest power-of-two
   * cells per level M ≤ 2^24 with 2 KiB + T + L × M × 16 B × (generations + ½) ≤ memory as its
   * largest shape (the ½: an early growth folds one generation at a time and holds the smaller
   * one, at most half of M, until that fold ends, spec/rotator.md §1): the 2 KiB is the load meter of the sizing and T the limiter's telemetry at its largest
   * (its HyperLogLog windows, (windowBuckets + 1) × 5 KiB, and 6 KiB of refused-key summaries: 36 KiB
   * by default), both counted
   * inside the budget. In process, each new generation is then sized from the load measured
   * over the one before (spec/rotator.md §1, spec/sizing.md §5): it grows and shrinks in powers
   * of two between 64 cells and that largest shape, so the policy never holds more than the
   * budget. The Redis sync store holds 45 B per cell and sizes its generations at that rate from
   * the same budget. Default 10 MiB + 2 KiB + 36 KiB (10,524,672 bytes: at most L = 4, M = 65,536
   * at 2 generations and the half of one an early growth holds while it folds, plus the meter
   * and the telemetry: a level drains 65,536 × rate per second,
   * enough for 3,000 requests/s at rate 1 with heavy hitters within 5 % of an exact GCRA in
   * aggregate; one by one, 0–5 of 50 fall outside ±5 % over a 150 s run, spec/sizing.md §2.6).
   * Given with both `levels` and `cellsPerLevel` their sketches and the telemetry must fit in it
   * (`ERR_GRUDGE_SIZING_CONFLICT`; a fixed shape has no meter); a budget below 2 KiB + T +
   * L × 16 cells × 16 B × (generations + ½) throws `ERR_GRUDGE_SIZING_BUDGET`.
   */
  memory?: number | string
  /** L, levels per sketch: integer in [1, 16]. Default 4. */
  levels?: number
  /** M, cells per level: integer in [16, 2^24]. Given, it fixes the shape (no budget is applied unless `memory` is also given, which it must fit). Default: from `memory`. */
  cellsPerLevel?: number
  /** N, generations of each Rotator: integer in [2, 16]. Default 2 (each admitted request writes every generation, so fewer is faster; a misjudgement lasts at most N × periodMs). */
  generations?: number
  /**
   * Rotation period in ms. Default: per policy, the shortest period that never forgives
   * debt early, `ceil(drainMs / (N − 1))` (drainMs: time for a full score to drain; see each
   * policy). A period shorter than that throws `ERR_GRUDGE_ROTATOR_AMNESTY`.
   */
  periodMs?: number
  /** Hash function; default `sipHash()` with a random secret seed (request keys are attacker-chosen). */
  hasher?: Hasher
  /** Time source in ms; default the monotonic system clock. Tests pass a FakeClock. */
  clock?: Clock
  /** Ticker for rotation; default an unref'd timer. Tests pass a FakeTicker. */
  ticker?: Ticker
  /** Where scores live; default `localStore()` (in-process Rotators). Pass one factory to several limiters to share it. */
  store?: StoreFactory
}

/**
 * The names of {@link PolicySketchOptions} as a typed table: the one list that the
 * Limiter's and the adapters' option tables spread into theirs.
 * @internal
 */
export const POLICY_SKETCH_OPTION_NAMES: OptionNames<PolicySketchOptions> = Object.freeze({
  memory: true,
  levels: true,
  cellsPerLevel: true,
  generations: true,
  periodMs: true,
  hasher: true,
  clock: true,
  ticker: true,
  store: true,
})

/** The option names of {@link PolicySketchOptions}. */
export const POLICY_SKETCH_OPTION_KEYS = optionKeys<PolicySketchOptions>(POLICY_SKETCH_OPTION_NAMES)

/** {@link PolicySketchOptions} with defaults filled in and checked. */
export interface ResolvedSketchOptions {
  /** L, levels per sketch: integer in [1, 16]; default 4. */
  readonly levels: number
  /** M, cells per level: a power of two in [16, 2^24] from the budget, or the `cellsPerLevel` given. */
  readonly cellsPerLevel: number
  /** The memory budget in bytes of each policy (all generations), or undefined for a fixed shape given as `cellsPerLevel` alone. */
  readonly memoryBytes: number | undefined
  /**
   * Bytes of each policy's budget held for the limiter's telemetry (its HyperLogLog windows,
   * {@link telemetryMaxBytes}); the policy's store gets the rest. 0 outside a Limiter.
   * @internal
   */
  readonly reservedBytes?: number
  /** Whether the shape was given (`cellsPerLevel`) and stays fixed, rather than picked from the budget. */
  readonly fixedShape: boolean
  /** N, generations of each Rotator: integer in [2, 16]; default 2. */
  readonly generations: number
  /** Rotation period in ms, or undefined to let each policy pick its shortest safe period. */
  readonly periodMs: number | undefined
  /** Hash function; default `sipHash()` with a random secret seed. */
  readonly hasher: Hasher
  /** Time source in ms; default the monotonic system clock. */
  readonly clock: Clock
  /** Ticker driving rotation; default an unref'd timer. */
  readonly ticker: Ticker
  /** Where scores live; default `localStore()`. */
  readonly store: StoreFactory
  /**
   * Receives one-time notices the policies cannot throw (a budget that cannot meet the sizing
   * target); the Limiter routes them to its telemetry's `warn` (the framework logger).
   * @internal
   */
  readonly notify?: (message: string) => void
}

function int(name: string, v: unknown, lo: number, hi: number, dflt: number): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    invalidOption(name, `an integer in [${lo}, ${hi}]`, v)
  return v
}

/**
 * The default memory budget of each policy: 10 MiB of cells at the largest shape (4 × 65,536 ×
 * 16 B × 2.5: two generations and the half of one an early growth holds while it folds), the
 * 2 KiB load meter and the 36 KiB of a default Telemetry (its HyperLogLog windows and
 * refused-key summaries), 10,524,672 bytes (spec/sizing.md §5 says why).
 */
export const DEFAULT_POLICY_MEMORY_BYTES = 10 * 1024 * 1024 + METER_BYTES + telemetryMaxBytes()

/** The fewest cells per level a self-sized generation shrinks to (when the budget holds more). */
const SELF_SIZED_MIN_CELLS = 64

/**
 * The cells per level a self-sized policy's generation takes when its sizer asks for
 * `wanted`: rounded up to a power of two and clamped to [min(64, budget's), budget's]
 * (`resolveCells`, the Rotator's rule). The one home of the policies' range: their stores
 * and `grudge suggest --memory` with a load.
 * @param maxCellsPerLevel the budget's largest cells per level ({@link sketchBudget})
 * @param wanted what the sizer asked for
 * @internal
 */
export function selfSizedCells(maxCellsPerLevel: number, wanted: number): number {
  return resolveCells(selfSizedRange(maxCellsPerLevel), wanted, maxCellsPerLevel).cells
}

function selfSizedRange(maxCellsPerLevel: number): { minCellsPerLevel: number; maxCellsPerLevel: number } {
  return { minCellsPerLevel: Math.min(SELF_SIZED_MIN_CELLS, maxCellsPerLevel), maxCellsPerLevel }
}
/** The fewest cells per level a budget may give (the Limiter's minimum M). */
const MIN_CELLS = 16
/** The most cells per level a budget gives (and a Limiter's `cellsPerLevel` takes). @internal */
export const MAX_BUDGET_CELLS_PER_LEVEL = 1 << 24
const MAX_CELLS = MAX_BUDGET_CELLS_PER_LEVEL

/**
 * The cells per level of a policy's sketch from its budget: the largest power of two M in
 * [16, 2^24] with 2 KiB (the load meter, {@link METER_BYTES}) + `reservedBytes` (a Limiter's
 * telemetry) + L × M × 16 B × (generations + ½) ≤ memory ({@link budgetCellsPerLevel}: the half
 * of a generation an early growth holds while it folds); or the
 * `cellsPerLevel` given (a fixed shape, no meter), which must then fit a `memory` given beside
 * it with the reserved bytes. `grudge suggest --memory` calls this too.
 * @param reservedBytes bytes of the budget held for something else than the policy's store (≥ 0; default 0)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a bad `memory` or `cellsPerLevel`;
 * `ERR_GRUDGE_SIZING_BUDGET` for a budget below the reserved bytes, the meter and N generations of 16 cells per level;
 * `ERR_GRUDGE_SIZING_CONFLICT` for a given shape that does not fit the given budget
 * @internal
 */
export function sketchBudget(
  src: Pick<PolicySketchOptions, 'memory' | 'cellsPerLevel'>,
  levels: number,
  generations: number,
  prefix = '',
  reservedBytes = 0,
): { cellsPerLevel: number; memoryBytes: number | undefined; fixedShape: boolean } {
  const given = src.memory === undefined ? undefined : parseSizeBytes(prefix + 'memory', src.memory)
  const perCellRow = levels * SKETCH_BYTES_PER_CELL * generations
  const reserved = reservedBytes > 0 ? ` + ${reservedBytes} for the limiter's telemetry` : ''
  if (src.cellsPerLevel !== undefined) {
    const cellsPerLevel = int(prefix + 'cellsPerLevel', src.cellsPerLevel, MIN_CELLS, MAX_CELLS, MIN_CELLS)
    if (given !== undefined && cellsPerLevel * perCellRow + reservedBytes > given) {
      throw new GrudgeError(
        'ERR_GRUDGE_SIZING_CONFLICT',
        `option "${prefix}memory": expected ≥ ${cellsPerLevel * perCellRow + reservedBytes} bytes for the given shape (${levels} levels × ${cellsPerLevel} cells × ${SKETCH_BYTES_PER_CELL} B × ${generations} generations${reserved}), received ${given}; give either memory or levels and cellsPerLevel`,
      )
    }
    return { cellsPerLevel, memoryBytes: given, fixedShape: true }
  }
  const memoryBytes = given ?? DEFAULT_POLICY_MEMORY_BYTES
  const cellsPerLevel = budgetCellsPerLevel(
    memoryBytes,
    levels,
    generations,
    SKETCH_BYTES_PER_CELL,
    METER_BYTES + reservedBytes,
    MAX_CELLS,
    true,
  )
  if (!(cellsPerLevel >= MIN_CELLS)) {
    const needed = budgetBytesFor(
      MIN_CELLS,
      levels,
      generations,
      SKETCH_BYTES_PER_CELL,
      METER_BYTES + reservedBytes,
      true,
    )
    throw new GrudgeError(
      'ERR_GRUDGE_SIZING_BUDGET',
      `option "${prefix}memory": expected ≥ ${needed} bytes (${METER_BYTES} for the load meter${reserved} + ${levels} levels × ${MIN_CELLS} cells × ${SKETCH_BYTES_PER_CELL} B × (${generations} generations + the half of one an early growth holds while it folds)), received ${memoryBytes}`,
    )
  }
  return { cellsPerLevel, memoryBytes, fixedShape: false }
}

/**
 * Check and complete sketch options.
 * @param o the options (may be undefined)
 * @param prefix option path prefix for error messages
 * @param reservedBytes bytes of each policy's budget held for the limiter's telemetry (a Limiter passes its {@link Telemetry.maxSizeBytes}); default 0
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option; `ERR_GRUDGE_SIZING_BUDGET`
 * and `ERR_GRUDGE_SIZING_CONFLICT` from the budget (see {@link PolicySketchOptions.memory})
 * @internal
 */
export function resolveSketchOptions(
  o: PolicySketchOptions | undefined,
  prefix = '',
  reservedBytes = 0,
): ResolvedSketchOptions {
  const src = o ?? {}
  if (typeof src !== 'object' || src === null) invalidOption(prefix || 'options', 'an object', src)
  const levels = int(prefix + 'levels', src.levels, 1, 16, DEFAULT_LEVELS)
  const generations = int(prefix + 'generations', src.generations, 2, 16, 2)
  const { cellsPerLevel, memoryBytes, fixedShape } = sketchBudget(src, levels, generations, prefix, reservedBytes)
  let periodMs: number | undefined
  if (src.periodMs !== undefined) {
    if (typeof src.periodMs !== 'number' || !Number.isFinite(src.periodMs) || src.periodMs <= 0) {
      invalidOption(prefix + 'periodMs', 'a finite number > 0 (ms)', src.periodMs)
    }
    periodMs = src.periodMs
  }
  const hasher = src.hasher ?? sipHash()
  if (!(hasher instanceof SipHasher) && !(hasher instanceof Murmur3Hasher))
    invalidOption(prefix + 'hasher', 'sipHash() or murmur3()', hasher)
  const clock = src.clock ?? systemClock
  if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function')
    invalidOption(prefix + 'clock', 'an object with now(): number', clock)
  const ticker = src.ticker ?? systemTicker
  if (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function')
    invalidOption(prefix + 'ticker', 'an object with every(periodMs, fn)', ticker)
  const store = src.store ?? localStore()
  if (typeof store !== 'function') invalidOption(prefix + 'store', 'a StoreFactory function, e.g. localStore()', store)
  return Object.freeze({
    levels,
    cellsPerLevel,
    memoryBytes,
    reservedBytes,
    fixedShape,
    generations,
    periodMs,
    hasher,
    clock,
    ticker,
    store,
  })
}

/**
 * A positive finite number option.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`
 * @internal
 */
export function positive(name: string, v: unknown, dflt?: number): number {
  if (v === undefined && dflt !== undefined) return dflt
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) invalidOption(name, 'a finite number > 0', v)
  return v
}

/**
 * A finite number ≥ 0 option.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`
 * @internal
 */
export function nonNegative(name: string, v: unknown, dflt?: number): number {
  if (v === undefined && dflt !== undefined) return dflt
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) invalidOption(name, 'a finite number ≥ 0', v)
  return v
}

/**
 * The shortest rotation period that forgives nothing early: the youngest of N generations
 * starts empty and becomes the one that decides after N − 1 periods, so
 * (N − 1) · periodMs ≥ drainMs must hold, i.e. periodMs = ceil(drainMs / (N − 1)).
 * (The Rotator's own amnesty guard checks the same inequality.)
 * @param drainMs time in ms for the largest score to decay to where it no longer matters
 * @param generations N ≥ 2
 * @internal
 */
export function minimumPeriodMs(drainMs: number, generations: number): number {
  return Math.max(1, Math.ceil(drainMs / (generations - 1)))
}

/**
 * The store of one policy: what every policy asks of the store factory, written once. The
 * sketch holds scores in [0, hi] under `decay` with the Min aggregator (collisions only
 * make a policy stricter), rotated every `periodMs` by a ticker that survives periods past
 * 2^31 ms.
 * @param sketch the limiter's resolved sketch options
 * @param name the policy instance's store name (e.g. `limit:GET /a`)
 * @param periodMs the policy's rotation period in ms
 * @param decay the policy's decay
 * @param hi the score ceiling
 * @param sizeFor the policy's sizing rule: the cells per level its next generation needs for the
 * measured load (from spec/sizing.md's model); used when the shape comes from the budget
 * @param atKept the policy's figures at the size kept, for the budget notice (which of its
 * sizer's targets that size misses); without it the notice names no figure. The notice comes
 * from the first rotation whose sizing the budget caps, with that period's figures (the
 * Rotator's rule, `sizingLimitEvent`; spec/sizing.md §5, _The budget notice_)
 * @internal
 */
export function policyStore(
  sketch: ResolvedSketchOptions,
  name: string,
  periodMs: number,
  decay: Decay,
  hi: number,
  sizeFor?: (load: GenerationLoad) => number,
  atKept?: (load: GenerationLoad, cellsPerLevel: number) => string,
): ScoreStore {
  const notify = sketch.notify
  const sizing =
    sketch.fixedShape || sizeFor === undefined || sketch.memoryBytes === undefined
      ? undefined
      : {
          sizeNextGeneration: sizeFor,
          ...selfSizedRange(sketch.cellsPerLevel),
          onSizingLimit: (e: SizingLimitEvent) =>
            notify?.(
              e.kind === 'budget'
                ? `grudge: policy ${name}'s sizer asks for ${String(e.wanted)} cells per level for ${e.load.costPerSecond.toFixed(1)} admitted cost/s ` +
                    `over ~${Math.round(e.load.distinctKeys)} keys in the last ${(e.load.periodMs / 1000).toFixed(1)} s` +
                    (e.peakWindowCostPerSecond === undefined
                      ? ''
                      : ` (busiest check window ${e.peakWindowCostPerSecond.toFixed(1)} cost/s)`) +
                    ` (its targets: spec/sizing.md §8), but its memory budget of ${sketch.memoryBytes} bytes holds ${e.maxCellsPerLevel}; ` +
                    `kept ${e.usedCellsPerLevel}` +
                    (atKept === undefined ? '' : `, ${atKept(e.load, e.usedCellsPerLevel)}`) +
                    `; raise the policy's memory (this notice is logged once)`
                : `grudge: policy ${name} could not size its next generation (${e.wanted instanceof Error ? e.wanted.message : String(e.wanted)}); kept ${e.usedCellsPerLevel} cells per level`,
            ),
        }
  return sketch.store({
    name,
    sketch: {
      levels: sketch.levels,
      cellsPerLevel: sketch.cellsPerLevel,
      decay,
      lo: 0,
      hi,
      aggregator: 'min',
      hasher: sketch.hasher,
      clock: sketch.clock,
    },
    generations: sketch.generations,
    periodMs,
    clock: sketch.clock,
    ticker: longPeriodTicker(sketch.ticker, sketch.clock),
    sizing,
    ...(sketch.memoryBytes === undefined ? {} : { memoryBytes: sketch.memoryBytes - (sketch.reservedBytes ?? 0) }),
  })
}
