/**
 * Route wiring: in `onRoute`, each route gets the hooks of the innermost grudge instance
 * (an outer instance's are stripped), its own limiter when `config.grudge` overrides the
 * options, its Bloom pre-check, and the outcome hooks when a policy records outcomes. A
 * route carrying a `fastify.grudge.hook()` of its own is limited by that hook and by the
 * plugin's (or the route's) limiter: limits stack.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { invalidOption } from '../../src/errors.js'
import { checkKnownOptions } from '../../src/options.js'
import { parseLimiterOptions } from '../../src/http/options.js'
import type { Limiter } from '../../src/limit/limiter.js'
import { asOnRequest, kManual, kOwner, makeBloomHook, makeHook, type PluginScope, type Tagged } from './hooks.js'
import { GRUDGE_ROUTE_OPTION_KEYS, type GrudgeRouteOptions } from './options.js'
import { keyOps } from '../../src/http/key-ops.js'
import type { onRequestHookHandler } from 'fastify'

/** The plugin-level limiter, hook and defaults the routes start from. */
export interface RouteDefaults {
  /** The plugin's options (frozen copies of the policies): a route's `config.grudge` is laid over them. */
  readonly common: Readonly<GrudgeRouteOptions>
  /** The plugin's limiter, shared by every route without overrides. */
  readonly shared: Limiter
  /** Its hook. */
  readonly sharedHook: onRequestHookHandler
  /** Build (and keep, for closing) a limiter of parsed options. */
  readonly makeLimiter: (
    config: ReturnType<typeof parseLimiterOptions<FastifyRequest, FastifyReply>>,
    name: string,
  ) => Limiter
}

function asArray<T>(v: T | T[] | undefined): T[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v]
}

/** The hooks of a route without any grudge instance's (ours are added back). */
function strip<T>(list: T | T[] | undefined): T[] {
  return asArray(list).filter((h) => (h as Tagged)[kOwner] === undefined)
}

const isManual = (h: unknown) => (h as Tagged)[kManual] === true

type RouteEntry = { limiter: Limiter; hook: onRequestHookHandler }

/**
 * Add the `onRoute` hook that wires every route declared after registration.
 * @throws {GrudgeError} (when a route is added) `ERR_GRUDGE_OPTION_INVALID` for a bad
 * `config.grudge`, named by its path
 */
export function wireRoutes(fastify: FastifyInstance, scope: PluginScope, defaults: RouteDefaults): void {
  // one limiter per route declaration: the HEAD route Fastify derives from a GET route
  // (same config object, same url) shares the GET route's limiter, or a client would get a
  // second budget for the same handler by alternating GET and HEAD
  const routeLimiters = new WeakMap<object, Map<string, RouteEntry>>()

  function routeEntry(cfg: GrudgeRouteOptions, rest: GrudgeRouteOptions, route: RouteOptions): RouteEntry {
    let byUrl = routeLimiters.get(cfg)
    if (byUrl === undefined) routeLimiters.set(cfg, (byUrl = new Map<string, RouteEntry>()))
    let entry = byUrl.get(route.url)
    if (entry === undefined) {
      const config = parseLimiterOptions<FastifyRequest, FastifyReply>(
        { ...defaults.common, ...rest },
        'config.grudge.',
      )
      const name = `${asArray(route.method).join(',')} ${route.url}`
      const limiter = defaults.makeLimiter(config, name)
      entry = { limiter, hook: asOnRequest(makeHook(scope, config, limiter)) }
      scope.routeOps.set(name, keyOps(config, scope.view, limiter))
      byUrl.set(route.url, entry)
    }
    return entry
  }

  fastify.addHook('onRoute', (route: RouteOptions) => {
    const cfg = route.config?.grudge
    const onRequest = strip(route.onRequest)
    const preHandler = strip(route.preHandler)
    const onResponse = strip(route.onResponse)
    const onRequestAbort = strip(route.onRequestAbort)
    // a hook(overrides) the user placed stacks with the plugin's (or the route's) limiter, as
    // Express middleware do: every limiter on the route is enforced (spec/http.md §5)
    const manual = onRequest.some(isManual) || preHandler.some(isManual)
    let hook = defaults.sharedHook
    let limiter = defaults.shared
    if (cfg !== false && cfg !== undefined) {
      if (typeof cfg !== 'object' || cfg === null) invalidOption('config.grudge', 'an object or false', cfg)
      // only grudge's own entry of the route config: its other keys belong to other plugins
      checkKnownOptions(cfg, GRUDGE_ROUTE_OPTION_KEYS, 'config.grudge.')
      const { bloom, ...rest } = cfg
      if (Object.keys(rest).length > 0) ({ limiter, hook } = routeEntry(cfg, rest, route))
      if (bloom !== undefined) preHandler.push(makeBloomHook(scope, bloom, 'config.grudge.bloom.'))
    }
    let records = manual
    if (cfg !== false) {
      if (limiter.active) onRequest.unshift(hook)
      if (limiter.recordsOutcomes) records = true
    }
    if (records) {
      onResponse.push(scope.onResponse as never)
      onRequestAbort.push(scope.onRequestAbort as never)
    }
    route.onRequest = onRequest
    route.preHandler = preHandler
    route.onResponse = onResponse
    route.onRequestAbort = onRequestAbort
  })
}
