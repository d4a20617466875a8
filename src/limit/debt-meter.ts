import { GrudgeError, invalidOption } from '../errors.js'
import { linear } from '../sketch/decay.js'
import {
  DEBT_METER_MAX_LOAD_FACTOR,
  DEFAULT_TARGET_FALSE_REJECT as DEBT_METER_TARGET_FALSE_REJECT,
  SELF_SIZED_CELL_RANGE,
  debtMeterCellsForLoad,
  debtMeterLoadFactor,
  measuredClustering,
  requestsPerKeyOf,
  sketchFalsePositiveRate,
  type DebtMeterLoad,
} from '../sketch/sizing.js'
import type { GenerationLoad } from '../sketch/rotator-sizing.js'
import { policyStore, positive, type ResolvedSketchOptions } from './options.js'
import { suggestPeriodMs } from '../sketch/rotator-period.js'
import {
  localRotatorOf,
  resultFillerOf,
  type ResultFiller,
  type ScoreStore,
  type StoreResult,
  type StoreResultSlot,
} from './store.js'
import type { Rotator } from '../sketch/rotator.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** The load factor a self-sized debt meter stays under (spec/sizing.md §2.6; its home is sizing.ts, which `stats()` reads too). */
const HEAVY_HITTER_LOAD_FACTOR = DEBT_METER_MAX_LOAD_FACTOR

/** Options of the debt meter (`limit`). */
export interface DebtMeterOptions {
  /** Requests (cost units) per second that drain from a key's debt: finite, > 0. */
  rate: number
  /** Burst: the debt a key may carry and still be admitted, finite, > 0. Also the quota in the `RateLimit-Policy` field. */
  burst: number
  /** Cost of one request: a finite number in [0, burst]; default 1. (Adapters also accept `(req) => number`.) */
  cost?: number
  /** hi, the debt ceiling: finite, ≥ burst. Default 10 × burst: under a key-rotation flood cells keep accumulating past the burst, so the whole sketch admits at most about M·rate requests per second. */
  maxDebt?: number
  /** Policy name in the rate-limit fields; default `"default"`. */
  name?: string
}

/** The option names of {@link DebtMeterOptions}; any other key is refused. */
export const DEBT_METER_OPTION_KEYS = optionKeys<DebtMeterOptions>({
  rate: true,
  burst: true,
  cost: true,
  maxDebt: true,
  name: true,
})

/** The result of {@link DebtMeter.consume}. */
export interface DebtVerdict {
  /** Whether the cost fitted under the burst (or a failed store answered open). */
  admitted: boolean
  /** The key's debt after the call (NaN when a failed store answered). */
  debt: number
  /** Whether a failed shared store decided (see StoreResult.failure). */
  failure: 'open' | 'closed' | undefined
  /** Quota units left, floored, ≥ 0 (NaN on failure). */
  remaining: number
  /** Ms until the debt drains to 0 (admitted) or until this cost fits (denied). */
  resetMs: number
  /** Ms until this cost fits; 0 when admitted. */
  retryAfterMs: number
}

/**
 * The complete options of a {@link DebtMeter} (see {@link parseDebtMeterOptions}).
 * @internal
 */
export type DebtMeterConfig = Readonly<
  Pick<DebtMeter, 'rate' | 'burst' | 'cost' | 'maxDebt' | 'name' | 'windowMs' | 'periodMs'>
>

/**
 * Debt-meter options checked and complete: what {@link DebtMeter} holds, without its store. Pure: it opens no
 * store and starts no timer, so options can be checked at registration.
 * @param options the policy options
 * @param sketch the limiter's resolved sketch options (generations, periodMs)
 * @param prefix option path prefix for error messages
 * @throws {GrudgeError} as the {@link DebtMeter} constructor
 * @internal
 */
export function parseDebtMeterOptions(
  options: DebtMeterOptions,
  sketch: Pick<ResolvedSketchOptions, 'generations' | 'periodMs'>,
  prefix: string,
): DebtMeterConfig {
  if (typeof options !== 'object' || options === null)
    invalidOption(prefix.slice(0, -1), 'an object { rate, burst }', options)
  checkKnownOptions(options, DEBT_METER_OPTION_KEYS, prefix)
  const rate = positive(prefix + 'rate', options.rate)
  const burst = positive(prefix + 'burst', options.burst)
  // a burst below the default cost would refuse every request: name burst, the option that was set
  // (only when cost is not written at all: an adapter passes its cost function as `cost: undefined`)
  if (!('cost' in options) && burst < 1) {
    invalidOption(prefix + 'burst', `a number ≥ 1 (the default cost of a request), or a ${prefix}cost ≤ burst`, burst)
  }
  const cost = options.cost ?? 1
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || cost > burst) {
    invalidOption(prefix + 'cost', `a finite number in [0, burst = ${burst}] or a function`, cost)
  }
  const maxDebt = options.maxDebt === undefined ? 10 * burst : positive(prefix + 'maxDebt', options.maxDebt)
  if (maxDebt < burst) invalidOption(prefix + 'maxDebt', `a number ≥ burst (${burst})`, options.maxDebt)
  const name = options.name ?? 'default'
  if (typeof name !== 'string' || name.length === 0) invalidOption(prefix + 'name', 'a non-empty string', name)
  const windowMs = (burst / rate) * 1000
  const drainMs = (maxDebt / rate) * 1000
  const minPeriod = suggestPeriodMs(maxDebt, rate, sketch.generations)
  if (sketch.periodMs !== undefined && (sketch.generations - 1) * sketch.periodMs < drainMs) {
    throw new GrudgeError(
      'ERR_GRUDGE_ROTATOR_AMNESTY',
      `option "periodMs": expected ≥ ${minPeriod} ms ((generations − 1) · periodMs ≥ maxDebt / rate · 1000 = ${drainMs} ms), received ${sketch.periodMs}`,
    )
  }
  const periodMs = sketch.periodMs ?? minPeriod
  return Object.freeze({ rate, burst, cost, maxDebt, name, windowMs, periodMs })
}

/**
 * A debt meter (the GCRA / leaky-bucket reading of a decaying sketch): each key carries a
 * debt that drains linearly at `rate` per second, floored at 0 and clamped at `maxDebt`;
 * a request of cost c is admitted iff debt + c ≤ burst, and then adds c. A fresh key reads
 * 0 (a full bucket); collisions in the sketch only add debt, so they only make it stricter
 * (the Count-Min argument, Min aggregator). Scores live in a Rotator (via the ScoreStore
 * seam) whose period never forgives debt early: (N − 1)·periodMs ≥ maxDebt / rate · 1000.
 */
export class DebtMeter {
  /** Requests per second drained. */
  readonly rate: number
  /** The burst (quota). */
  readonly burst: number
  /** Default cost of a request. */
  readonly cost: number
  /** The debt ceiling hi. */
  readonly maxDebt: number
  /** Policy name for the rate-limit fields. */
  readonly name: string
  /** The store name of this policy instance (e.g. `limit:GET /a`, a tier's `limit:default:gold`), as `stats().memory.stores` names it. */
  readonly storeName: string
  /** Rotation period in ms actually used. */
  readonly periodMs: number
  /** Ms to restore a full quota from empty: burst / rate · 1000. */
  readonly windowMs: number
  /** Where the debts live. */
  readonly store: ScoreStore
  /** The Rotator of {@link DebtMeter.store} when that is the very store `localStore()` built (see {@link localRotatorOf}), else undefined. */
  private readonly local: Rotator | undefined
  /** The store's result-object-free decision when it has one (the Redis sync store, see {@link resultFillerOf}), else undefined. */
  private readonly filler: ResultFiller | undefined
  /** The store result {@link DebtMeter.filler} fills (one per meter, reused). */
  private readonly result: StoreResultSlot = { admitted: false, score: 0, failure: undefined }
  /** The verdict {@link DebtMeter.charge} fills on the synchronous path (one per meter, reused). */
  private readonly scratch: DebtVerdict = {
    admitted: false,
    debt: 0,
    failure: undefined,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
  }

  /**
   * @param options the policy options
   * @param sketch resolved sketch options
   * @param storeName unique name of this policy instance for the store (e.g. `limit:GET /a`)
   * @param prefix option path prefix for error messages (default `limit.`)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option (also a key that is
   * not an option of {@link DebtMeterOptions}, e.g. `limit.burts`, with the closest name
   * suggested); `ERR_GRUDGE_ROTATOR_AMNESTY` when `periodMs` is too short
   */
  constructor(options: DebtMeterOptions, sketch: ResolvedSketchOptions, storeName: string, prefix = 'limit.') {
    const c = parseDebtMeterOptions(options, sketch, prefix)
    this.rate = c.rate
    this.burst = c.burst
    this.cost = c.cost
    this.maxDebt = c.maxDebt
    this.name = c.name
    this.storeName = storeName
    this.windowMs = c.windowMs
    this.periodMs = c.periodMs
    const generations = sketch.generations
    this.store = policyStore(
      sketch,
      storeName,
      this.periodMs,
      linear(this.rate),
      this.maxDebt,
      (load) =>
        debtMeterCellsFor(
          c,
          generations,
          load.levels,
          load.costPerSecond,
          undefined,
          0,
          measuredClustering(generationRequestsPerKey(c, load)),
        ),
      (load, cells) => debtMeterAtSize(c, generations, load, cells),
    )
    this.local = localRotatorOf(this.store)
    this.filler = this.local === undefined ? resultFillerOf(this.store) : undefined
  }

  /**
   * Check a cost value from a cost function.
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a cost outside [0, burst] or not finite
   */
  checkCost(cost: unknown): number {
    if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0 || cost > this.burst) {
      invalidOption('limit.cost', `a cost in [0, burst = ${this.burst}]`, cost)
    }
    return cost
  }

  /**
   * Admit iff debt + cost ≤ burst, adding the cost when admitted.
   * @param key the request key
   * @param cost the request's cost (default the configured cost), in [0, burst]
   * @returns the verdict, synchronously for an in-process store
   */
  consume(key: string, cost: number = this.cost): DebtVerdict | Promise<DebtVerdict> {
    const r = this.store.tryConsume(key, cost, this.burst)
    if (r instanceof Promise) return r.then((v) => this.verdict(v, cost))
    return this.verdict(r, cost)
  }

  /**
   * {@link DebtMeter.consume} for the {@link Limiter}'s decision: on the synchronous path
   * (an in-process store) the verdict is this meter's one reused object, overwritten by the
   * next synchronous charge, so it must be read at once (the limiter copies its figures into
   * the Decision); a store answering with a Promise gets a fresh verdict per call.
   * @param key the request key
   * @param cost the request's cost (default the configured cost), in [0, burst]
   * @internal
   */
  charge(key: string, cost: number = this.cost): DebtVerdict | Promise<DebtVerdict> {
    const local = this.local
    if (local !== undefined) {
      // the local store's own rule (Rotator.consume), without its result object
      const before = local.consume(key, cost, this.burst)
      const admitted = before + cost <= this.burst // a NaN never admits
      return this.figures(this.scratch, admitted, admitted ? before + cost : before, cost)
    }
    const filler = this.filler
    if (filler !== undefined) {
      // the store's own tryConsume, its outcome written into this meter's one result
      const r = this.result
      filler.consumeInto(key, cost, this.burst, r)
      if (r.failure !== undefined) return this.fill(this.scratch, r, cost)
      return this.figures(this.scratch, r.admitted, r.score, cost)
    }
    const r = this.store.tryConsume(key, cost, this.burst)
    if (r instanceof Promise) return this.awaitVerdict(r, cost)
    return this.fill(this.scratch, r, cost)
  }

  // a method of its own: a function that makes a closure gets a context object at every
  // call, taken or not, and charge is on the synchronous path (test/plugins/alloc.test.ts)
  private awaitVerdict(r: Promise<StoreResult>, cost: number): Promise<DebtVerdict> {
    return r.then((v) => this.verdict(v, cost))
  }

  /** Translate a store answer into figures (all ms). */
  verdict(r: StoreResult, cost: number): DebtVerdict {
    return this.fill(
      { admitted: false, debt: 0, failure: undefined, remaining: 0, resetMs: 0, retryAfterMs: 0 },
      r,
      cost,
    )
  }

  private fill(v: DebtVerdict, r: StoreResult, cost: number): DebtVerdict {
    if (r.failure !== undefined) {
      v.admitted = r.failure === 'open'
      v.debt = NaN
      v.failure = r.failure
      v.remaining = NaN
      v.resetMs = NaN
      // the store, not the key, failed: the key's real wait is unknown, and cost / rate (up to
      // hours for a slow rate) would be a made-up figure; 1 s, as when the core's timeout decides
      v.retryAfterMs = r.failure === 'open' ? 0 : 1000
      return v
    }
    return this.figures(v, r.admitted, r.score, cost)
  }

  /** The verdict's figures (all ms) for a store that answered: `debt` is the key's debt after the call. */
  private figures(v: DebtVerdict, admitted: boolean, debt: number, cost: number): DebtVerdict {
    v.admitted = admitted
    v.debt = debt
    v.failure = undefined
    v.remaining = this.remainingOf(debt)
    if (admitted) {
      v.resetMs = this.resetMsOf(debt)
      v.retryAfterMs = 0
    } else {
      const wait = (Math.max(0, debt + cost - this.burst) / this.rate) * 1000
      v.resetMs = wait
      v.retryAfterMs = wait
    }
    return v
  }

  /**
   * Quota units left at a debt: floor(burst − debt), in [0, floor(burst)]; the epsilon
   * absorbs float noise of a drained debt (4.9999999 left is 5).
   * @param debt the key's debt after the charge, in cost units
   * @internal
   */
  remainingOf(debt: number): number {
    return Math.min(Math.floor(this.burst), Math.max(0, Math.floor(this.burst - debt + 1e-9)))
  }

  /**
   * Ms until a debt drains to 0 at this meter's rate: debt / rate · 1000.
   * @param debt the key's debt, in cost units
   * @internal
   */
  resetMsOf(debt: number): number {
    return (debt / this.rate) * 1000
  }

  /** Release the store (timers, connections). */
  close(): void | Promise<void> {
    return this.store.close()
  }
}

/** How a key's requests cluster, for {@link debtMeterLoad}: B and their spacing (spec/sizing.md §2.6). */
export type DebtMeterClustering = Pick<DebtMeterLoad, 'requestsPerKey' | 'requestSpacingMs' | 'firstRequestOnly'>

/**
 * B of a self-sized meter's measurement (spec/sizing.md §2.6 _Clustered arrivals_): the admitted
 * cost of the window over its distinct keys, in requests of `cost` ({@link requestsPerKeyOf}).
 * At a rotation the window is the youngest generation's life (a period); at a check, the last
 * check window (about a second: keys whose requests are a second or more apart count 1 there).
 * @internal
 */
export function generationRequestsPerKey(c: Pick<DebtMeterConfig, 'cost'>, load: GenerationLoad): number {
  return requestsPerKeyOf((load.costPerSecond * load.periodMs) / 1000, load.distinctKeys, c.cost)
}

/**
 * The capacity model's load of a debt meter (spec/sizing.md §2) from the admitted cost per
 * second it measured: `requestsPerSecond = costPerSecond / cost`, the meter's rate, burst,
 * cost and maxDebt, and its Rotator's generations and period (the carry-forward model, §2.5).
 * The one home of that mapping: the meter's sizer, `stats()`-style predictions in
 * `grudge replay` and `grudge suggest` read it here.
 * @param c the meter's checked options ({@link parseDebtMeterOptions})
 * @param generations N of its Rotator, integer in [2, 16]
 * @param costPerSecond admitted cost per second, all keys (finite, ≥ 0)
 * @param hotKeys keys held at their limit (finite, ≥ 0); default 0 (the meter's sizer measures none)
 * @param clustering `requestsPerKey` B (finite, ≥ 1; measured by {@link requestsPerKeyOf}; default 1)
 * and `requestSpacingMs` (default 0: a key's B requests lumped, an upper bound; spec/sizing.md §2.6)
 * @internal
 */
export function debtMeterLoad(
  c: Pick<DebtMeterConfig, 'rate' | 'burst' | 'cost' | 'maxDebt' | 'periodMs'>,
  generations: number,
  costPerSecond: number,
  hotKeys = 0,
  clustering: DebtMeterClustering = {},
): DebtMeterLoad {
  return {
    ...clustering,
    requestsPerSecond: costPerSecond / c.cost,
    rate: c.rate,
    burst: c.burst,
    cost: c.cost,
    maxDebt: c.maxDebt,
    hotKeys,
    generations,
    periodMs: c.periodMs,
  }
}

/**
 * The budget notice's figures of a debt meter at the size kept: which of its sizer's two targets
 * ({@link debtMeterCellsFor}: load factor ≤ 0.05, predicted false-reject rate ≤ 1e-5) that size
 * misses, at the admitted cost per second measured. The notice fires on the sizer's answer, so
 * usually on ρ (heavy hitters' accuracy) while fresh keys are still far under the false-reject
 * target: it says so instead of naming both.
 * @internal
 */
export function debtMeterAtSize(
  c: Pick<DebtMeterConfig, 'rate' | 'burst' | 'cost' | 'maxDebt' | 'periodMs'>,
  generations: number,
  load: GenerationLoad,
  cellsPerLevel: number,
): string {
  const m = debtMeterLoad(c, generations, load.costPerSecond, 0, measuredClustering(generationRequestsPerKey(c, load)))
  const rho = debtMeterLoadFactor(cellsPerLevel, m.requestsPerSecond ?? 0, c.rate, c.cost, 0)
  const fr = sketchFalsePositiveRate({ levels: load.levels, cellsPerLevel }, m)
  return (
    `at ${cellsPerLevel}: load factor ${rho.toFixed(3)} ${rho > HEAVY_HITTER_LOAD_FACTOR ? '>' : '≤'} ${HEAVY_HITTER_LOAD_FACTOR} ` +
    `(heavy hitters lose about ${(Math.min(1, rho) * 100).toFixed(0)} % of their rate, spec/sizing.md §2.6) and predicted false-reject rate ` +
    `${fr.toPrecision(2)} ${fr > DEBT_METER_TARGET_FALSE_REJECT ? '>' : '≤'} ${DEBT_METER_TARGET_FALSE_REJECT}`
  )
}

/**
 * The cells per level a self-sized debt meter asks for its next generation (before the
 * Rotator rounds and clamps it to its budget): the fewest, a power of two, at which the
 * predicted false-reject rate of {@link debtMeterLoad} is at most the target and the load
 * factor at most 0.05 (heavy hitters' aggregate within 5 % of an exact GCRA, spec/sizing.md §2.6), by
 * `debtMeterCellsForLoad`. The one home of the rule: the meter's sizer and `grudge suggest`.
 * @param c the meter's checked options
 * @param generations N of its Rotator
 * @param levels L, integer in [1, 64]
 * @param costPerSecond admitted cost per second, all keys (finite, ≥ 0)
 * @param targetFalseReject the rate to reach, in (0, 1); default 1e-5 (the meter's)
 * @param hotKeys keys held at their limit; default 0
 * @param clustering B and the spacing of a key's requests, as {@link debtMeterLoad}; default none (B = 1)
 * @returns M, a power of two in [16, 2^30]
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for a load out of the model's domain (a cost of 0)
 * @internal
 */
export function debtMeterCellsFor(
  c: Pick<DebtMeterConfig, 'rate' | 'burst' | 'cost' | 'maxDebt' | 'periodMs'>,
  generations: number,
  levels: number,
  costPerSecond: number,
  targetFalseReject?: number,
  hotKeys = 0,
  clustering: DebtMeterClustering = {},
): number {
  return debtMeterCellsForLoad(debtMeterLoad(c, generations, costPerSecond, hotKeys, clustering), {
    levels,
    targetFalseReject,
    ...SELF_SIZED_CELL_RANGE,
    maxLoadFactor: HEAVY_HITTER_LOAD_FACTOR,
  })
}
