/** The policy that decided: the debt meter, the feedback score, the abuse score, the Bloom gate or a failed shared store. */
export type PolicyName = 'limit' | 'fairness' | 'abuse' | 'bloom' | 'store'

/**
 * What the core decided about one request, in numbers: whether it may proceed, which policy
 * denied it, and the debt meter's figures. The core says what happened; `grudge/fastify`
 * and `grudge/express` (through `src/http/`) turn it into a status (429, 503, 403) and
 * rate-limit fields. All durations in ms.
 */
export interface Decision {
  /** Whether the request may proceed. */
  admitted: boolean
  /** The policy that denied (`limit`, `fairness`, `abuse` or `store`), or undefined when admitted. */
  policy: PolicyName | undefined
  /** The debt meter's quota (burst); undefined without a debt meter or when a failed store answered open. */
  limit: number | undefined
  /** Quota units left after this request, floored, ≥ 0; undefined as for `limit`. */
  remaining: number | undefined
  /** Ms until the quota is restored: for an admitted request until the debt drains to 0; for a denied one `retryAfterMs`. Undefined as for `limit`. */
  resetMs: number | undefined
  /** Ms until a denied request may be retried: whole seconds, ≥ 1000 when denied; 0 when admitted. */
  retryAfterMs: number
  /** The deciding policy's score (debt for the debt meter, [0, 1] for the feedback score, the abuse score); NaN when unknown. */
  score: number
  /** Each configured policy's score for this key, when read. */
  scores: {
    /** Debt-meter debt of the key in cost units, in [0, maxDebt]; absent without a debt meter or when not read. */
    limit?: number
    /** Feedback score of the key in [0, 1] (its throttling probability); absent without one or when not read. */
    fairness?: number
    /** Abuse score of the key in [0, maxScore]; blocked at ≥ threshold; absent without one or when not read. */
    abuse?: number
  }
  /** The tier the request was charged in, for a tiered debt meter (`limit.tiers`); undefined otherwise. */
  tier: string | undefined
}

/**
 * Whole seconds of a duration in ms, rounded up: ceil(ms / 1000), at least 0, NaN → 0,
 * Infinity → 2^31 − 1. Sub-microsecond excess (floating-point noise of a decayed score
 * divided by a small rate) is ignored, so an exact 86 400 000 ms computed as
 * 86 400 000.000003 is 86 400 s, not 86 401. The one rounding rule of every wait the core
 * reports and every seconds field `src/http/` writes.
 * @internal
 */
export function ceilSeconds(ms: number): number {
  if (!(ms > 0)) return 0
  if (ms === Infinity) return 2147483647
  return Math.ceil(ms / 1000 - 1e-6)
}

/**
 * A non-negative integer of a count: floor, ≥ 0, NaN → 0, Infinity → 2^53 − 1.
 * @internal
 */
export function nonNegativeInt(x: number): number {
  if (!(x > 0)) return 0
  if (x === Infinity) return Number.MAX_SAFE_INTEGER
  return Math.floor(x)
}

/** {@link DecisionFigures.read}: the abuse score was read. @internal */
export const READ_ABUSE = 1
/** {@link DecisionFigures.read}: the feedback score was read. @internal */
export const READ_FAIRNESS = 2
/** {@link DecisionFigures.read}: the debt meter was read. @internal */
export const READ_LIMIT = 4

/**
 * The figures of a Decision as plain fields, so that one object per limiter can carry them
 * on the synchronous path (`Limiter.decideFigures`) and the adapters can keep a request's
 * own figures without a Decision (`req.grudge` is built from them when read). Every number
 * field always holds a number (NaN for "none"), never undefined: V8 then keeps them as
 * doubles written in place, and reusing the object allocates nothing.
 * @internal
 */
export class DecisionFigures {
  /** As {@link Decision.admitted}. */
  admitted = false
  /** As {@link Decision.policy}. */
  policy: PolicyName | undefined = undefined
  /** The quota (burst); NaN for none (then {@link Decision.limit}, `remaining` and `resetMs` are undefined). */
  limit = NaN
  /** As {@link Decision.remaining}, already floored at 0. */
  remaining = NaN
  /** As {@link Decision.resetMs}. */
  resetMs = NaN
  /** As {@link Decision.retryAfterMs}. */
  retryAfterMs = 0
  /** As {@link Decision.score}. */
  score = NaN
  /** `scores.abuse`, when `read` has {@link READ_ABUSE}. */
  abuse = NaN
  /** `scores.fairness`, when `read` has {@link READ_FAIRNESS}. */
  fairness = NaN
  /** `scores.limit`, when `read` has {@link READ_LIMIT}. */
  debt = NaN
  /** Which scores were read: a sum of READ_ABUSE, READ_FAIRNESS, READ_LIMIT. */
  read = 0
  /** As {@link Decision.tier}. */
  tier: string | undefined = undefined
  /**
   * Whether only the debt meter decided (no other policy, no store failure): the figures
   * then follow from `debt`, `retryAfterMs` and `tier` alone (`Limiter.refillDebtOnly`).
   */
  debtOnly = false
}

/**
 * A copy of figures that outlives the next decision (an asynchronous decision's own).
 * @internal
 */
export function copyFigures(f: DecisionFigures): DecisionFigures {
  const c = new DecisionFigures()
  c.admitted = f.admitted
  c.policy = f.policy
  c.limit = f.limit
  c.remaining = f.remaining
  c.resetMs = f.resetMs
  c.retryAfterMs = f.retryAfterMs
  c.score = f.score
  c.abuse = f.abuse
  c.fairness = f.fairness
  c.debt = f.debt
  c.read = f.read
  c.tier = f.tier
  c.debtOnly = f.debtOnly
  return c
}

/**
 * The Decision of figures: the one place a Decision is built. Without a quota (`limit`
 * NaN) `limit`, `remaining` and `resetMs` are undefined; `scores` holds the scores read, in
 * the order the policies ran (abuse, fairness, limit). Every decision has one object shape.
 * @internal
 */
export function decisionOf(f: DecisionFigures): Decision {
  const quota = !Number.isNaN(f.limit)
  const scores: Decision['scores'] = {}
  if ((f.read & READ_ABUSE) !== 0) scores.abuse = f.abuse
  if ((f.read & READ_FAIRNESS) !== 0) scores.fairness = f.fairness
  if ((f.read & READ_LIMIT) !== 0) scores.limit = f.debt
  return {
    admitted: f.admitted,
    policy: f.policy,
    limit: quota ? f.limit : undefined,
    remaining: quota ? f.remaining : undefined,
    resetMs: quota ? f.resetMs : undefined,
    retryAfterMs: f.retryAfterMs,
    score: f.score,
    scores,
    tier: f.tier,
  }
}

/**
 * A Decision that admits without any policy having been consulted: no figures, no scores.
 * What a Fastify route with only a Bloom pre-check carries on `req.grudge`.
 * @internal
 */
export function unlimitedDecision(): Decision {
  return {
    admitted: true,
    policy: undefined,
    limit: undefined,
    remaining: undefined,
    resetMs: undefined,
    retryAfterMs: 0,
    score: NaN,
    scores: {},
    tier: undefined,
  }
}
