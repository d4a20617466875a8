/**
 * The status of a denial. The core's Decision names the policy that denied; what that
 * means on the wire is HTTP's business, so it is decided here, once for both adapters.
 * @module
 */
import type { Decision } from '../limit/decision.js'

/** The status of a throttled request (`fairness.status`): 503 (default) or 429. */
export type FairnessStatus = 503 | 429

/**
 * The status to answer a denial with: 403 for the abuse score (fixed, as
 * @fastify/rate-limit's `ban`), `fairnessStatus` (503 by default, or 429) for the feedback
 * score, 503 for a shared store that failed closed, and `limitStatus` (429 by default: the
 * adapters' `statusCode` option) for the debt meter. An admitted decision is 200.
 * @param d the decision
 * @param fairnessStatus the feedback score's status; default 503
 * @param limitStatus the debt meter's status, an integer in [400, 599]; default 429
 */
export function denialStatus(d: Decision, fairnessStatus: FairnessStatus = 503, limitStatus = 429): number {
  if (d.admitted) return 200
  switch (d.policy) {
    case 'abuse':
      return 403
    case 'fairness':
      return fairnessStatus
    case 'store':
      return 503
    default:
      return limitStatus
  }
}
