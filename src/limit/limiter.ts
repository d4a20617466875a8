import { invalidOption } from '../errors.js'
import { AbuseScore, parseAbuseScoreOptions, type AbuseScoreOptions, type AbuseVerdict } from './abuse-score.js'
import { DebtMeter, parseDebtMeterOptions, type DebtMeterOptions, type DebtVerdict } from './debt-meter.js'
import {
  ceilSeconds,
  copyFigures,
  nonNegativeInt,
  decisionOf,
  DecisionFigures,
  READ_ABUSE,
  READ_FAIRNESS,
  READ_LIMIT,
  type Decision,
  type PolicyName,
} from './decision.js'
import {
  FeedbackScore,
  parseFeedbackScoreOptions,
  type FeedbackScoreOptions,
  type FairnessVerdict,
} from './feedback-score.js'
import {
  POLICY_SKETCH_OPTION_NAMES,
  resolveSketchOptions,
  type ResolvedSketchOptions,
  type PolicySketchOptions,
} from './options.js'
import { isPromise } from './settle.js'
import { buildTiers, isTiered, parseTieredOptions, unknownTier, type TieredDebtMeterOptions } from './tiers.js'
import { forgiveKey, peekKey, type ForgiveOptions, type KeyState } from './key-state.js'
import { Telemetry, telemetryMaxBytes } from './telemetry.js'
import { PinnedClock } from './pinned-clock.js'
import type { Clock } from '../clock.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Options of {@link Limiter}: the policies of one route (or one middleware) and where they keep scores. */
export interface LimiterOptions extends PolicySketchOptions {
  /** Name of this limiter, unique among limiters sharing a store (namespaces the store's state); default `default`. */
  name?: string
  /**
   * Debt meter (the adapters answer its denials 429): `{ rate, burst, … }`, or per-plan limits
   * `{ tiers: { free: { rate, burst }, pro: { rate, burst } } }` (each request then names its
   * tier, see {@link Limiter.decide}); false or absent for none.
   */
  limit?: DebtMeterOptions | TieredDebtMeterOptions | false
  /** Feedback score (503, or 429 with the adapters' `fairness.status`); false or absent for none. */
  fairness?: FeedbackScoreOptions | false
  /** Abuse score (403); false or absent for none. */
  abuse?: AbuseScoreOptions | false
  /** Uniform [0, 1) source for the feedback score's throttling; default Math.random. Tests inject a seeded one. */
  random?: () => number
  /** Counters to report into (shared by the limiters of one plugin); default a private one. */
  telemetry?: Telemetry
  /**
   * Longest wait in ms for a store that answers with a Promise; past it (or when the store
   * rejects) `onStoreError` decides. A safety net over the store's own timeout. Finite,
   * > 0; default 1000.
   */
  storeTimeoutMs?: number
  /** What a store timeout or rejection means: `'open'` (admit, no figures; default) or `'closed'` (deny, policy `store`: 503). */
  onStoreError?: 'open' | 'closed'
}

/** The option names of {@link LimiterOptions}; any other key is refused. */
export const LIMITER_OPTION_KEYS = optionKeys<LimiterOptions>({
  ...POLICY_SKETCH_OPTION_NAMES,
  name: true,
  limit: true,
  fairness: true,
  abuse: true,
  random: true,
  telemetry: true,
  storeTimeoutMs: true,
  onStoreError: true,
})

/** The limiter's own options (not its policies'), checked. */
interface TopLevel {
  readonly name: string
  readonly sketch: ResolvedSketchOptions
  readonly random: () => number
  readonly storeTimeoutMs: number
  readonly onStoreError: 'open' | 'closed'
}

function parseTopLevel(options: LimiterOptions, prefix: string): TopLevel {
  if (typeof options !== 'object' || options === null) invalidOption(prefix || 'options', 'an object', options)
  checkKnownOptions(options, LIMITER_OPTION_KEYS, prefix)
  const name = options.name ?? 'default'
  // the telemetry's HyperLogLogs are counted inside each policy's budget (spec/sizing.md §5)
  const tel = options.telemetry
  const reserved = tel instanceof Telemetry ? tel.maxSizeBytes() : telemetryMaxBytes()
  const sketch = resolveSketchOptions(options, prefix, reserved)
  const random = options.random ?? Math.random
  if (typeof random !== 'function') invalidOption(prefix + 'random', 'a function returning [0, 1)', random)
  const storeTimeoutMs = options.storeTimeoutMs ?? 1000
  if (typeof storeTimeoutMs !== 'number' || !Number.isFinite(storeTimeoutMs) || storeTimeoutMs <= 0)
    invalidOption(prefix + 'storeTimeoutMs', 'a finite number > 0 (ms)', storeTimeoutMs)
  const onStoreError = options.onStoreError ?? 'open'
  if (onStoreError !== 'open' && onStoreError !== 'closed')
    invalidOption(prefix + 'onStoreError', "'open' or 'closed'", onStoreError)
  return { name, sketch, random, storeTimeoutMs, onStoreError }
}

/**
 * Check limiter options as the {@link Limiter} constructor would, without building it: no
 * store is opened and no timer started (the adapters check their options at registration
 * with it, and build limiters later, per route).
 * @param options see {@link LimiterOptions}
 * @param prefix option path prefix for error messages
 * @throws {GrudgeError} as the {@link Limiter} constructor
 * @internal
 */
export function checkLimiterOptions(options: LimiterOptions, prefix = ''): void {
  const { sketch } = parseTopLevel(options, prefix)
  if (options.limit) {
    if (isTiered(options.limit)) parseTieredOptions(options.limit, sketch, prefix + 'limit.')
    else parseDebtMeterOptions(options.limit, sketch, prefix + 'limit.')
  }
  if (options.fairness) parseFeedbackScoreOptions(options.fairness, sketch, prefix + 'fairness.')
  if (options.abuse) parseAbuseScoreOptions(options.abuse, sketch, prefix + 'abuse.')
}

/** Coded errors that are the caller's bug (a bad cost or key) or the deployment's (a fleet mismatch), not a store failure. */
const CALLER_ERRORS = new Set<unknown>([
  'ERR_GRUDGE_OPTION_INVALID',
  'ERR_GRUDGE_VALUE_NOT_FINITE',
  'ERR_GRUDGE_KEY_INVALID',
  'ERR_GRUDGE_TIER_UNKNOWN',
  // a deployment error, not an outage: an instance with another seed or shape beside a fleet's
  // shared state (or without ioredis) must be loud, never absorbed by onStoreError 'open'
  'ERR_GRUDGE_CLUSTER_FINGERPRINT',
  'ERR_GRUDGE_CLUSTER_CLIENT',
])

/** What an adapter learned from a response, for the feedback and abuse scores. */
export interface Outcome {
  /** Whether the response counts as a failure for the feedback score. */
  failed: boolean
  /** Delta for the abuse score (0 for none). */
  abuseDelta: number
}

/**
 * The framework-free core of the adapters: a request key and its cost in, a
 * {@link Decision} out. Policies run in the order abuse score → feedback score → debt
 * meter; the first denial decides and later policies are not charged. The Decision names
 * the policy that denied; the status that means (403, 503 or 429) is the adapters'.
 * With in-process stores everything is synchronous; when a shared store answers
 * with a Promise, the Decision comes as a Promise.
 */
export class Limiter {
  /** Name of the limiter (default `default`); namespaces its state in a shared store. */
  readonly name: string
  /** Resolved sketch options shared by the policies (frozen); its `clock` is {@link Limiter.clock}. @internal */
  readonly sketch: ResolvedSketchOptions
  /** The limiter's clock (ms): the configured clock, pinned for the span of each synchronous decision so all its reads agree. */
  readonly clock: Clock
  /** The same clock, with its pin/unpin handles (internal). */
  private readonly pinnedClock: PinnedClock
  /** The figures of this limiter's synchronous decisions: one object, refilled by each (decideFigures). */
  private readonly figures = new DecisionFigures()
  /** Debt meter, or undefined when not configured; for a tiered limit the first tier's (see {@link Limiter.tiers}). */
  readonly limit: DebtMeter | undefined
  /** The tiers' debt meters by name for a tiered limit (`limit.tiers`), else undefined. */
  readonly tiers: ReadonlyMap<string, DebtMeter> | undefined
  /** The tier names of a tiered limit, in the order given; empty otherwise. */
  readonly tierNames: readonly string[]
  /** Feedback score, or undefined when not configured. */
  readonly fairness: FeedbackScore | undefined
  /** Abuse score, or undefined when not configured. */
  readonly abuse: AbuseScore | undefined
  /** Windowed counters this limiter reports into (given in the options or a private one). */
  readonly telemetry: Telemetry
  private readonly random: () => number
  private readonly storeTimeoutMs: number
  private readonly onStoreError: 'open' | 'closed'
  private closed = false
  /**
   * Called when a store failure is absorbed by `onStoreError` (a timeout, a rejection, or a
   * store answering with its failure fallback), with the error; the adapters log it through
   * the framework's logger. Undefined for none.
   * @internal
   */
  onStoreFailure: ((error: unknown) => void) | undefined = undefined
  /** Whether the telemetry buckets by this limiter's clock, so a decision's pinned reading serves both. */
  private readonly telemetrySharesClock: boolean

  /**
   * @param options see {@link LimiterOptions}
   * @param prefix option path prefix for error messages
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option, also a key that is
   * not an option of {@link LimiterOptions} or of a policy (`limit.burts`: the
   * message suggests the closest name); `ERR_GRUDGE_ROTATOR_AMNESTY`
   */
  constructor(options: LimiterOptions, prefix = '') {
    const top = parseTopLevel(options, prefix)
    this.name = top.name
    const resolved = top.sketch
    this.pinnedClock = new PinnedClock(resolved.clock)
    this.clock = this.pinnedClock
    // policies read the pinned clock (one clock read per decision); rotation timing reads the real one
    // one-time sizing notices reach the telemetry's warn (the framework logger), made below
    const notify = (message: string): void => this.telemetry.notice(message)
    this.sketch = Object.freeze({ ...resolved, clock: this.pinnedClock, notify })
    this.random = top.random
    this.storeTimeoutMs = top.storeTimeoutMs
    this.onStoreError = top.onStoreError
    if (options.limit && isTiered(options.limit)) {
      this.tiers = buildTiers(options.limit, this.sketch, `limit:${this.name}`, prefix + 'limit.')
      this.tierNames = Object.freeze([...this.tiers.keys()])
      this.limit = this.tiers.get(this.tierNames[0])
    } else {
      this.tiers = undefined
      this.tierNames = Object.freeze([])
      this.limit = options.limit
        ? new DebtMeter(options.limit, this.sketch, `limit:${this.name}`, prefix + 'limit.')
        : undefined
    }
    this.fairness = options.fairness
      ? new FeedbackScore(options.fairness, this.sketch, `fairness:${this.name}`, prefix + 'fairness.')
      : undefined
    this.abuse = options.abuse
      ? new AbuseScore(options.abuse, this.sketch, `abuse:${this.name}`, prefix + 'abuse.')
      : undefined
    this.telemetry = options.telemetry ?? new Telemetry({ clock: this.sketch.clock })
    this.telemetrySharesClock = this.telemetry.clock === resolved.clock
    const shape = {
      levels: this.sketch.levels,
      cellsPerLevel: this.sketch.cellsPerLevel,
      generations: this.sketch.generations,
    }
    for (const meter of this.meters())
      this.telemetry.addSketch({
        policy: 'limit',
        store: meter.storeName,
        ...shape,
        sizeBytes: () => meter.store.sizeBytes(),
        shape: meter.store.generationShapes?.bind(meter.store),
        debt: {
          rate: meter.rate,
          burst: meter.burst,
          cost: meter.cost,
          maxDebt: meter.maxDebt,
          generations: this.sketch.generations,
          periodMs: meter.periodMs,
        },
      })
    const fairness = this.fairness
    if (fairness !== undefined)
      this.telemetry.addSketch({
        policy: 'fairness',
        store: `fairness:${this.name}`,
        ...shape,
        sizeBytes: () => fairness.store.sizeBytes(),
        shape: fairness.store.generationShapes?.bind(fairness.store),
        score: { load: (scorePerSecond) => fairness.modelLoad(scorePerSecond) },
      })
    const abuse = this.abuse
    if (abuse !== undefined)
      this.telemetry.addSketch({
        policy: 'abuse',
        store: `abuse:${this.name}`,
        ...shape,
        sizeBytes: () => abuse.store.sizeBytes(),
        shape: abuse.store.generationShapes?.bind(abuse.store),
        score: { load: abuse.modelLoad, threshold: abuse.threshold },
      })
  }

  /** The debt meters: every tier's, the one meter's, or none. */
  private meters(): DebtMeter[] {
    if (this.tiers !== undefined) return [...this.tiers.values()]
    return this.limit !== undefined ? [this.limit] : []
  }

  /**
   * The debt meter a request of `tier` is charged in: the tier's for a tiered limit, the
   * one meter otherwise (where `tier` must be undefined), undefined without a debt meter.
   * A Map read: no allocation.
   * @param tier a tier name of `limit.tiers`, or undefined for an untiered limit
   * @throws {GrudgeError} `ERR_GRUDGE_TIER_UNKNOWN` for a tier the limit does not have, no
   * tier for a tiered limit, or a tier for an untiered one
   */
  meterOf(tier: string | undefined): DebtMeter | undefined {
    const tiers = this.tiers
    if (tiers === undefined) {
      if (tier !== undefined) unknownTier(this.tierNames, tier)
      return this.limit
    }
    const m = typeof tier === 'string' ? tiers.get(tier) : undefined
    if (m === undefined) unknownTier(this.tierNames, tier)
    return m
  }

  /** Whether any policy that decides per request is configured. */
  get active(): boolean {
    return this.limit !== undefined || this.fairness !== undefined || this.abuse !== undefined
  }

  /** Whether responses must be recorded (feedback or abuse score configured). */
  get recordsOutcomes(): boolean {
    return this.fairness !== undefined || this.abuse !== undefined
  }

  /**
   * Decide one request.
   * @param key the request key
   * @param cost the debt meter's cost (default its configured cost), in [0, burst] (the tier's burst for a tiered limit)
   * @param tier for a tiered limit (`limit.tiers`), the tier to charge: one of its names; undefined otherwise
   * @returns the Decision (with `tier` set); a Promise only when a store answered with one
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a cost out of range;
   * `ERR_GRUDGE_TIER_UNKNOWN` for a tier the limit does not have (or none for a tiered limit)
   */
  decide(key: string, cost?: number, tier?: string): Decision | Promise<Decision> {
    const f = this.decideFigures(key, cost, tier)
    return isPromise(f) ? f.then(decisionOf) : decisionOf(f)
  }

  /**
   * {@link Limiter.decide} as figures, for the adapters: on the synchronous path (in-process
   * stores) the answer is this limiter's one reused {@link DecisionFigures}, overwritten by
   * its next decision, so it must be read at once; an asynchronous answer is its own copy.
   * Same parameters, errors and effects as {@link Limiter.decide}.
   * @internal
   */
  decideFigures(key: string, cost?: number, tier?: string): DecisionFigures | Promise<DecisionFigures> {
    const meter = this.meterOf(tier)
    const pinned = this.pinnedClock.pin()
    let d: DecisionFigures | Promise<DecisionFigures>
    try {
      d = this.decideRaw(key, cost, meter, tier)
    } finally {
      if (pinned) this.pinnedClock.unpin()
    }
    return isPromise(d) ? this.bounded(d) : d
  }

  /**
   * The figures of a decision only the debt meter made ({@link DecisionFigures.debtOnly})
   * from the three figures it follows from, exactly as the decision had them.
   * @param into where to write them
   * @param debt the key's debt after the decision (`scores.limit`)
   * @param retryAfterMs the decision's `retryAfterMs` (0 when admitted)
   * @param tier the tier charged, or undefined for an untiered limit
   * @internal
   */
  refillDebtOnly(into: DecisionFigures, debt: number, retryAfterMs: number, tier: string | undefined): DecisionFigures {
    const meter = this.meterOf(tier)!
    if (retryAfterMs === 0)
      this.admit(debt, undefined, undefined, debt, meter, tier, meter.remainingOf(debt), meter.resetMsOf(debt), into)
    else this.deny('limit', debt, retryAfterMs, undefined, undefined, debt, meter, tier, meter.remainingOf(debt), into)
    into.debtOnly = true
    return into
  }

  /** Bound an asynchronous decision by storeTimeoutMs; a timeout or a store rejection becomes onStoreError's decision. */
  private bounded(p: Promise<DecisionFigures>): Promise<DecisionFigures> {
    return new Promise<DecisionFigures>((resolve) => {
      let done = false
      const fail = (error: unknown) => {
        if (done) return
        done = true
        this.onStoreFailure?.(error)
        this.telemetry.policy('store', this.onStoreError === 'open')
        resolve(
          copyFigures(
            this.onStoreError === 'open'
              ? this.admit(NaN, undefined, undefined, undefined, undefined, undefined, 0)
              : this.deny('store', NaN, 1000, undefined, undefined, undefined, undefined, undefined),
          ),
        )
      }
      // not unref'd: a request is waiting on it, and it lasts at most storeTimeoutMs
      const timer = setTimeout(
        () => fail(new Error(`the store did not answer within storeTimeoutMs = ${this.storeTimeoutMs} ms`)),
        this.storeTimeoutMs,
      )
      p.then(
        (d) => {
          clearTimeout(timer)
          if (done) return
          done = true
          resolve(d)
        },
        (err: unknown) => {
          clearTimeout(timer)
          // a coded grudge error (a bad cost, a bad key) is the caller's bug, not the store's
          if (err instanceof Error && CALLER_ERRORS.has((err as { code?: unknown }).code)) {
            done = true
            return resolve(Promise.reject(err))
          }
          fail(err)
        },
      )
    })
  }

  private decideRaw(
    key: string,
    cost: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
  ): DecisionFigures | Promise<DecisionFigures> {
    if (this.telemetrySharesClock) this.telemetry.requestAt(key, this.pinnedClock.now())
    else this.telemetry.request(key)
    if (cost !== undefined && meter !== undefined) meter.checkCost(cost)
    if (this.abuse === undefined) return this.afterAbuse(key, cost, meter, tier, undefined)
    const a = this.abuse.check(key)
    if (isPromise(a)) return this.awaitAbuse(key, cost, meter, tier, a)
    return this.afterAbuse(key, cost, meter, tier, a)
  }

  // the steps of decide() are methods, not closures, and carry the scores read so far as
  // numbers (NaN: not read), so the synchronous path allocates nothing but the Decision
  // and its scores, built once at the end (test/plugins/alloc.test.ts)
  private afterAbuse(
    key: string,
    cost: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
    a: AbuseVerdict | undefined,
  ): DecisionFigures | Promise<DecisionFigures> {
    const abuse = a !== undefined ? a.score : undefined
    if (a !== undefined) {
      this.telemetry.policy('abuse', a.admitted)
      if (!a.admitted) return this.deny('abuse', a.score, a.retryAfterMs, abuse, undefined, undefined, undefined, tier)
    }
    if (this.fairness === undefined) return this.afterFairness(key, cost, meter, tier, abuse, undefined)
    const f = this.fairness.check(key, this.random())
    if (isPromise(f)) return this.awaitFairness(key, cost, meter, tier, abuse, f)
    return this.afterFairness(key, cost, meter, tier, abuse, f)
  }

  private afterFairness(
    key: string,
    cost: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
    abuse: number | undefined,
    f: FairnessVerdict | undefined,
  ): DecisionFigures | Promise<DecisionFigures> {
    const fairness = f !== undefined ? f.score : undefined
    if (f !== undefined) {
      this.telemetry.policy('fairness', f.admitted)
      if (!f.admitted) {
        this.escalate(key)
        return this.deny('fairness', f.score, f.retryAfterMs, abuse, fairness, undefined, undefined, tier)
      }
    }
    if (meter === undefined) return this.admit(NaN, abuse, fairness, undefined, undefined, tier, 0)
    const d = meter.charge(key, cost)
    if (isPromise(d)) return this.awaitLimit(key, meter, tier, abuse, fairness, d)
    return this.afterLimit(key, meter, tier, abuse, fairness, d)
  }

  // the asynchronous continuations are methods of their own: a function that makes a
  // closure gets a context object at every call, taken or not (measured: ~10 B per
  // request on the synchronous path, test/plugins/alloc.test.ts)
  private awaitAbuse(
    key: string,
    cost: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
    a: Promise<AbuseVerdict>,
  ): Promise<DecisionFigures> {
    return a.then((v) => owned(this.afterAbuse(key, cost, meter, tier, v)))
  }

  private awaitFairness(
    key: string,
    cost: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
    abuse: number | undefined,
    f: Promise<FairnessVerdict>,
  ): Promise<DecisionFigures> {
    return f.then((v) => owned(this.afterFairness(key, cost, meter, tier, abuse, v)))
  }

  private awaitLimit(
    key: string,
    meter: DebtMeter,
    tier: string | undefined,
    abuse: number | undefined,
    fairness: number | undefined,
    d: Promise<DebtVerdict>,
  ): Promise<DecisionFigures> {
    return d.then((v) => copyFigures(this.afterLimit(key, meter, tier, abuse, fairness, v)))
  }

  private afterLimit(
    key: string,
    meter: DebtMeter,
    tier: string | undefined,
    abuse: number | undefined,
    fairness: number | undefined,
    d: DebtVerdict,
  ): DecisionFigures {
    if (d.failure !== undefined) {
      this.onStoreFailure?.(new Error(`the store answered with its failure fallback ('${d.failure}')`))
      this.telemetry.policy('store', d.admitted)
      if (d.admitted) return this.admit(NaN, abuse, fairness, d.debt, undefined, tier, 0)
      return this.deny('store', NaN, d.retryAfterMs, abuse, fairness, d.debt, undefined, tier)
    }
    this.telemetry.policy('limit', d.admitted)
    const debtOnly = abuse === undefined && fairness === undefined
    if (d.admitted) {
      const f = this.admit(d.debt, abuse, fairness, d.debt, meter, tier, d.remaining, d.resetMs)
      f.debtOnly = debtOnly
      return f
    }
    this.escalate(key)
    const f = this.deny('limit', d.debt, d.retryAfterMs, abuse, fairness, d.debt, meter, tier, d.remaining)
    f.debtOnly = debtOnly
    return f
  }

  /**
   * A refusal by the debt meter or the feedback score adds `abuse.refusalWeight` to the key's
   * abuse score (escalation: a client that keeps hammering past its limit reaches the
   * threshold and gets 403 until decay forgives it). No-op without it.
   */
  private escalate(key: string): void {
    const abuse = this.abuse
    if (abuse === undefined || abuse.refusalWeight === 0) return
    this.telemetry.scored('abuse', abuse.refusalWeight)
    const p = abuse.store.add(key, abuse.refusalWeight)
    if (isPromise(p)) p.catch((err: unknown) => this.onStoreFailure?.(err))
  }

  /**
   * The figures of an admission (without a quota, `remaining` and `resetMs` are none). Without
   * `refill` it is a new decision: counted in the telemetry and written to the reused
   * `this.figures`; with `refill` it refills the figures of a decision already counted
   * ({@link refillDebtOnly}), as {@link deny} does.
   */
  private admit(
    score: number,
    abuse: number | undefined,
    fairness: number | undefined,
    limit: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
    remaining: number,
    resetMs = NaN,
    refill?: DecisionFigures,
  ): DecisionFigures {
    if (refill === undefined) this.telemetry.outcome(true)
    const into = refill ?? this.figures
    into.admitted = true
    into.policy = undefined
    into.limit = meter !== undefined ? meter.burst : NaN
    into.remaining = meter !== undefined ? nonNegativeInt(remaining) : NaN
    into.resetMs = meter !== undefined ? resetMs : NaN
    into.retryAfterMs = 0
    into.score = score
    fillScores(into, abuse, fairness, limit)
    into.tier = tier
    into.debtOnly = false
    return into
  }

  /**
   * The figures of a denial: Retry-After is whole seconds (≥ 1), the same wait everywhere, so
   * header, reset field and body agree. Without `into` it is a new decision: counted in the
   * telemetry and written to the reused `this.figures`; with `into` it refills the figures of a
   * decision already counted ({@link refillDebtOnly}).
   */
  private deny(
    policy: PolicyName,
    score: number,
    retryAfterMs: number,
    abuse: number | undefined,
    fairness: number | undefined,
    limit: number | undefined,
    meter: DebtMeter | undefined,
    tier: string | undefined,
    remaining = NaN,
    refill?: DecisionFigures,
  ): DecisionFigures {
    let into = refill
    if (into === undefined) {
      this.telemetry.outcome(false)
      into = this.figures
    }
    const wait = Math.max(1, ceilSeconds(retryAfterMs)) * 1000
    into.admitted = false
    into.policy = policy
    into.limit = meter !== undefined ? meter.burst : NaN
    into.remaining = meter !== undefined ? nonNegativeInt(remaining) : NaN
    into.resetMs = meter !== undefined ? wait : NaN
    into.retryAfterMs = wait
    into.score = score
    fillScores(into, abuse, fairness, limit)
    into.tier = tier
    into.debtOnly = false
    return into
  }

  /**
   * Record a response's outcome for the feedback and abuse scores (no-op without them).
   * @returns a Promise only when a store answered with one
   */
  record(key: string, outcome: Outcome): void | Promise<void> {
    const pinned = this.pinnedClock.pin()
    let f: number | Promise<number> | undefined
    let a: number | Promise<number> | undefined
    try {
      // the scores' positive deltas are their capacity model's load (stats().perPolicy)
      if (this.fairness !== undefined) {
        if (outcome.failed) this.telemetry.scored('fairness', this.fairness.failureDelta)
        f = this.fairness.record(key, outcome.failed)
      }
      if (this.abuse !== undefined && outcome.abuseDelta !== 0) {
        this.telemetry.scored('abuse', outcome.abuseDelta)
        a = this.abuse.record(key, outcome.abuseDelta)
      }
    } finally {
      if (pinned) this.pinnedClock.unpin()
    }
    if (isPromise(f) || isPromise(a)) return Promise.all([f, a]).then(() => undefined)
  }

  /**
   * Read a key's scores without consuming anything (ERL's `get`, rate-limiter-flexible's
   * `get`): its debt, remaining quota and reset for the debt meter, its feedback and abuse
   * scores. Reads the deciding (oldest) generation, as a request would.
   * @param key the request key as the adapters derive it (`ip:203.0.113.7`, `fn:alice`; spec/http.md §2)
   * @param tier for a tiered limit, the tier to read (required then); undefined otherwise
   * @returns the key's state (always a Promise, whatever the store)
   * @throws {GrudgeError} (as a rejection) `ERR_GRUDGE_TIER_UNKNOWN`; `ERR_GRUDGE_OPTION_INVALID`
   * for a key that is not a string; `ERR_GRUDGE_LIMIT_STORE_FAILED` when a store failed
   */
  peek(key: string, tier?: string): Promise<KeyState> {
    return peekKey(this, key, tier)
  }

  /**
   * Forget a key's debt and scores (ERL's `resetKey`): each chosen store subtracts the key's
   * estimate E (the Min over its cells in the deciding generation) from each of the key's
   * cells in every generation, clamped at 0. The key then reads 0; a key sharing a cell with
   * it may read lower than its true score, by at most E (spec/limiter.md §Forgive). An exact
   * Redis store in its `onStoreError: 'local'` fallback lowers its in-process copy only, for
   * the outage (logged once through the telemetry's `warn`; spec/http.md §2.1.2).
   * @param key the request key (see {@link Limiter.peek})
   * @param options which policy (default every one) and, for a tiered limit, which tier (default every tier)
   * @throws {GrudgeError} (as a rejection) as {@link Limiter.forgive}
   */
  reset(key: string, options?: ForgiveOptions): Promise<void> {
    return forgiveKey(this, key, undefined, options, 'reset')
  }

  /**
   * Lower a key's debt (or score) by `amount`: subtracted from each of the key's cells in
   * every generation, clamped at 0, so the key reads max(0, E − amount); a key sharing a
   * cell may read lower than its true score by at most `amount` (spec/limiter.md §Forgive).
   * During an outage, as {@link Limiter.reset}.
   * @param key the request key (see {@link Limiter.peek})
   * @param amount finite, > 0, in the policy's units (cost units for `limit`); undefined: all of it, as {@link Limiter.reset}
   * @param options the policy (default `limit`) and, for a tiered limit, the tier (default every tier)
   * @throws {GrudgeError} (as a rejection) `ERR_GRUDGE_OPTION_INVALID` for a bad amount, key or
   * policy (also one the limiter does not have); `ERR_GRUDGE_TIER_UNKNOWN`;
   * `ERR_GRUDGE_LIMIT_STORE_FAILED` when a store failed (the key may be partly lowered)
   */
  forgive(key: string, amount?: number, options?: ForgiveOptions): Promise<void> {
    return forgiveKey(this, key, amount, options, amount === undefined ? 'reset' : 'forgive')
  }

  /** Memory of this limiter's sketches in bytes (every tier's, for a tiered limit). */
  sizeBytes(): number {
    let n = 0
    for (const p of [...this.meters(), this.fairness, this.abuse]) if (p !== undefined) n += p.store.sizeBytes()
    return n
  }

  /** Close every policy's store; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.meters().map((m) => m.close()), this.fairness?.close(), this.abuse?.close()])
  }
}

/** A decision reached after an await: its own figures (the limiter's are refilled by the next decision). */
function owned(f: DecisionFigures | Promise<DecisionFigures>): DecisionFigures | Promise<DecisionFigures> {
  return isPromise(f) ? f : copyFigures(f)
}

/** The scores read (undefined: not configured, or not read because an earlier policy denied); NaN is a score read. */
function fillScores(
  into: DecisionFigures,
  abuse: number | undefined,
  fairness: number | undefined,
  limit: number | undefined,
): void {
  into.abuse = abuse ?? NaN
  into.fairness = fairness ?? NaN
  into.debt = limit ?? NaN
  into.read =
    (abuse !== undefined ? READ_ABUSE : 0) |
    (fairness !== undefined ? READ_FAIRNESS : 0) |
    (limit !== undefined ? READ_LIMIT : 0)
}
