/**
 * `grudge/fastify`: a fastify-plugin (Fastify 5) over the framework-free core. It derives
 * the key, calls the core once, copies the decision's fields and maps a denial to its
 * status; it decides nothing itself.
 *
 * - Options are parsed once at registration (bad options throw a coded error naming them)
 *   and frozen; routes override with `config: { grudge: {...} | false }`, parsed when the
 *   route is added.
 * - Hooks attach in `onRoute`: routes declared before the plugin is registered (awaited)
 *   are not limited. The not-found handler is limited with `notFound: true` or by passing
 *   `fastify.grudge.hook()` as its `preHandler` (the not-found handler takes no onRequest).
 * - Registered in nested scopes, the innermost registration limits a route and the outer
 *   one steps aside, so one request is counted once per scope.
 * - Errors of key functions, cost functions, allow-list predicates and stores go to
 *   Fastify's error path (500 by default).
 */
import fp from 'fastify-plugin'
import type {
  FastifyInstance,
  FastifyPluginCallback,
  FastifyReply,
  FastifyRequest,
  RouteOptions,
  onRequestHookHandler,
  preHandlerHookHandler,
} from 'fastify'
import { makeDecision, type Decision } from '../src/limit/decision.js'
import { Telemetry, type LimiterStats } from '../src/limit/telemetry.js'
import type { Limiter } from '../src/limit/limiter.js'
import { BloomGate } from '../src/limit/bloom-gate.js'
import { invalidOption } from '../src/errors.js'
import { systemClock } from '../src/clock.js'
import {
  resolveCommon,
  deriveKey,
  isAllowed,
  errorContext,
  outcomeOf,
  type CommonOptions,
  type RequestView,
  type ResolvedCommon,
  type BloomRegistryLike,
  type BloomRegistryConfig,
  openBloomRegistry,
} from './common.js'
import { prometheusText } from './prometheus.js'
import { checkKnownOptions } from '../src/options.js'
import {
  FASTIFY_BLOOM_ROUTE_KEYS,
  FASTIFY_REGISTER_KEYS,
  GRUDGE_FASTIFY_OPTION_KEYS,
  GRUDGE_ROUTE_OPTION_KEYS,
} from './fastify-options.js'

/** The route option `bloom`: answer without running the handler when the item is surely absent. */
export interface FastifyBloomRouteOptions {
  /** Name of a filter in the plugin's registry. */
  filter: string
  /** The item to look up (e.g. the `:id` parameter). */
  item: (req: FastifyRequest) => string | Promise<string>
  /** Answers when the item is surely absent; default a 404 `{ statusCode, error, message }`. */
  onAbsent?: (req: FastifyRequest, reply: FastifyReply) => unknown
}

/** Per-route options (`config.grudge`): any plugin option, plus `bloom`. */
export interface GrudgeRouteOptions extends CommonOptions<FastifyRequest, FastifyReply> {
  /** Bloom pre-check of this route. */
  bloom?: FastifyBloomRouteOptions
}

/** Options of the Fastify plugin. */
export interface GrudgeFastifyOptions extends GrudgeRouteOptions {
  /** Bloom filters for the `bloom` route option: a registry (e.g. a `BloomFilterRegistry`) or `{ dir, filters: { name: { capacity, errorRate, policy? } } }` to build one; closed (checkpointed) on server close. */
  bloomRegistry?: BloomRegistryLike | BloomRegistryConfig
  /** Limit the not-found handler too (sets one that answers 404); default false. */
  notFound?: boolean
}

/** `request.grudge`: the decision for this request, plus the Bloom registry. */
export interface GrudgeRequestState extends Decision {
  /** The request key. */
  key: string
  /** A filter of the plugin's registry by name. */
  bloom(name: string): unknown
}

/** `fastify.grudge`. */
export interface GrudgeFastifyDecorator {
  /** Windowed statistics: requests, admitted/rejected per policy, distinct keys, memory, false-positive estimate. */
  stats(): LimiterStats
  /** Prometheus text exposition of {@link GrudgeFastifyDecorator.stats} (needs the optional peer `prom-client`). */
  prometheus(): Promise<string>
  /** A filter of the registry by name (`registry.get(name)`). */
  bloom(name: string): unknown
  /**
   * An onRequest hook limiting with the plugin's options (or `overrides`; without them it
   * shares the plugin's limiter): for a not-found handler of your own
   * (`setNotFoundHandler({ preHandler: fastify.grudge.hook() }, …)`; its signature fits
   * both), a scope where the plugin is not registered, or a route
   * (`{ onRequest: fastify.grudge.hook({ limit }) }`): a route carrying such a hook is
   * limited by it alone (no registration adds or strips a hook beside it), and its
   * outcomes are recorded for the feedback and abuse scores.
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option for bad `overrides`,
   * also a key that is not an option of {@link GrudgeRouteOptions} (`hook.limt`)
   */
  hook(overrides?: GrudgeRouteOptions): onRequestHookHandler
}

declare module 'fastify' {
  interface FastifyInstance {
    grudge: GrudgeFastifyDecorator
  }
  interface FastifyRequest {
    grudge: GrudgeRequestState | null
  }
  interface FastifyContextConfig {
    grudge?: GrudgeRouteOptions | false
  }
}

const view: RequestView<FastifyRequest> = {
  ip: (req) => req.ip,
  method: (req) => req.method,
  route: (req) => req.routeOptions?.url,
  header: (req, name) => {
    const v = req.headers[name]
    return Array.isArray(v) ? v[0] : v
  },
}

const kOwner = Symbol('grudge.owner')
/** Marks a hook from `fastify.grudge.hook()`: put on a route by the user, never stripped. */
const kManual = Symbol('grudge.manual')
const kState = Symbol('grudge.state')

interface PerRequest {
  key: string
  startMs: number
  limiter: Limiter
  resolved: ResolvedCommon<FastifyRequest, FastifyReply>
}

type Tagged = ((...args: never[]) => unknown) & { [kOwner]?: symbol; [kManual]?: true }

function asArray<T>(v: T | T[] | undefined): T[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v]
}

type Stateful = FastifyRequest & { [kState]?: PerRequest }
type Next = (err?: Error) => void

interface HookContext {
  r: ResolvedCommon<FastifyRequest, FastifyReply>
  limiter: Limiter
  bloomOf: (name: string) => unknown
}

// the steps of the onRequest hook are module functions, so the synchronous path allocates no closures
function afterKey(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next, key: string): void {
  try {
    const allowed = isAllowed(ctx.r, view, req, key)
    if (allowed instanceof Promise)
      allowed.then((a) => (a === true ? next() : decide(ctx, req, reply, next, key)), next)
    else if (allowed === true) next()
    else decide(ctx, req, reply, next, key)
  } catch (err) {
    next(err as Error)
  }
}

function decide(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next, key: string): void {
  try {
    const cost = ctx.r.cost !== undefined ? ctx.r.cost(req) : undefined
    const d = ctx.limiter.decide(key, cost)
    if (d instanceof Promise) d.then((dd) => apply(ctx, req, reply, next, key, dd), next)
    else apply(ctx, req, reply, next, key, d)
  } catch (err) {
    next(err as Error)
  }
}

function apply(ctx: HookContext, req: FastifyRequest, reply: FastifyReply, next: Next, key: string, d: Decision): void {
  const state = d as GrudgeRequestState
  state.key = key
  state.bloom = ctx.bloomOf
  req.grudge = state
  const h = d.headers
  for (const name in h) reply.header(name, h[name])
  if (d.admitted) {
    if (ctx.limiter.recordsOutcomes)
      (req as Stateful)[kState] = {
        key,
        startMs: ctx.limiter.sketch.clock.now(),
        limiter: ctx.limiter,
        resolved: ctx.r,
      }
    else (req as Stateful)[kState] = NO_RECORD
    return next()
  }
  try {
    ctx.r.onExceeded?.(req, key, d)
    const body = ctx.r.errorResponseBuilder(req, errorContext(d, key))
    reply.code(d.status).send(body)
  } catch (err) {
    next(err as Error)
  }
}

const NO_RECORD = Object.freeze({
  key: '',
  startMs: 0,
  limiter: undefined,
  resolved: undefined,
}) as unknown as PerRequest

/** A frozen shallow copy of a policy's options (false, undefined and non-objects as given). */
function copyPolicy<T>(v: T): T {
  return typeof v === 'object' && v !== null ? Object.freeze({ ...v }) : v
}

const grudgePlugin: FastifyPluginCallback<GrudgeFastifyOptions> = (fastify, rawOptions, done) => {
  try {
    setup(fastify, rawOptions)
  } catch (err) {
    return done(err as Error)
  }
  done()
}

const PLUGIN_KEYS: readonly string[] = [...GRUDGE_FASTIFY_OPTION_KEYS, ...FASTIFY_REGISTER_KEYS]

function setup(fastify: FastifyInstance, rawOptions: GrudgeFastifyOptions): void {
  checkKnownOptions(rawOptions, PLUGIN_KEYS)
  const options = { ...rawOptions }
  // register() passes these in the options object; they are not ours
  for (const k of FASTIFY_REGISTER_KEYS) delete (options as Record<string, unknown>)[k]
  const { bloomRegistry: bloomOption, notFound, bloom: defaultBloom, targetFalsePositiveRate, ...given } = options
  // routes added later build their limiters from these defaults: copy the nested policy
  // objects now, so that mutating the caller's options after registration changes nothing
  const common = Object.freeze({
    ...given,
    limit: copyPolicy(given.limit),
    fairness: copyPolicy(given.fairness),
    abuse: given.abuse ? { ...copyPolicy(given.abuse), weights: copyPolicy(given.abuse.weights) } : given.abuse,
  })
  if (defaultBloom !== undefined)
    invalidOption('bloom', 'a route option (config.grudge.bloom), not a plugin option', defaultBloom)
  const resolved = resolveCommon<FastifyRequest, FastifyReply>(common)
  // opened last, so that a bad option above leaves no registry open
  const bloomRegistry = bloomOption === undefined ? undefined : openBloomRegistry(bloomOption, 'bloomRegistry')
  const owner = Symbol('grudge.instance')
  const telemetry = new Telemetry({
    clock: common.clock ?? systemClock,
    targetFalsePositiveRate,
    warn: (m) => fastify.log.warn(m),
  })
  const limiters: Limiter[] = []
  const makeLimiter = (r: ResolvedCommon<FastifyRequest, FastifyReply>, name: string): Limiter => {
    const l = r.makeLimiter(name, telemetry)
    limiters.push(l)
    return l
  }
  const shared = makeLimiter(resolved, 'default')

  function bloomOf(name: string): unknown {
    if (bloomRegistry === undefined) invalidOption('bloomRegistry', 'a registry (needed by bloom(name))', bloomRegistry)
    return bloomRegistry.get !== undefined ? bloomRegistry.get(name) : undefined
  }

  function makeHook(r: ResolvedCommon<FastifyRequest, FastifyReply>, limiter: Limiter): onRequestHookHandler {
    const ctx: HookContext = { r, limiter, bloomOf }
    const hook = function grudgeOnRequest(req: FastifyRequest, reply: FastifyReply, next: (err?: Error) => void): void {
      if ((req as Stateful)[kState] !== undefined) return next() // already limited by this scope's instance
      try {
        if (r.skip !== undefined && r.skip(req) === true) return next()
        const key = deriveKey(r, view, req)
        if (key instanceof Promise) key.then((k) => afterKey(ctx, req, reply, next, k), next)
        else afterKey(ctx, req, reply, next, key)
      } catch (err) {
        next(err as Error)
      }
    } as Tagged
    hook[kOwner] = owner
    return hook as onRequestHookHandler
  }

  function makeBloomHook(b: FastifyBloomRouteOptions, prefix: string): preHandlerHookHandler {
    if (typeof b !== 'object' || b === null) invalidOption(prefix.slice(0, -1), 'an object { filter, item }', b)
    checkKnownOptions(b, FASTIFY_BLOOM_ROUTE_KEYS, prefix)
    if (typeof b.item !== 'function') invalidOption(prefix + 'item', 'a function (req) => string', b.item)
    if (b.onAbsent !== undefined && typeof b.onAbsent !== 'function')
      invalidOption(prefix + 'onAbsent', 'a function (req, reply)', b.onAbsent)
    if (bloomRegistry === undefined)
      invalidOption('bloomRegistry', 'a registry (a route uses the bloom option)', bloomRegistry)
    const gate = new BloomGate({ filter: b.filter }, prefix)
    const hook = async function grudgeBloom(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
      // a route with only a Bloom check has no decision; req.grudge.bloom(name) still works
      if (req.grudge === null)
        req.grudge = Object.assign(makeDecision(true, 200, undefined, NaN, {}, 0, undefined, NaN, NaN, false), {
          key: '',
          bloom: bloomOf,
        })
      const item = await b.item(req)
      const present = await gate.check(bloomRegistry, item)
      telemetry.policy('bloom', present)
      if (present) return
      if (b.onAbsent !== undefined) {
        const body = await b.onAbsent(req, reply)
        if (!reply.sent && body !== undefined) return reply.send(body)
        if (!reply.sent) return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'Not found' })
        return reply
      }
      return reply.code(404).send({ statusCode: 404, error: 'Not Found', message: 'Not found' })
    } as unknown as Tagged
    hook[kOwner] = owner
    return hook as unknown as preHandlerHookHandler
  }

  function grudgeOnResponse(req: FastifyRequest, reply: FastifyReply, next: () => void): void {
    const st = (req as Stateful)[kState]
    if (st === undefined || st === NO_RECORD) return next()
    // once per request, even when a route hook and a scope hook (not-found) both run
    ;(req as Stateful)[kState] = NO_RECORD
    try {
      const o = outcomeOf(
        st.resolved,
        st.limiter,
        req,
        reply,
        reply.statusCode,
        st.limiter.sketch.clock.now() - st.startMs,
      )
      const p = st.limiter.record(st.key, o)
      if (p instanceof Promise) p.catch((err) => req.log.error({ err }, 'grudge: recording the outcome failed'))
    } catch (err) {
      req.log.error({ err }, 'grudge: recording the outcome failed')
    }
    next()
  }
  const onResponse = grudgeOnResponse as Tagged
  onResponse[kOwner] = owner

  const sharedHook = makeHook(resolved, shared)

  /** Replace the hooks of an outer grudge instance on this route by ours. */
  function strip<T>(list: T | T[] | undefined): T[] {
    return asArray(list).filter((h) => (h as Tagged)[kOwner] === undefined)
  }

  type RouteEntry = { limiter: Limiter; hook: onRequestHookHandler }
  const routeLimiters = new WeakMap<object, Map<string, RouteEntry>>()

  fastify.addHook('onRoute', (route: RouteOptions) => {
    const cfg = route.config?.grudge
    const onRequest = strip(route.onRequest)
    const preHandler = strip(route.preHandler)
    const onResp = strip(route.onResponse)
    // a route that carries a fastify.grudge.hook() of its own is limited by that hook alone
    const isManual = (h: unknown) => (h as Tagged)[kManual] === true
    const manual = onRequest.some(isManual) || preHandler.some(isManual)
    if (manual) onResp.push(onResponse as never)
    if (cfg === false || manual) {
      route.onRequest = onRequest
      route.preHandler = preHandler
      route.onResponse = onResp
      return
    }
    let hook = sharedHook
    let limiter = shared
    if (cfg !== undefined) {
      if (typeof cfg !== 'object' || cfg === null) invalidOption('config.grudge', 'an object or false', cfg)
      // only grudge's own entry of the route config: its other keys belong to other plugins
      checkKnownOptions(cfg, GRUDGE_ROUTE_OPTION_KEYS, 'config.grudge.')
      const { bloom, ...rest } = cfg
      if (Object.keys(rest).length > 0) {
        // one limiter per route declaration: the HEAD route Fastify derives from a GET route
        // (same config object, same url) shares the GET route's limiter, or a client would
        // get a second budget for the same handler by alternating GET and HEAD
        let byUrl = routeLimiters.get(cfg)
        if (byUrl === undefined) routeLimiters.set(cfg, (byUrl = new Map<string, RouteEntry>()))
        let entry = byUrl.get(route.url)
        if (entry === undefined) {
          const r = resolveCommon<FastifyRequest, FastifyReply>({ ...common, ...rest }, 'config.grudge.')
          const methods = asArray(route.method).join(',')
          const l = makeLimiter(r, `${methods} ${route.url}`)
          entry = { limiter: l, hook: makeHook(r, l) }
          byUrl.set(route.url, entry)
        }
        limiter = entry.limiter
        hook = entry.hook
      }
      if (bloom !== undefined) preHandler.push(makeBloomHook(bloom, 'config.grudge.bloom.'))
    }
    if (limiter.active) onRequest.unshift(hook)
    if (limiter.recordsOutcomes) onResp.push(onResponse as never)
    route.onRequest = onRequest
    route.preHandler = preHandler
    route.onResponse = onResp
  })

  const decorator: GrudgeFastifyDecorator = {
    stats: () => telemetry.checkHealth(),
    prometheus: () => prometheusText(telemetry.stats()),
    bloom: bloomOf,
    hook: (overrides?: GrudgeRouteOptions) => {
      let h: Tagged
      if (overrides === undefined) h = makeHook(resolved, shared)
      else {
        checkKnownOptions(overrides, GRUDGE_ROUTE_OPTION_KEYS, 'hook.')
        const r = resolveCommon<FastifyRequest, FastifyReply>({ ...common, ...overrides }, 'hook.')
        h = makeHook(r, makeLimiter(r, `hook:${limiters.length}`))
      }
      // the user placed it: no registration strips it, and onRoute adds no hook beside it
      delete h[kOwner]
      h[kManual] = true
      return h as unknown as onRequestHookHandler
    },
  }
  if (fastify.hasDecorator('grudge')) (fastify as unknown as { grudge: GrudgeFastifyDecorator }).grudge = decorator
  else fastify.decorate('grudge', decorator)
  if (!fastify.hasRequestDecorator('grudge')) fastify.decorateRequest('grudge', null)
  // declared on the request class, so that setting it per request keeps one object shape
  // (a property added per request would fork Fastify's Request objects into two shapes)
  if (!fastify.hasRequestDecorator(kState)) fastify.decorateRequest(kState as never, undefined as never)

  if (notFound === true) {
    fastify.setNotFoundHandler({ preHandler: sharedHook }, (req, reply) => {
      reply.code(404).send({ statusCode: 404, error: 'Not Found', message: `Route ${req.method}:${req.url} not found` })
    })
  }
  // The not-found handler is no route (onRoute never sees it), so its responses reach the
  // feedback and abuse scores through a scope hook: without it, 404s of probed URLs (the
  // typical abuse signal) would never score. Only not-found requests; once per request.
  if (notFound === true || shared.recordsOutcomes) {
    const onNotFoundResponse = function grudgeOnNotFoundResponse(
      req: FastifyRequest,
      reply: FastifyReply,
      next: () => void,
    ): void {
      if (!req.is404) return next()
      grudgeOnResponse(req, reply, next)
    } as Tagged
    onNotFoundResponse[kOwner] = owner
    fastify.addHook('onResponse', onNotFoundResponse as never)
  }

  fastify.addHook('onClose', async () => {
    await Promise.all(limiters.map((l) => l.close()))
    await bloomRegistry?.close?.()
  })
}

/**
 * The grudge Fastify plugin (fastify-plugin, Fastify 5.x). Register it before declaring
 * the routes it should limit: `await app.register(grudge, { limit: { rate: 10, burst: 20 } })`.
 * Registration fails with `ERR_GRUDGE_OPTION_INVALID` for a bad option, or a key that is
 * neither an option of {@link GrudgeFastifyOptions} nor one of Fastify's register options
 * (`prefix`, `logLevel`, `logSerializers`), named by its path with the closest option
 * suggested (`option "limit.burts": unknown option (did you mean "burst"?)`); so does
 * adding a route whose `config.grudge` has one (other keys of `config` are left alone).
 */
export const grudge = fp(grudgePlugin, { fastify: '5.x', name: 'grudge' })
export default grudge
export type {
  ErrorContext,
  KeySpec,
  CommonOptions,
  AdapterLimitOptions,
  AdapterFairnessOptions,
  AdapterAbuseOptions,
  BloomRegistryLike,
  BloomRegistryConfig,
} from './common.js'
export type { Decision } from '../src/limit/decision.js'
export type { LimiterStats } from '../src/limit/telemetry.js'
export { GrudgeStore, grudgeStore } from './fastify-rate-limit-store.js'
export type { RateLimitStoreResult, RateLimitStoreCallback } from './fastify-rate-limit-store.js'
