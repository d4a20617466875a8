/**
 * The outcome rule: what a response tells the feedback and abuse scores. A failure is a
 * status ≥ 500 or a response slower than `fairness.slowMs` (or the `isFailure` option's
 * answer); the abuse delta is the weight of the status (or the `score` option's answer).
 * @module
 */
import type { Limiter, Outcome } from '../limit/limiter.js'

/**
 * The adapter's own rules for an outcome, when given (else the defaults above).
 * @internal
 */
export interface OutcomeRules<Req, Res> {
  /** Whether a response is a failure (`fairness.isFailure`). */
  readonly isFailure: ((req: Req, res: Res) => boolean) | undefined
  /** The abuse delta of a response (`abuse.score`); must return a finite number. */
  readonly abuseScore: ((req: Req, res: Res) => number) | undefined
}

/**
 * The abuse delta and failure flag of a response.
 * @param rules the adapter's outcome options
 * @param limiter the limiter that admitted the request (its policies' defaults)
 * @param status the response status
 * @param elapsedMs ms from the decision to the response
 * @internal
 */
export function outcomeOf<Req, Res>(
  rules: OutcomeRules<Req, Res>,
  limiter: Limiter,
  req: Req,
  res: Res,
  status: number,
  elapsedMs: number,
): Outcome {
  let failed = false
  if (limiter.fairness !== undefined)
    failed =
      rules.isFailure !== undefined
        ? rules.isFailure(req, res) === true
        : status >= 500 || elapsedMs > limiter.fairness.slowMs
  let abuseDelta = 0
  if (limiter.abuse !== undefined)
    abuseDelta = rules.abuseScore !== undefined ? rules.abuseScore(req, res) : limiter.abuse.deltaForStatus(status)
  return { failed, abuseDelta }
}
