import { rateLimitHeaders, type HeaderOptions, type RateLimitFigures } from '../http/headers.js'

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
  scores: { limit?: number; fairness?: number; abuse?: number }
  /** Response fields to copy (lower-case names). */
  headers: Record<string, string>
}

/**
 * Assemble a Decision and its header record.
 * @param parts the decision without headers
 * @param figures the debt meter's figures for the rate-limit fields, if any
 * @param headerOptions which fields to write, or false for none
 */
export function makeDecision(
  parts: Omit<Decision, 'headers'>,
  figures: RateLimitFigures | undefined,
  headerOptions: HeaderOptions | false,
): Decision {
  const headers: Record<string, string> = {}
  if (headerOptions !== false) rateLimitHeaders(headers, figures, parts.admitted ? undefined : parts.retryAfterMs, headerOptions)
  return { ...parts, headers }
}
