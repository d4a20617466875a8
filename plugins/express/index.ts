/**
 * `grudge/express`: middleware for Express 4 and 5 over the framework-free core. It derives
 * the key, calls the core once, copies the decision's fields and maps a denial to its
 * status; errors (key functions, cost functions, stores) go to `next(err)`.
 *
 * Each call of {@link grudge} is its own limiter with its own sketches; pass one
 * `store` factory to several instances to share where scores live (e.g. one Redis store).
 * Several instances on one request (a global limit and a route's own) list one policy each
 * in the `RateLimit-Policy` / `RateLimit` fields instead of overwriting each other; give
 * each a `name` (spec/http.md §3.1). `req.ip` follows the app's `trust proxy` setting.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { decisionOf, type Decision, type DecisionFigures } from '../../src/limit/decision.js'
import { Telemetry, type LimiterStats } from '../../src/limit/telemetry.js'
import type { Limiter } from '../../src/limit/limiter.js'
import { BloomGate } from '../../src/limit/bloom-gate.js'
import { systemClock, type Clock } from '../../src/clock.js'
import { invalidOption } from '../../src/errors.js'
import { checkKnownOptions } from '../../src/options.js'
import { deriveKey, type RequestView } from '../../src/http/client-key.js'
import { isAllowed } from '../../src/http/allow-list.js'
import { outcomeOf } from '../../src/http/outcome.js'
import {
  cachedDefaultBody,
  defaultDenialError,
  errorContext,
  notFoundBody,
  requestError,
} from '../../src/http/error-body.js'
import { isThenable } from '../../src/http/thenable.js'
import { tierThenCharge, type ChargeSteps } from '../../src/http/charge.js'
import { denialStatus } from '../../src/http/status.js'
import { checkPolicyName, fieldSource, writeRateLimitFields, type FieldSource } from '../../src/http/headers.js'
import { FieldStack } from '../../src/http/field-stack.js'
import { buildLimiter, firstReport, parseLimiterOptions, type AdapterConfig } from '../../src/http/options.js'
import { openBloomRegistry } from '../../src/http/bloom-registry.js'
import { prometheusText } from '../../src/http/prometheus.js'
import { logStoreEvents, storeOutageLog } from '../../src/http/store-log.js'
import { keyOps, type KeyOps } from '../../src/http/key-ops.js'
import { tierFieldSources } from '../../src/http/tier-fields.js'
import { debtHighBits, debtLowBits, keepable, keepTier, keptDecisionOf } from '../../src/http/request-figures.js'
import { EXPRESS_BLOOM_KEYS, GRUDGE_EXPRESS_OPTION_KEYS, type GrudgeExpressOptions } from './options.js'

/** `req.grudge`: the decision of the last grudge middleware that decided this request. */
export interface GrudgeExpressState extends Decision {
  /** The request key. */
  key: string
}

/**
 * The middleware, with its telemetry, lifecycle and key operations (`peek`, `reset`,
 * `forgive`: a key string as the middleware derives it, or a request).
 */
export interface GrudgeMiddleware extends RequestHandler, KeyOps<Request> {
  /** Windowed statistics (requests, per-policy counts, distinct keys, memory, false-positive estimate). */
  stats(): LimiterStats
  /** Prometheus text of {@link GrudgeMiddleware.stats} (optional peer `prom-client`; rejects with `ERR_GRUDGE_PEER_MISSING` without it). */
  prometheus(): Promise<string>
  /** Stop the rotation timers and release the store; call on server close. */
  close(): Promise<void>
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The grudge decision for this request (set by the grudge middleware). */
      grudge?: GrudgeExpressState
    }
  }
}

/**
 * The reads of a request for one middleware. A request without a client address (`req.ip`
 * and the socket's address undefined) is keyed `ip:`, one bucket shared by every such
 * request; the first one is logged through `warn`, once per middleware.
 */
function expressView(warn: (message: string) => void): RequestView<Request> {
  let warned = false
  return {
    ip: (req) => {
      const ip = clientAddress(req)
      if (ip !== undefined && ip !== '') return ip
      if (!warned) {
        warned = true
        warn(
          "grudge: a request has no client address (req.ip and the socket address are undefined); such requests share the key 'ip:' (one budget). Check 'trust proxy', or key by something else (key option)",
        )
      }
      return ''
    },
    method: (req) => req.method,
    // the route pattern is known only when the middleware is mounted on the route itself
    route: (req) => {
      const path = (req.route as { path?: unknown } | undefined)?.path
      return typeof path === 'string' ? (req.baseUrl ?? '') + path : undefined
    },
    header: (req, name) => {
      const v = req.headers[name]
      return Array.isArray(v) ? v[0] : v
    },
  }
}

/** On an app's request prototype: whether its `ip` is Express's own getter ({@link expressIp}). */
const kExpressIp = Symbol('grudge.expressIp')

/**
 * Whether `req.ip` of requests of this prototype (an app's `app.request`) is Express's own
 * getter: `proxyaddr(this, trust)`, defined on Express's request object (the prototype
 * `app.request` inherits from), not redefined on `app.request`. Checked once per app (the
 * answer is kept on its request prototype); a prototype of another kind (no `app` of its
 * own: a request without Express) is never taken for Express's.
 */
function expressIp(proto: Record<PropertyKey, unknown>): boolean {
  const known = proto[kExpressIp]
  if (known !== undefined) return known === true
  if (!Object.prototype.hasOwnProperty.call(proto, 'app')) return false
  let is = false
  const base = Object.getPrototypeOf(proto) as object | null
  if (!Object.prototype.hasOwnProperty.call(proto, 'ip') && base !== null) {
    const get = (Object.getOwnPropertyDescriptor(base, 'ip') as { get?: unknown } | undefined)?.get
    // Express 4.x and 5.x: `var trust = this.app.get('trust proxy fn'); return proxyaddr(this, trust)`
    is = typeof get === 'function' && /\bproxyaddr\(this, trust\)/.test(Function.prototype.toString.call(get))
  }
  if (Object.isExtensible(proto)) Object.defineProperty(proto, kExpressIp, { value: is })
  return is
}

/**
 * The client address of a request: `req.ip`, as the app's `trust proxy` setting makes it,
 * without its cost when its answer is known. Express's getter (proxy-addr) walks the
 * socket's address and then the `X-Forwarded-For` entries, trusting each hop by the
 * setting; without that header (or with it empty) it answers the socket's address whatever
 * the setting says, so that is read directly, when `ip` is Express's own getter
 * ({@link expressIp}) and not redefined on the request. Measured through Express 5, over a
 * middleware that reads nothing: `req.ip` +2.2 to +2.4 µs of CPU per request, the header
 * and the socket's address −0.1 to +1.7 µs (in process, two runs of interleaved rounds on a
 * loaded machine: provisional). Any other request reads `req.ip`.
 */
function clientAddress(req: Request): string | undefined {
  const proto = Object.getPrototypeOf(req) as Record<PropertyKey, unknown> | null
  if (proto !== null && expressIp(proto) && !Object.prototype.hasOwnProperty.call(req, 'ip')) {
    const forwarded = req.headers['x-forwarded-for']
    const socket = req.socket as { remoteAddress?: string } | null | undefined
    if ((forwarded === undefined || forwarded === '') && socket != null) {
      const address = socket.remoteAddress
      if (address !== undefined) return address
    }
  }
  return req.ip ?? req.socket?.remoteAddress
}

let instances = 0

/** On `req.grudge`: the fields written so far on this request (one limiter's source, or the stack of several). */
const kFields = Symbol('grudge.fields')
type Marked = GrudgeExpressState & { [kFields]?: FieldSource | FieldStack }
/**
 * What grudge keeps of a request: one record per decided request, in one WeakMap entry
 * keyed by it. It holds the middleware that decided it (so that one mounted twice charges
 * once), the figures of a decision kept instead of its Decision (src/http/request-figures.ts:
 * the request key and the two 32-bit halves of the debt, small integers), and `req.grudge`
 * once built or set.
 *
 * Not a property of the request: Express gives every request a hidden class of its own
 * (it sets the request's prototype, then adds properties, and V8 caches no transition from
 * a map made by a prototype change), so each property grudge added would copy that map and
 * its descriptor array. Measured (Node 20.20.2, Express 5.3.0 and 4.22.3): the request stays
 * in fast mode (`%HasFastProperties`) with 1 to 6 symbol properties, but each costs ~1.25 kB
 * per request (Express 5: 19.7, 21.0, 22.2, 23.6 kB per request with 0 to 3; Express 4:
 * 14.4, 15.5, 16.9, 18.2 kB), ~2.5 µs of CPU for one through Express 5. One WeakMap set of a
 * record measured ~1 µs, four sets of the earlier WeakMaps (one per item) ~2–3 µs (server CPU
 * per request in process, interleaved rounds on a loaded machine: provisional). The record
 * is young and, as a WeakMap value, outlives its request by one scavenge
 * (src/http/request-figures.ts): 64 B, as the key string it holds did before.
 */
class RequestRecord {
  /** The middleware that decided the request, in order (one, or several); undefined until one does. */
  decided: ExpressContext | ExpressContext[] | undefined = undefined
  /** The request key of the kept figures. */
  key = ''
  /** The high 32 bits of the kept debt's IEEE 754 bits (`debtHighBits`). */
  debtHigh = 0
  /** The low 32 bits of the kept debt's IEEE 754 bits (`debtLowBits`). */
  debtLow = 0
  /**
   * `req.grudge` once built from the figures, decided as a Decision, or set; null while only
   * the figures are kept (and when set to null: built again from them when read).
   */
  grudge: Decision | null | undefined = null
}
const RECORDS = new WeakMap<Request, RequestRecord>()

/** The request's record, made when first needed. */
function recordOf(req: Request): RequestRecord {
  let r = RECORDS.get(req)
  if (r === undefined) RECORDS.set(req, (r = new RequestRecord()))
  return r
}

function decidedBy(req: Request, ctx: ExpressContext): boolean {
  const d = RECORDS.get(req)?.decided
  return d !== undefined && (d === ctx || (Array.isArray(d) && d.includes(ctx)))
}

function markDecided(r: RequestRecord, ctx: ExpressContext): void {
  const decided = r.decided
  if (decided === undefined) r.decided = ctx
  else if (Array.isArray(decided)) decided.push(ctx)
  else r.decided = [decided, ctx]
}

/** On an app's request prototype: `grudge` is its accessor (see {@link lazyGrudge}). */
const kLazy = Symbol('grudge.lazy')

/**
 * Whether `req.grudge` of this request is built when read: true once the accessor is on the
 * prototype Express gave the request (an app's `app.request`, which Express meant to be
 * extended), installed the first time a request of that app is seen. A request of another
 * kind (a plain object, Node's request without Express) gets its Decision at once.
 */
function lazyGrudge(req: Request): boolean {
  const proto = Object.getPrototypeOf(req) as Record<PropertyKey, unknown> | null
  if (proto === null) return false
  if (proto[kLazy] === true) return true
  if (
    !Object.prototype.hasOwnProperty.call(proto, 'app') ||
    Object.prototype.hasOwnProperty.call(proto, 'grudge') ||
    !Object.isExtensible(proto)
  )
    return false
  Object.defineProperty(proto, 'grudge', {
    configurable: true,
    get(this: Request) {
      return requestGrudge(this)
    },
    set(this: Request, value: unknown) {
      recordOf(this).grudge = value as Decision | null | undefined
    },
  })
  Object.defineProperty(proto, kLazy, { value: true })
  return true
}

/**
 * `req.grudge` behind the accessor: the Decision of the last grudge middleware that decided
 * the request. One that a debt meter alone admitted keeps only its figures
 * (src/http/request-figures.ts); its Decision is built from them when first read, then
 * kept. Set to null, it is built again from the figures; set to undefined, it stays so.
 */
function requestGrudge(req: Request): Marked | undefined {
  const r = RECORDS.get(req)
  if (r === undefined) return undefined
  if (r.grudge !== null) return r.grudge as Marked | undefined
  const decided = r.decided
  if (decided === undefined) return undefined
  // figures are kept only for the first middleware that decided
  const ctx = Array.isArray(decided) ? decided[0] : decided
  const state = keptDecisionOf(req, ctx.limiter, r.debtHigh, r.debtLow) as Marked
  state.key = r.key
  state[kFields] = fieldsOf(ctx, state.tier)
  r.grudge = state
  return state
}

/** The field source of a decision of this middleware: its tier's for a tiered limit. */
function fieldsOf(ctx: ExpressContext, tier: string | undefined): FieldSource {
  return tier !== undefined && ctx.tierFields !== undefined ? (ctx.tierFields.get(tier) ?? ctx.fields) : ctx.fields
}

interface ExpressContext {
  view: RequestView<Request>
  warn: (message: string) => void
  config: AdapterConfig<Request, Response>
  limiter: Limiter
  fields: FieldSource
  /** A tiered limit's field source per tier, else undefined. */
  tierFields: ReadonlyMap<string, FieldSource> | undefined
  handler: GrudgeExpressOptions['handler']
  message: GrudgeExpressOptions['message']
  runBloom: (req: Request, res: Response, next: NextFunction) => void
  clock: Clock
}

/** Send a request-time failure to `next`: logged under grudge's name, generic to the client. */
function fail(ctx: ExpressContext, next: NextFunction, err: unknown): void {
  const { error, replaced } = requestError(err)
  if (replaced && firstReport(ctx.limiter, err))
    ctx.warn(
      `grudge: the request could not be limited (a key, cost, skip or allow-list function, or the store, failed): ${describeError(err)}`,
    )
  next(error)
}

function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}${'code' in err ? ` ${String(err.code)}` : ''}: ${err.message}`
  return typeof err
}

// the middleware's steps are module functions, so the synchronous path allocates no
// closures; a function that makes a closure (for a thenable) gets a context object at
// every call, taken or not, so the asynchronous continuations are functions of their own
function afterSkip(ctx: ExpressContext, req: Request, res: Response, next: NextFunction): void {
  try {
    if (!ctx.limiter.active) return ctx.runBloom(req, res, next)
    const key = deriveKey(ctx.config, ctx.view, req)
    if (key instanceof Promise) awaitKey(ctx, req, res, next, key)
    else afterKey(ctx, req, res, next, key)
  } catch (err) {
    fail(ctx, next, err)
  }
}

function awaitSkip(ctx: ExpressContext, req: Request, res: Response, next: NextFunction, skip: PromiseLike<unknown>) {
  skip.then(
    (v) => (v ? next() : afterSkip(ctx, req, res, next)),
    (err) => fail(ctx, next, err),
  )
}

function awaitKey(ctx: ExpressContext, req: Request, res: Response, next: NextFunction, key: Promise<string>) {
  key.then(
    (k) => afterKey(ctx, req, res, next, k),
    (err) => fail(ctx, next, err),
  )
}

function awaitAllowed(
  ctx: ExpressContext,
  req: Request,
  res: Response,
  next: NextFunction,
  key: string,
  allowed: PromiseLike<unknown>,
) {
  allowed.then(
    (a) => (a ? ctx.runBloom(req, res, next) : tierThenCharge(EXPRESS_STEPS, ctx, req, res, next, key)),
    (err) => fail(ctx, next, err),
  )
}

function afterKey(ctx: ExpressContext, req: Request, res: Response, next: NextFunction, key: string): void {
  try {
    const allowed = isAllowed(ctx.config.allowList, ctx.view, req, key)
    if (isThenable(allowed)) awaitAllowed(ctx, req, res, next, key, allowed)
    else if (allowed) ctx.runBloom(req, res, next)
    else tierThenCharge(EXPRESS_STEPS, ctx, req, res, next, key)
  } catch (err) {
    fail(ctx, next, err)
  }
}

/** Express's continuation of the shared tier-then-charge step (a module constant: no closure per request). */
const EXPRESS_STEPS: ChargeSteps<ExpressContext, Request, Response, NextFunction> = {
  apply,
  fail: (ctx, _req, next, err) => fail(ctx, next, err),
}

function setResponseHeader(res: Response, name: string, value: string): void {
  res.setHeader(name, value)
}

function apply(
  ctx: ExpressContext,
  req: Request,
  res: Response,
  next: NextFunction,
  key: string,
  f: DecisionFigures,
): void {
  try {
    // no grudge middleware has decided this request yet: no fields of grudge's to merge with
    const r = recordOf(req)
    // with grudge's accessor on the request's prototype, req.grudge is the record's: read and
    // written there directly (through the request, each access would be a lookup on a hidden
    // class of its own, see RequestRecord)
    const lazy = lazyGrudge(req)
    const prev: Marked | undefined = r.decided === undefined ? undefined : lazy ? requestGrudge(req) : req.grudge
    markDecided(r, ctx)
    const fields = fieldsOf(ctx, f.tier)
    const written = prev !== undefined ? prev[kFields] : undefined
    let d: Marked | undefined
    if (written === undefined) {
      // the first grudge middleware on this request: its fields as they are
      if (lazy && keepable(f)) {
        r.key = key
        r.debtHigh = debtHighBits(f.debt)
        r.debtLow = debtLowBits(f.debt)
        if (f.tier !== undefined) keepTier(req, f.tier)
        // a value set before this decision (req.grudge = x in an earlier middleware) yields to it
        r.grudge = null
      } else {
        d = decisionOf(f) as Marked
        d.key = key
        d[kFields] = fields
        if (lazy) r.grudge = d
        else req.grudge = d
      }
      writeRateLimitFields(res, setResponseHeader, fields, f)
    } else {
      // another one already wrote its fields: merge (one member per policy), don't overwrite
      d = decisionOf(f) as Marked
      d.key = key
      if (lazy) r.grudge = d
      else req.grudge = d
      const stack = written instanceof FieldStack ? written : new FieldStack(written, prev!)
      stack.add(fields, d)
      stack.write(res)
      d[kFields] = stack
    }
    if (f.admitted) {
      if (ctx.limiter.recordsOutcomes) watchOutcome(ctx, req, res, key)
      return ctx.runBloom(req, res, next)
    }
    // a denial is never kept as figures: its Decision is req.grudge already
    deny(ctx, req, res, next, key, d!)
  } catch (err) {
    next(err)
  }
}

/** Answer a denial: `handler`, `message`, the error path (`useErrorHandler`) or the builder's body. */
function deny(ctx: ExpressContext, req: Request, res: Response, next: NextFunction, key: string, d: Decision): void {
  const config = ctx.config
  config.onExceeded?.(req, key, d)
  const status = denialStatus(d, config.fairnessStatus, config.limitStatus)
  if (ctx.handler !== undefined) {
    const r: unknown = ctx.handler(req, res, next, errorContext(d, key, status))
    // an async handler's rejection goes to the error path, as express-rate-limit does
    if (isThenable(r)) r.then(undefined, next)
    return
  }
  const message = ctx.message
  if (message !== undefined) {
    // express-rate-limit's `message`: the status is set first, so a function sees it (and
    // may answer itself); its value is sent with res.send unless the response has ended
    res.status(status)
    const m: unknown = typeof message === 'function' ? (message as MessageFunction)(req, res) : message
    if (isThenable(m))
      m.then((v) => {
        if (!res.writableEnded) res.send(v)
      }, next)
    else if (!res.writableEnded) res.send(m)
    return
  }
  const build = config.errorResponseBuilder
  if (config.useErrorHandler) {
    const thrown = (build ?? defaultDenialError)(req, errorContext(d, key, status))
    // next() without an error would let the denied request through: the error path instead
    if (thrown === undefined || thrown === null) return fail(ctx, next, nothingThrown(thrown))
    return next(thrown)
  }
  // the default body needs no context, and is kept once built: a denial allocates nothing here
  const body = build === undefined ? cachedDefaultBody(status, d) : build(req, errorContext(d, key, status))
  res.status(status).json(body)
}

type MessageFunction = (req: Request, res: Response) => unknown

function nothingThrown(thrown: unknown): unknown {
  try {
    invalidOption('errorResponseBuilder', 'a value to pass to next() (useErrorHandler is set)', thrown)
  } catch (err) {
    return err
  }
}

/**
 * Record the outcome once the response is done: on `finish`, or on `close` before it when
 * the client aborted (then with `abortStatus`), so that aborting escapes neither score.
 */
function watchOutcome(ctx: ExpressContext, req: Request, res: Response, key: string): void {
  const start = ctx.clock.now()
  let recorded = false
  const done = () => {
    if (recorded) return
    recorded = true
    try {
      const status = res.writableFinished ? res.statusCode : ctx.config.abortStatus
      const o = outcomeOf(ctx.config, ctx.limiter, req, res, status, ctx.clock.now() - start)
      const p = ctx.limiter.record(key, o)
      if (p instanceof Promise)
        p.catch((err) => ctx.warn(`grudge: recording the outcome failed: ${describeError(err)}`))
    } catch (err) {
      ctx.warn(`grudge: recording the outcome failed: ${describeError(err)}`)
    }
  }
  res.once('finish', done)
  res.once('close', done)
}

/**
 * Build a grudge middleware. Options are parsed now (a bad option throws a coded error
 * naming it) and frozen.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a bad option, or a key that is not an
 * option of {@link GrudgeExpressOptions} (or of `limit`, `fairness`, `abuse`, `bloom`, …),
 * named by its path with the closest option suggested
 * (`option "limt": unknown option (did you mean "limit"?)`); `ERR_GRUDGE_ROTATOR_AMNESTY`
 */
export function grudge(options: GrudgeExpressOptions = {}): GrudgeMiddleware {
  checkKnownOptions(options, GRUDGE_EXPRESS_OPTION_KEYS)
  const { name, handler, message, warn, bloom, targetFalsePositiveRate, ...common } = options
  if (handler !== undefined && typeof handler !== 'function')
    invalidOption('handler', 'a function (req, res, next, context)', handler)
  // handler and message each answer the denial alone: beside each other, errorResponseBuilder
  // or useErrorHandler, one would be silently unused
  const first = handler !== undefined ? 'handler' : message !== undefined ? 'message' : undefined
  if (first !== undefined) {
    const second =
      first === 'handler' && message !== undefined
        ? 'message'
        : common.errorResponseBuilder !== undefined
          ? 'errorResponseBuilder'
          : common.useErrorHandler !== undefined
            ? 'useErrorHandler'
            : undefined
    if (second !== undefined)
      invalidOption(
        second,
        `no ${second} beside ${first} (handler and message each answer a denial alone; errorResponseBuilder and useErrorHandler shape the default answer)`,
        second === 'message' ? message : second === 'useErrorHandler' ? common.useErrorHandler : 'a function',
      )
  }
  if (warn !== undefined && typeof warn !== 'function') invalidOption('warn', 'a function', warn)
  if (name !== undefined) checkPolicyName('name', name)
  let gate: BloomGate | undefined
  if (bloom !== undefined) {
    if (typeof bloom !== 'object' || bloom === null)
      invalidOption('bloom', 'an object { registry, filter, item }', bloom)
    checkKnownOptions(bloom, EXPRESS_BLOOM_KEYS, 'bloom.')
    if (typeof bloom.item !== 'function') invalidOption('bloom.item', 'a function (req) => string', bloom.item)
    if (bloom.onAbsent !== undefined && typeof bloom.onAbsent !== 'function')
      invalidOption('bloom.onAbsent', 'a function (req, res)', bloom.onAbsent)
    gate = new BloomGate({ filter: bloom.filter })
  }
  // the middleware's name is the default policy name of its fields (a stack of named
  // middleware then lists distinct policies); without either name the policy is `default`
  const namedPolicy = typeof common.limit === 'object' && common.limit !== null && common.limit.name !== undefined
  if (name !== undefined && typeof common.limit === 'object' && common.limit !== null && !namedPolicy)
    common.limit = { ...common.limit, name }
  const config = parseLimiterOptions<Request, Response>(common)
  const log = warn ?? ((m: string) => console.warn(m))
  const telemetry = new Telemetry({ clock: common.clock ?? systemClock, targetFalsePositiveRate, warn: log })
  // opened after every option is checked, so that a bad option leaves no registry open
  const registry = bloom === undefined ? undefined : openBloomRegistry(bloom.registry, 'bloom.registry')
  const limiter = buildLimiter(config, name ?? `express:${++instances}`, telemetry)
  const clock = limiter.sketch.clock
  limiter.onStoreFailure = storeOutageLog((m, err) => log(`${m}: ${describeError(err)}`), common.clock ?? systemClock)
  // a Redis store's transitions (its local fallback taking over, Redis back) reach `warn`
  const stopStoreLog = logStoreEvents(common.store, (_level, message) => log(message))
  if (!limiter.active && gate === undefined)
    log('grudge: a middleware without a policy (limit, fairness, abuse) or bloom check limits nothing')

  // its closures are made only when there is a Bloom check (see afterSkip)
  function runBloom(req: Request, res: Response, next: NextFunction): void {
    if (gate === undefined) next()
    else checkBloom(req, res, next)
  }
  function checkBloom(req: Request, res: Response, next: NextFunction): void {
    const b = bloom!
    Promise.resolve()
      .then(() => b.item(req))
      .then((item) => gate!.check(registry!, item))
      .then((present) => {
        telemetry.policy('bloom', present)
        if (present) return next()
        if (b.onAbsent !== undefined) return b.onAbsent(req, res)
        res.status(404).json(notFoundBody())
      })
      .catch(next)
  }

  const implicit = name === undefined && !namedPolicy
  const fields = fieldSource(limiter, config.headers, implicit)
  const tierFields = tierFieldSources(limiter, config, implicit)
  const ctx: ExpressContext = {
    view: expressView(log),
    warn: log,
    config,
    limiter,
    fields,
    tierFields,
    handler,
    message,
    runBloom,
    clock,
  }
  const middleware = function grudgeMiddleware(req: Request, res: Response, next: NextFunction): void {
    // mounted twice on one path (app.use and the route): the request is charged once
    if (decidedBy(req, ctx)) return next()
    try {
      if (config.skip === undefined) return afterSkip(ctx, req, res, next)
      const skip = config.skip(req)
      if (isThenable(skip)) awaitSkip(ctx, req, res, next, skip)
      else if (skip) next()
      else afterSkip(ctx, req, res, next)
    } catch (err) {
      fail(ctx, next, err)
    }
  } as GrudgeMiddleware
  const ops = keyOps(config, ctx.view, limiter)
  middleware.peek = ops.peek
  middleware.reset = ops.reset
  middleware.forgive = ops.forgive
  middleware.stats = () => telemetry.checkHealth()
  middleware.prometheus = () => prometheusText(telemetry.stats())
  middleware.close = async () => {
    stopStoreLog()
    await limiter.close()
    await registry?.close?.()
  }
  return middleware
}

export default grudge
export type { GrudgeExpressOptions, GrudgeExpressBloomOptions } from './options.js'
export type * from '../../src/http/adapter-types.js'
export { GrudgeExpressStore, grudgeExpressStore } from '../express-rate-limit-store.js'
export type { ExpressRateLimitInfo, ExpressRateLimitInitOptions } from '../express-rate-limit-store.js'
export { dateClock } from '../window-meters.js'
