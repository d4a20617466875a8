/**
 * The step both adapters share between the allow list and the answer: pick the request's
 * tier (`limit.tier(req)`, possibly async), then charge it in that tier's debt meter (one
 * `Limiter.decide`, possibly async), then hand the Decision on. The adapters differ only in
 * how they continue and fail (Express's `next(err)`, Fastify's hook callback), which they
 * pass as one module-level {@link ChargeSteps} object: the synchronous path allocates no
 * closure (test/plugins/alloc.test.ts).
 * @module
 */
import type { Decision } from '../limit/decision.js'
import type { Limiter } from '../limit/limiter.js'
import { isThenable } from './thenable.js'
import { requestCost, type AdapterConfig } from './options.js'

/**
 * What an adapter's per-limiter context holds for {@link tierThenCharge}.
 * @internal
 */
export interface ChargeContext<Req, Res> {
  /** The limiter's parsed options (its `tier` and `cost`). */
  readonly config: AdapterConfig<Req, Res>
  /** The limiter. */
  readonly limiter: Limiter
}

/**
 * How an adapter continues: module functions, never closures made per request.
 * @internal
 */
export interface ChargeSteps<Ctx, Req, Res, Next> {
  /** Write the Decision's fields and answer (admit or deny). */
  apply(ctx: Ctx, req: Req, res: Res, next: Next, key: string, d: Decision): void
  /**
   * Send a failure down the framework's error path.
   * @param limiter the limiter whose charge failed (a cost above the burst is then logged once
   * per limiter), or undefined when the tier function failed
   */
  fail(ctx: Ctx, req: Req, next: Next, err: unknown, limiter: Limiter | undefined): void
}

/**
 * Charge a request: its tier first (none for an untiered limit), then one decision in that
 * tier; an unknown tier, a throwing or rejecting tier or cost function, or a failing store
 * goes to `steps.fail`.
 * @param steps the adapter's continuation
 * @param ctx the adapter's context of the limiter
 * @param req the request
 * @param res the reply or response
 * @param next the framework's callback
 * @param key the request key
 * @internal
 */
export function tierThenCharge<Req, Res, Next, Ctx extends ChargeContext<Req, Res>>(
  steps: ChargeSteps<Ctx, Req, Res, Next>,
  ctx: Ctx,
  req: Req,
  res: Res,
  next: Next,
  key: string,
): void {
  try {
    const tierOf = ctx.config.tier
    if (tierOf === undefined) return charge(steps, ctx, req, res, next, key, undefined)
    const tier = tierOf(req)
    if (isThenable(tier))
      tier.then(
        (t) => charge(steps, ctx, req, res, next, key, t),
        (err) => steps.fail(ctx, req, next, err, undefined),
      )
    else charge(steps, ctx, req, res, next, key, tier)
  } catch (err) {
    steps.fail(ctx, req, next, err, undefined)
  }
}

/** Charge the request in its tier (undefined for an untiered limit); an unknown tier takes the error path. */
function charge<Req, Res, Next, Ctx extends ChargeContext<Req, Res>>(
  steps: ChargeSteps<Ctx, Req, Res, Next>,
  ctx: Ctx,
  req: Req,
  res: Res,
  next: Next,
  key: string,
  tier: string | undefined,
): void {
  try {
    const meter = ctx.limiter.meterOf(tier)
    const d = ctx.limiter.decide(key, requestCost(ctx.config, meter, req), tier)
    if (d instanceof Promise)
      d.then(
        (dd) => steps.apply(ctx, req, res, next, key, dd),
        (err) => steps.fail(ctx, req, next, err, ctx.limiter),
      )
    else steps.apply(ctx, req, res, next, key, d)
  } catch (err) {
    steps.fail(ctx, req, next, err, ctx.limiter)
  }
}
