import { rateLimitHeaders, nonNegativeInt, type HeaderOptions, type RateLimitFigures } from '../http/headers.js'

/** The policy that decided: the debt meter, the feedback score, the abuse score, the Bloom gate or a failed shared store. */
export type PolicyName = 'limit' | 'fairness' | 'abuse' | 'bloom' | 'store'

/**
 * What the core decided about one request; adapters copy `headers` onto the response and,
 * when `admitted` is false, answer with `status`. All durations in ms.
 */
export interface Decision {
  /** Whether the request may proceed. */
  admitted: boolean
  /** HTTP status to answer with: 200 when admitted, else 429 (debt meter), 503 (feedback score, or a fail-closed store; configurable), 403 (abuse score). */
  status: number
  /** The policy that denied, or undefined when admitted. */
  policy: PolicyName | undefined
  /** The debt meter's quota (burst); undefined without a debt meter or when a failed store answered open. */
  limit: number | undefined
  /** Quota units left after this request, floored, ≥ 0; undefined as for `limit`. */
  remaining: number | undefined
  /** Ms until the quota is restored (see {@link RateLimitFigures.resetMs}); undefined as for `limit`. */
  resetMs: number | undefined
  /** Ms until a denied request may be retried (> 0 when denied, 0 when admitted). */
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
  /** Response fields to copy (lower-case names). */
  headers: Record<string, string>
}

/** What {@link makeDecision} needs of a debt meter for the rate-limit fields. */
export interface MeterFigures {
  /** Policy name. */
  readonly name: string
  /** The quota (burst). */
  readonly burst: number
  /** Ms to restore the quota from empty. */
  readonly windowMs: number
  /** The constant `RateLimit-Policy` value of this meter (cached). */
  readonly policyField: string
  /** The name as an sf-string (cached). */
  readonly quotedName: string
}

/**
 * Assemble a Decision and its header record (one object shape for every decision).
 * @param admitted whether the request may proceed
 * @param status 200 or the denial status
 * @param policy the denying policy, or undefined
 * @param score the deciding policy's score
 * @param scores each policy's score
 * @param retryAfterMs the wait when denied (whole seconds in ms), 0 when admitted
 * @param meter the debt meter whose figures go into the fields, or undefined for none
 * @param remaining quota left (ignored without a meter)
 * @param resetMs ms until the quota is restored (ignored without a meter)
 * @param headerOptions which fields to write, or false for none
 */
export function makeDecision(
  admitted: boolean,
  status: number,
  policy: PolicyName | undefined,
  score: number,
  scores: Decision['scores'],
  retryAfterMs: number,
  meter: MeterFigures | undefined,
  remaining: number,
  resetMs: number,
  headerOptions: HeaderOptions | false,
): Decision {
  const headers: Record<string, string> = {}
  if (headerOptions !== false) {
    const figures: RateLimitFigures | undefined =
      meter !== undefined
        ? {
            name: meter.name,
            limit: meter.burst,
            remaining,
            windowMs: meter.windowMs,
            resetMs,
            policyField: meter.policyField,
            quotedName: meter.quotedName,
          }
        : undefined
    rateLimitHeaders(headers, figures, admitted ? undefined : retryAfterMs, headerOptions)
  }
  return {
    admitted,
    status,
    policy,
    limit: meter !== undefined ? meter.burst : undefined,
    remaining: meter !== undefined ? nonNegativeInt(remaining) : undefined,
    resetMs: meter !== undefined ? resetMs : undefined,
    retryAfterMs,
    score,
    scores,
    headers,
  }
}
