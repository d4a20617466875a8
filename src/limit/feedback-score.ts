import { invalidOption } from '../errors.js'
import { exponential } from '../sketch/decay.js'
import { SELF_SIZED_CELL_RANGE, scoreCellsForLoad, type ScoreLoad } from '../sketch/sizing.js'
import { minimumPeriodMs, nonNegative, policyStore, positive, type ResolvedSketchOptions } from './options.js'
import { settle } from './settle.js'
import type { ScoreStore } from './store.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Options of the feedback score (`fairness`). */
export interface FeedbackScoreOptions {
  /** Added to the key's score on a failed response: finite, in (0, 1]. Default 0.1. */
  failureDelta?: number
  /** Subtracted from the key's score on a successful response: finite, in [0, 1]. Default 0.01. */
  successDelta?: number
  /** Exponential decay λ in 1/s (half-life ln 2 / λ s): finite, > 0. Default 0.1 (≈ 6.9 s). */
  lambdaPerSecond?: number
  /** A response slower than this many ms counts as a failure (default outcome rule); finite, > 0. Default 5000. */
  slowMs?: number
}

/** The option names of {@link FeedbackScoreOptions}; any other key is refused. */
export const FEEDBACK_SCORE_OPTION_KEYS = optionKeys<FeedbackScoreOptions>({
  failureDelta: true,
  successDelta: true,
  lambdaPerSecond: true,
  slowMs: true,
})

/** The result of {@link FeedbackScore.check}. */
export interface FairnessVerdict {
  /** Whether the request passed the random draw (u ≥ score), or a failed store answered open. */
  admitted: boolean
  /** The key's score in [0, 1] (NaN when a failed store answered). */
  score: number
  /** Ms until the same random draw would admit: ln(score / u) / λ; 0 when admitted. */
  retryAfterMs: number
}

/** Scores below this are treated as drained when sizing the rotation period. */
const NEGLIGIBLE = 1e-3

/**
 * The complete options of a {@link FeedbackScore} (see {@link parseFeedbackScoreOptions}).
 * @internal
 */
export type FeedbackScoreConfig = Readonly<
  Pick<FeedbackScore, 'failureDelta' | 'successDelta' | 'lambdaPerSecond' | 'slowMs' | 'periodMs'>
>

/**
 * Feedback-score options checked and complete: what {@link FeedbackScore} holds, without its store. Pure: it opens no
 * store and starts no timer, so options can be checked at registration.
 * @param options the policy options
 * @param sketch the limiter's resolved sketch options (generations, periodMs)
 * @param prefix option path prefix for error messages
 * @throws {GrudgeError} as the {@link FeedbackScore} constructor
 * @internal
 */
export function parseFeedbackScoreOptions(
  options: FeedbackScoreOptions,
  sketch: Pick<ResolvedSketchOptions, 'generations' | 'periodMs'>,
  prefix: string,
): FeedbackScoreConfig {
  if (typeof options !== 'object' || options === null) invalidOption(prefix.slice(0, -1), 'an object', options)
  checkKnownOptions(options, FEEDBACK_SCORE_OPTION_KEYS, prefix)
  const failureDelta = positive(prefix + 'failureDelta', options.failureDelta, 0.1)
  if (failureDelta > 1) invalidOption(prefix + 'failureDelta', 'a number in (0, 1]', options.failureDelta)
  const successDelta = nonNegative(prefix + 'successDelta', options.successDelta, 0.01)
  if (successDelta > 1) invalidOption(prefix + 'successDelta', 'a number in [0, 1]', options.successDelta)
  const lambdaPerSecond = positive(prefix + 'lambdaPerSecond', options.lambdaPerSecond, 0.1)
  const slowMs = positive(prefix + 'slowMs', options.slowMs, 5000)
  // a full score (1) decays below NEGLIGIBLE in ln(1/NEGLIGIBLE)/λ seconds
  const drainMs = (Math.log(1 / NEGLIGIBLE) / lambdaPerSecond) * 1000
  const periodMs = sketch.periodMs ?? minimumPeriodMs(drainMs, sketch.generations)
  return Object.freeze({ failureDelta, successDelta, lambdaPerSecond, slowMs, periodMs })
}

/**
 * A FAIR-style feedback score: each key's score in [0, 1] rises by `failureDelta` on a
 * failed response (status ≥ 500 or slower than `slowMs`, or a custom rule) and falls by
 * `successDelta` on a success, decaying exponentially at λ; each request is throttled with
 * probability equal to its key's score. Keys that cause most failures under an overloaded
 * backend get the highest scores and are shed first, light keys are spared. The shedding
 * rule, "drop with probability p" from a smoothed congestion signal, is that of Random
 * Early Detection (Floyd & Jacobson, "Random Early Detection Gateways for Congestion
 * Avoidance", IEEE/ACM ToN 1993), applied per key as FAIR-style schedulers do.
 */
export class FeedbackScore {
  /** Added to the score on a failed response, in (0, 1]; default 0.1. */
  readonly failureDelta: number
  /** Subtracted from the score on a successful response, in [0, 1]; default 0.01. */
  readonly successDelta: number
  /** Exponential decay rate λ in 1/s (> 0; default 0.1, half-life ≈ 6.9 s). */
  readonly lambdaPerSecond: number
  /** Response time in ms above which the default outcome rule counts a failure (> 0; default 5000). */
  readonly slowMs: number
  /** Rotation period of the score's Rotator in ms: the configured `periodMs`, else the shortest one that never forgives a score early. */
  readonly periodMs: number
  /** Where the scores live (one Rotator of sketches with lo 0, hi 1, exponential decay, Min aggregator, or a shared store). */
  readonly store: ScoreStore

  /**
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option (also a key that is
   * not an option of {@link FeedbackScoreOptions}); `ERR_GRUDGE_ROTATOR_AMNESTY` for a short period
   */
  constructor(options: FeedbackScoreOptions, sketch: ResolvedSketchOptions, storeName: string, prefix = 'fairness.') {
    const c = parseFeedbackScoreOptions(options, sketch, prefix)
    this.failureDelta = c.failureDelta
    this.successDelta = c.successDelta
    this.lambdaPerSecond = c.lambdaPerSecond
    this.slowMs = c.slowMs
    this.periodMs = c.periodMs
    this.store = policyStore(sketch, storeName, this.periodMs, exponential(this.lambdaPerSecond), 1, (load) =>
      feedbackScoreCellsFor(c, load.levels, load.costPerSecond),
    )
  }

  /**
   * Throttle with probability = score: draw u in [0, 1); throttled iff u < score.
   * @param key the request key
   * @param u a uniform draw in [0, 1) (the limiter's injectable random source)
   */
  check(key: string, u: number): FairnessVerdict | Promise<FairnessVerdict> {
    return settle(this.store.read(key), (score) => {
      if (!(u < score)) return { admitted: true, score, retryAfterMs: 0 }
      // score · e^(−λt) ≤ u  ⇔  t ≥ ln(score / u) / λ
      const t =
        u > 0
          ? (Math.log(score / u) / this.lambdaPerSecond) * 1000
          : (Math.log(score / NEGLIGIBLE) / this.lambdaPerSecond) * 1000
      return { admitted: false, score, retryAfterMs: Math.max(0, t) }
    })
  }

  /**
   * Record a response's outcome: +failureDelta on failure, −successDelta on success.
   * @returns the score after
   */
  record(key: string, failed: boolean): number | Promise<number> {
    return this.store.add(key, failed ? this.failureDelta : -this.successDelta)
  }

  /**
   * The capacity model's load at a positive score per second, all keys ({@link feedbackScoreLoad}):
   * what its sizer and the telemetry predict from.
   * @internal
   */
  modelLoad(scorePerSecond: number): ScoreLoad {
    return feedbackScoreLoad(this, scorePerSecond)
  }

  /** Release the store. */
  close(): void | Promise<void> {
    return this.store.close()
  }
}

/**
 * The capacity model's load of a feedback score (spec/sizing.md §4) from the positive score
 * per second its generation measured: ν = scorePerSecond / failureDelta failures of weight
 * failureDelta, decaying at λ, clamped at 1. The one home of that mapping: the policy's
 * sizer and `grudge suggest` read it here.
 * @param c failureDelta and lambdaPerSecond of the policy
 * @param scorePerSecond the sum of positive deltas per second, all keys (finite, ≥ 0)
 * @param hotKeys keys whose score sits at the top (finite, ≥ 0); default 0
 * @internal
 */
export function feedbackScoreLoad(
  c: Pick<FeedbackScoreConfig, 'failureDelta' | 'lambdaPerSecond'>,
  scorePerSecond: number,
  hotKeys = 0,
): ScoreLoad {
  return {
    eventsPerSecond: scorePerSecond / c.failureDelta,
    weight: c.failureDelta,
    lambdaPerSecond: c.lambdaPerSecond,
    maxScore: 1,
    hotKeys,
  }
}

/**
 * The cells per level a self-sized feedback score asks for its next generation (before the
 * Rotator rounds and clamps it): the fewest, a power of two, whose predicted false-throttle
 * rate ({@link feedbackScoreLoad}, `fairnessFalseThrottleRate`) is at most the target, by
 * `scoreCellsForLoad`. The one home of the rule: the policy's sizer and `grudge suggest`.
 * @param c failureDelta and lambdaPerSecond of the policy
 * @param levels L, integer in [1, 64]
 * @param scorePerSecond the sum of positive deltas per second (finite, ≥ 0)
 * @param targetFalseReject the rate to reach, in (0, 1); default 1e-5
 * @param hotKeys keys whose score sits at the top; default 0
 * @returns M, a power of two in [16, 2^30]
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for a load out of the model's domain
 * @internal
 */
export function feedbackScoreCellsFor(
  c: Pick<FeedbackScoreConfig, 'failureDelta' | 'lambdaPerSecond'>,
  levels: number,
  scorePerSecond: number,
  targetFalseReject?: number,
  hotKeys = 0,
): number {
  return scoreCellsForLoad(feedbackScoreLoad(c, scorePerSecond, hotKeys), {
    levels,
    targetFalseReject,
    ...SELF_SIZED_CELL_RANGE,
  })
}
