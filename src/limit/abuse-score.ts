import { invalidOption } from '../errors.js'
import { halfLife } from '../sketch/decay.js'
import { SELF_SIZED_CELL_RANGE, scoreCellsForLoad, type ScoreLoad } from '../sketch/sizing.js'
import { minimumPeriodMs, nonNegative, policyStore, positive, type ResolvedSketchOptions } from './options.js'
import { settle } from './settle.js'
import type { ScoreStore } from './store.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/**
 * Score deltas by response status: keys are an exact status (`'401'`), a class (`'4xx'`),
 * `'success'` (any status < 400) or `'default'`; the most specific match wins. Values are
 * finite numbers (negative forgives).
 */
export type AbuseWeights = Readonly<Record<string, number>>

/** Options of the abuse score (`abuse`). */
export interface AbuseScoreOptions {
  /** Deltas by status; default `{ 401: 1, 403: 1, 404: 0.2, success: -0.1 }`. Ignored by adapters when a `score(req, reply)` function is given. */
  weights?: AbuseWeights
  /** A key whose score is ≥ threshold is blocked (403): finite, > 0. Default 10. */
  threshold?: number
  /** Half-life of the exponential decay in ms: finite, > 0. Default 600 000 (10 min). */
  halfLifeMs?: number
  /** Score ceiling hi, ≥ threshold; default 4 × threshold, so a block lasts at most 2 half-lives after the last offence. */
  maxScore?: number
  /**
   * Escalation: what each request refused by the debt meter (429) or the feedback score adds
   * to the key's abuse score, so that a client that keeps hammering past its limit reaches
   * `threshold` and is blocked (403) until decay forgives it, as @fastify/rate-limit's `ban`
   * and rate-limiter-flexible's `blockDuration` do. Finite, ≥ 0; default 0 (refusals never
   * escalate). With weight w, about ceil(threshold / w) refusals within a half-life block
   * the key; the block then lasts halfLifeMs · log2(score / threshold) after the last one
   * (refusals by the abuse score itself add nothing, so decay always forgives).
   */
  refusalWeight?: number
}

/** The option names of {@link AbuseScoreOptions}; any other key is refused. */
export const ABUSE_SCORE_OPTION_KEYS = optionKeys<AbuseScoreOptions>({
  weights: true,
  threshold: true,
  halfLifeMs: true,
  maxScore: true,
  refusalWeight: true,
})

/** The result of {@link AbuseScore.check}. */
export interface AbuseVerdict {
  /** Whether the key's score is below the threshold (or a failed store answered open). */
  admitted: boolean
  /** The key's decayed score in [0, maxScore] (NaN when a failed store answered). */
  score: number
  /** Ms until the score decays below the threshold: halfLifeMs · log2(score / threshold); 0 when admitted. */
  retryAfterMs: number
}

/** Default weights. */
export const DEFAULT_ABUSE_WEIGHTS: AbuseWeights = Object.freeze({ '401': 1, '403': 1, '404': 0.2, success: -0.1 })

/**
 * The complete options of a {@link AbuseScore} (see {@link parseAbuseScoreOptions}).
 * @internal
 */
export type AbuseScoreConfig = Readonly<
  Pick<AbuseScore, 'weights' | 'threshold' | 'halfLifeMs' | 'maxScore' | 'periodMs' | 'refusalWeight'>
>

/**
 * Abuse-score options checked and complete: what {@link AbuseScore} holds, without its store. Pure: it opens no
 * store and starts no timer, so options can be checked at registration.
 * @param options the policy options
 * @param sketch the limiter's resolved sketch options (generations, periodMs)
 * @param prefix option path prefix for error messages
 * @throws {GrudgeError} as the {@link AbuseScore} constructor
 * @internal
 */
export function parseAbuseScoreOptions(
  options: AbuseScoreOptions,
  sketch: Pick<ResolvedSketchOptions, 'generations' | 'periodMs'>,
  prefix: string,
): AbuseScoreConfig {
  if (typeof options !== 'object' || options === null) invalidOption(prefix.slice(0, -1), 'an object', options)
  checkKnownOptions(options, ABUSE_SCORE_OPTION_KEYS, prefix)
  const given = options.weights ?? DEFAULT_ABUSE_WEIGHTS
  if (typeof given !== 'object' || given === null)
    invalidOption(prefix + 'weights', 'an object of status → delta', given)
  for (const [k, v] of Object.entries(given)) {
    if (!/^([1-5][0-9][0-9]|[1-5]xx|success|default)$/.test(k))
      invalidOption(`${prefix}weights.${k}`, "a status, 'Nxx', 'success' or 'default' key", k)
    if (typeof v !== 'number' || !Number.isFinite(v)) invalidOption(`${prefix}weights.${k}`, 'a finite number', v)
  }
  const weights = Object.freeze({ ...given })
  const threshold = positive(prefix + 'threshold', options.threshold, 10)
  const halfLifeMs = positive(prefix + 'halfLifeMs', options.halfLifeMs, 600_000)
  const maxScore = positive(prefix + 'maxScore', options.maxScore, 4 * threshold)
  if (maxScore < threshold) invalidOption(prefix + 'maxScore', `a number ≥ threshold (${threshold})`, options.maxScore)
  const refusalWeight = nonNegative(prefix + 'refusalWeight', options.refusalWeight, 0)
  // from maxScore to below 1/1000 of the threshold
  const drainMs = halfLifeMs * Math.log2((maxScore / threshold) * 1000)
  const periodMs = sketch.periodMs ?? minimumPeriodMs(drainMs, sketch.generations)
  return Object.freeze({ weights, threshold, halfLifeMs, maxScore, periodMs, refusalWeight })
}

/**
 * An abuse score: responses add weighted deltas to the key's score, which decays
 * exponentially with `halfLifeMs`; a key at or above `threshold` is blocked with 403 until
 * decay brings it below. With exponential decay the wait is closed-form:
 * s·2^(−t/h) < T ⇔ t > h·log2(s/T).
 *
 * Negative deltas (forgiveness) with the Min aggregator can also lower a colliding key's
 * cells; keep them small.
 */
export class AbuseScore {
  /** Score deltas by response status (frozen); default {@link DEFAULT_ABUSE_WEIGHTS}. */
  readonly weights: AbuseWeights
  /** Score at or above which the key is blocked with 403 (> 0; default 10). */
  readonly threshold: number
  /** Half-life of the exponential decay in ms (> 0; default 600 000). */
  readonly halfLifeMs: number
  /** Score ceiling hi (≥ threshold; default 4 × threshold). */
  readonly maxScore: number
  /** What a request refused by the debt meter or feedback score adds to the score (≥ 0; default 0: no escalation). */
  readonly refusalWeight: number
  /** Rotation period of the score's Rotator in ms: the configured `periodMs`, else the shortest one that never forgives a score early. */
  readonly periodMs: number
  /** Where the scores live (one Rotator of sketches with lo 0, hi maxScore, exponential decay, or a shared store). */
  readonly store: ScoreStore
  /**
   * The capacity model's load at a positive score per second, all keys ({@link abuseScoreLoad}
   * with this policy's model weight): what its sizer and the telemetry predict from.
   * @internal
   */
  readonly modelLoad: (scorePerSecond: number) => ScoreLoad

  /**
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option (also a key that is
   * not an option of {@link AbuseScoreOptions})
   */
  constructor(options: AbuseScoreOptions, sketch: ResolvedSketchOptions, storeName: string, prefix = 'abuse.') {
    const c = parseAbuseScoreOptions(options, sketch, prefix)
    this.weights = c.weights
    this.threshold = c.threshold
    this.halfLifeMs = c.halfLifeMs
    this.maxScore = c.maxScore
    this.periodMs = c.periodMs
    this.refusalWeight = c.refusalWeight
    const model = { ...c, weight: abuseModelWeight(Object.values(this.weights), this.refusalWeight) }
    this.modelLoad = (scorePerSecond) => abuseScoreLoad(model, scorePerSecond)
    this.store = policyStore(sketch, storeName, this.periodMs, halfLife(this.halfLifeMs), this.maxScore, (load) =>
      abuseScoreCellsFor(model, load.levels, load.costPerSecond),
    )
  }

  /** The delta for a response status: exact status, then `Nxx`, then `success` (< 400), then `default`, else 0. */
  deltaForStatus(status: number): number {
    const w = this.weights
    const exact = w[String(status)]
    if (exact !== undefined) return exact
    const cls = w[`${Math.floor(status / 100)}xx`]
    if (cls !== undefined) return cls
    if (status < 400 && w.success !== undefined) return w.success
    return w.default ?? 0
  }

  /** Blocked iff score ≥ threshold. */
  check(key: string): AbuseVerdict | Promise<AbuseVerdict> {
    return settle(this.store.read(key), (score) => {
      if (!(score >= this.threshold)) return { admitted: true, score, retryAfterMs: 0 }
      return { admitted: false, score, retryAfterMs: this.retryAfterMsFor(score) }
    })
  }

  /**
   * Ms until a blocked score has decayed strictly below the threshold, in whole ms: the first
   * ms after halfLife · log2(score / threshold) (exponential decay, spec/http.md §2.3). A key
   * is blocked while its score is ≥ the threshold, so at exactly h·log2(s/T) it is still
   * blocked (8 → 2 at a 10 s half-life is 20,000 ms, and the retry admitted is at 20,001).
   * At least 1 ms, also for a score exactly at the threshold.
   * @param score a score ≥ threshold
   */
  retryAfterMsFor(score: number): number {
    // the 1e-6 ms absorbs log2's rounding below an exact whole ms (20,000 read as 19,999.99…)
    return Math.floor(this.halfLifeMs * Math.log2(score / this.threshold) + 1e-6) + 1
  }

  /** Add a delta (finite; 0 does nothing). @returns the score after */
  record(key: string, delta: number): number | Promise<number> {
    if (!Number.isFinite(delta)) invalidOption('abuse.score', 'a finite delta', delta)
    if (delta === 0) return this.store.read(key)
    return this.store.add(key, delta)
  }

  /** Release the store. */
  close(): void | Promise<void> {
    return this.store.close()
  }
}

/**
 * The weight w of one event in the abuse score's capacity model (spec/sizing.md §3): the
 * heaviest positive weight (of the status weights and the refusal weight), at least 1e-9.
 * For a given score per second the shot noise is largest for the fewest, largest events, so
 * the predicted rate is an upper bound over the mix of weights.
 * @param weights the policy's (or a replay's) outcome weights, finite
 * @param refusalWeight what a refusal adds (≥ 0); default 0
 * @internal
 */
export function abuseModelWeight(weights: Iterable<number>, refusalWeight = 0): number {
  let w = Math.max(1e-9, refusalWeight)
  for (const v of weights) if (v > w) w = v
  return w
}

/** What the abuse score's capacity model reads of a policy. @internal */
export type AbuseModelConfig = Pick<AbuseScoreConfig, 'threshold' | 'halfLifeMs' | 'maxScore'> & {
  /** w, the weight of one event ({@link abuseModelWeight}). */
  readonly weight: number
}

/**
 * The capacity model's load of an abuse score (spec/sizing.md §3) from the positive score
 * per second its generation measured: ν = scorePerSecond / w events of weight w, decaying
 * at λ = ln 2 / halfLife, clamped at maxScore. The one home of that mapping: the policy's
 * sizer, `grudge replay` and `grudge suggest` read it here.
 * @param c threshold, halfLifeMs, maxScore and the model weight
 * @param scorePerSecond the sum of positive deltas per second, all keys (finite, ≥ 0)
 * @param hotKeys keys whose score sits at the top (finite, ≥ 0); default 0
 * @internal
 */
export function abuseScoreLoad(c: AbuseModelConfig, scorePerSecond: number, hotKeys = 0): ScoreLoad {
  return {
    eventsPerSecond: scorePerSecond / c.weight,
    weight: c.weight,
    lambdaPerSecond: halfLife(c.halfLifeMs).ratePerSecond,
    maxScore: c.maxScore,
    hotKeys,
  }
}

/**
 * The cells per level a self-sized abuse score asks for its next generation (before the
 * Rotator rounds and clamps it): the fewest, a power of two, whose predicted false-block
 * rate at the threshold ({@link abuseScoreLoad}, `abuseFalseBlockRate`) is at most the
 * target, by `scoreCellsForLoad`. The one home of the rule: the policy's sizer and `grudge suggest`.
 * @param c threshold, halfLifeMs, maxScore and the model weight
 * @param levels L, integer in [1, 64]
 * @param scorePerSecond the sum of positive deltas per second (finite, ≥ 0)
 * @param targetFalseReject the rate to reach, in (0, 1); default 1e-5
 * @param hotKeys keys whose score sits at the top; default 0
 * @returns M, a power of two in [16, 2^30]
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for a load out of the model's domain
 * @internal
 */
export function abuseScoreCellsFor(
  c: AbuseModelConfig,
  levels: number,
  scorePerSecond: number,
  targetFalseReject?: number,
  hotKeys = 0,
): number {
  return scoreCellsForLoad(abuseScoreLoad(c, scorePerSecond, hotKeys), {
    levels,
    targetFalseReject,
    ...SELF_SIZED_CELL_RANGE,
    threshold: c.threshold,
  })
}
