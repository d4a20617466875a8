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

/**
 * A Decision from its fields, with the figures made header-safe in place: without a quota
 * (`limit` undefined) `remaining` and `resetMs` are undefined too; `remaining` is floored
 * at 0. The caller writes every field in one literal, so every decision has one object
 * shape and no second object is allocated.
 * @internal
 */
export function makeDecision(d: Decision): Decision {
  if (d.limit === undefined) {
    d.remaining = undefined
    d.resetMs = undefined
  } else d.remaining = nonNegativeInt(d.remaining ?? 0)
  return d
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
