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
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify'
import { Telemetry } from '../../src/limit/telemetry.js'
import type { Limiter } from '../../src/limit/limiter.js'
import { GrudgeError, invalidOption } from '../../src/errors.js'
import { systemClock } from '../../src/clock.js'
import { checkKnownOptions } from '../../src/options.js'
import { buildLimiter, parseLimiterOptions } from '../../src/http/options.js'
import { openBloomRegistry, type BloomRegistryLike } from '../../src/http/bloom-registry.js'
import { notFoundBody } from '../../src/http/error-body.js'
import { logStoreEvents, storeOutageLog } from '../../src/http/store-log.js'
import {
  asOnRequest,
  fastifyView,
  makeHook,
  owned,
  recordAborted,
  recordOutcome,
  type FastifyConfig,
  type PluginScope,
} from './hooks.js'
import { wireRoutes, type RouteDefaults } from './routes.js'
import { decorate } from './decorators.js'
import {
  FASTIFY_REGISTER_KEYS,
  GRUDGE_FASTIFY_OPTION_KEYS,
  type GrudgeFastifyOptions,
  type GrudgeRouteOptions,
} from './options.js'

const PLUGIN_KEYS: readonly string[] = [...GRUDGE_FASTIFY_OPTION_KEYS, ...FASTIFY_REGISTER_KEYS]

/** A frozen shallow copy of a policy's options (false, undefined and non-objects as given). */
function copyPolicy<T>(v: T): T {
  return typeof v === 'object' && v !== null ? Object.freeze({ ...v }) : v
}

/**
 * The plugin's defaults, copied: routes added later build their limiters from them, so
 * mutating the caller's options after registration changes nothing.
 */
function pluginDefaults(rawOptions: GrudgeFastifyOptions) {
  checkKnownOptions(rawOptions, PLUGIN_KEYS)
  const options = { ...rawOptions }
  // register() passes these in the options object; they are not ours
  for (const k of FASTIFY_REGISTER_KEYS) delete (options as Record<string, unknown>)[k]
  const { bloomRegistry, notFound, bloom, targetFalsePositiveRate, ...given } = options
  if (bloom !== undefined) invalidOption('bloom', 'a route option (config.grudge.bloom), not a plugin option', bloom)
  const common: Readonly<GrudgeRouteOptions> = Object.freeze({
    ...given,
    limit: copyPolicy(given.limit),
    fairness: copyPolicy(given.fairness),
    abuse: given.abuse ? { ...copyPolicy(given.abuse), weights: copyPolicy(given.abuse.weights) } : given.abuse,
  })
  return { common, bloomRegistry, notFound, targetFalsePositiveRate }
}

/**
 * The not-found handler is no route (onRoute never sees it): with `notFound` it is limited
 * by the plugin's hook, and its responses reach the feedback and abuse scores through a
 * scope hook; without it, 404s of probed URLs (the typical abuse signal) would never
 * score. Only not-found requests; once per request.
 */
function limitNotFound(fastify: FastifyInstance, scope: PluginScope, defaults: RouteDefaults, notFound: boolean): void {
  if (notFound) {
    fastify.setNotFoundHandler({ preHandler: defaults.sharedHook }, (req, reply) => {
      reply.code(404).send(notFoundBody(`Route ${req.method}:${req.url} not found`))
    })
  }
  if (notFound || defaults.shared.recordsOutcomes) {
    const onNotFoundResponse = owned(
      scope.owner,
      function grudgeOnNotFoundResponse(req: FastifyRequest, reply: FastifyReply, next: () => void): void {
        if (!req.is404) return next()
        recordOutcome(req, reply, next)
      },
    )
    fastify.addHook('onResponse', onNotFoundResponse)
  }
}

/** The instances (scopes) grudge is registered in: fastify-plugin hands the plugin its parent's own instance. */
const registeredScopes = new WeakSet<FastifyInstance>()

function setup(fastify: FastifyInstance, rawOptions: GrudgeFastifyOptions): void {
  // a second registration in one scope would silently replace the decorator and stack a
  // second set of hooks on every later route: refused (a child scope may register its own)
  if (registeredScopes.has(fastify))
    throw new GrudgeError(
      'ERR_GRUDGE_ADAPTER_REGISTERED',
      'grudge: expected one registration per scope, received a second one in the same scope (use config.grudge or fastify.grudge.hook(overrides) for route limits, or register it in a child scope)',
    )
  const { common, bloomRegistry: bloomOption, notFound, targetFalsePositiveRate } = pluginDefaults(rawOptions)
  const config = parseLimiterOptions<FastifyRequest, FastifyReply>(common)
  // opened last, so that a bad option above leaves no registry open
  const bloomRegistry: BloomRegistryLike | undefined =
    bloomOption === undefined ? undefined : openBloomRegistry(bloomOption, 'bloomRegistry')
  const owner = Symbol('grudge.instance')
  const telemetry = new Telemetry({
    clock: common.clock ?? systemClock,
    targetFalsePositiveRate,
    warn: (m) => fastify.log.warn(m),
  })
  const limiters: Limiter[] = []
  const scope: PluginScope = {
    owner,
    telemetry,
    bloomRegistry,
    bloomOf(name: string): unknown {
      if (bloomRegistry === undefined)
        invalidOption('bloomRegistry', 'a registry (needed by bloom(name))', bloomRegistry)
      return bloomRegistry.get !== undefined ? bloomRegistry.get(name) : undefined
    },
    limiters,
    view: fastifyView(fastify.log),
    onResponse: owned(owner, function grudgeOnResponse(req: FastifyRequest, reply: FastifyReply, next: () => void) {
      recordOutcome(req, reply, next)
    }),
    onRequestAbort: owned(owner, function grudgeOnRequestAbort(req: FastifyRequest, done: () => void) {
      recordAborted(req, done)
    }),
    routeOps: new Map(),
  }
  // one outage log for every limiter of the instance: a store down is one event, not one per route
  const onStoreFailure = storeOutageLog(
    (message, err, failures) => fastify.log.warn({ err, failures }, message),
    common.clock ?? systemClock,
  )
  const makeLimiter = (c: FastifyConfig, name: string): Limiter => {
    const l = buildLimiter(c, name, telemetry)
    l.onStoreFailure = onStoreFailure
    limiters.push(l)
    return l
  }
  const shared = makeLimiter(config, 'default')
  if (!shared.active)
    fastify.log.warn(
      'grudge: registered without a policy (limit, fairness or abuse): only routes with their own config.grudge or a fastify.grudge.hook(overrides) are limited',
    )
  const defaults = { common, config, shared, sharedHook: asOnRequest(makeHook(scope, config, shared)), makeLimiter }
  registeredScopes.add(fastify)
  wireRoutes(fastify, scope, defaults)
  decorate(fastify, scope, defaults)
  limitNotFound(fastify, scope, defaults, notFound === true)
  // a Redis store's transitions (its local fallback taking over, Redis back) reach the logger
  const stopStoreLog = logStoreEvents(common.store, (level, message, e) =>
    fastify.log[level]({ policy: e.policy, err: e.error }, message),
  )
  fastify.addHook('onClose', async () => {
    stopStoreLog()
    await Promise.all(limiters.map((l) => l.close()))
    await bloomRegistry?.close?.()
  })
}

const grudgePlugin: FastifyPluginCallback<GrudgeFastifyOptions> = (fastify, rawOptions, done) => {
  try {
    setup(fastify, rawOptions)
  } catch (err) {
    return done(err as Error)
  }
  done()
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
  FastifyBloomRouteOptions,
  GrudgeRouteOptions,
  GrudgeFastifyOptions,
  GrudgeRequestState,
  GrudgeFastifyDecorator,
  GrudgeHook,
} from './options.js'
export type * from '../../src/http/adapter-types.js'
export { GrudgeStore, grudgeStore, dateClock } from '../fastify-rate-limit-store.js'
export type {
  RateLimitStoreResult,
  RateLimitStoreCallback,
  RateLimitStoreOptions,
} from '../fastify-rate-limit-store.js'
