/**
 * The step both adapters share between the allow list and the answer: pick the request's
 * tier (`limit.tier(req)`, possibly async), then charge it in that tier's debt meter (one
 * `Limiter.decide`, possibly async), then hand the Decision on. The adapters differ only in
 * how they continue and fail (Express's `next(err)`, Fastify's hook callback), which they
 * pass as one module-level {@link ChargeSteps} object: the synchronous path allocates no
 * closure (test/plugins/alloc.test.ts).
 * @module
 */
import type { DecisionFigures } from '../limit/decision.js'
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
  /**
   * Keep the decision as `req.grudge`, write its fields and answer (admit or deny). On the
   * synchronous path `f` is the limiter's one reused object: read it at once.
   */
  apply(ctx: Ctx, req: Req, res: Res, next: Next, key: string, f: DecisionFigures): void
  /**
   * Send a failure down the framework's error path.
   * @param limiter the limiter whose charge failed (a cost above the burst is then logged once
   * per limiter), or undefined when the tier function failed
   */
  fail(ctx: Ctx, req: Req, next: Next, err: unknown, limiter: Limiter | undefined): void
}

/** The tier of a request not picked yet: {@link tierThenCharge} picks it first. */
const UNPICKED: unique symbol = Symbol('grudge.unpicked')

/**
 * Charge a request: its tier first (none for an untiered limit), then one decision in that
 * tier; an unknown tier, a throwing or rejecting tier or cost function, or a failing store
 * goes to `steps.fail` (with the limiter when the charge failed, without when the tier
 * function did).
 * @param steps the adapter's continuation
 * @param ctx the adapter's context of the limiter
 * @param req the request
 * @param res the reply or response
 * @param next the framework's callback
 * @param key the request key
 * @param tier the tier once picked (undefined for an untiered limit); callers leave it out
 * @internal
 */
export function tierThenCharge<Req, Res, Next, Ctx extends ChargeContext<Req, Res>>(
  steps: ChargeSteps<Ctx, Req, Res, Next>,
  ctx: Ctx,
  req: Req,
  res: Res,
  next: Next,
  key: string,
  tier: string | undefined | typeof UNPICKED = UNPICKED,
): void {
  let charging: Limiter | undefined
  try {
    if (tier === UNPICKED) {
      const tierOf = ctx.config.tier
      const picked = tierOf === undefined ? undefined : tierOf(req)
      if (isThenable(picked)) return awaitTier(steps, ctx, req, res, next, key, picked)
      tier = picked
    }
    charging = ctx.limiter
    const meter = ctx.limiter.meterOf(tier)
    const f = ctx.limiter.decideFigures(key, requestCost(ctx.config, meter, req), tier)
    if (f instanceof Promise) awaitFigures(steps, ctx, req, res, next, key, f)
    else steps.apply(ctx, req, res, next, key, f)
  } catch (err) {
    steps.fail(ctx, req, next, err, charging)
  }
}

// the asynchronous continuations are functions of their own: a function that makes a
// closure gets a context object at every call, taken or not, and tierThenCharge is on the
// synchronous path

function awaitTier<Req, Res, Next, Ctx extends ChargeContext<Req, Res>>(
  steps: ChargeSteps<Ctx, Req, Res, Next>,
  ctx: Ctx,
  req: Req,
  res: Res,
  next: Next,
  key: string,
  picked: PromiseLike<string>,
): void {
  picked.then(
    (t) => tierThenCharge(steps, ctx, req, res, next, key, t),
    (err) => steps.fail(ctx, req, next, err, undefined),
  )
}

function awaitFigures<Req, Res, Next, Ctx extends ChargeContext<Req, Res>>(
  steps: ChargeSteps<Ctx, Req, Res, Next>,
  ctx: Ctx,
  req: Req,
  res: Res,
  next: Next,
  key: string,
  f: Promise<DecisionFigures>,
): void {
  f.then(
    (ff) => steps.apply(ctx, req, res, next, key, ff),
    (err) => steps.fail(ctx, req, next, err, ctx.limiter),
  )
}
