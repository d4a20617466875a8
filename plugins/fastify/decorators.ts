/**
 * The plugin's decorators: `fastify.grudge` (stats, Prometheus text, Bloom filters, hooks
 * for routes of your own) and the request's `grudge` slot.
 * @module
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { checkKnownOptions } from '../../src/options.js'
import { parseLimiterOptions } from '../../src/http/options.js'
import { prometheusText } from '../../src/http/prometheus.js'
import {
  asOnRequest,
  kDebtHigh,
  kDebtLow,
  kFirst,
  kDecided,
  kKey,
  kManual,
  kOwner,
  makeHook,
  requestGrudge,
  setRequestGrudge,
  type PluginScope,
} from './hooks.js'
import type { RouteDefaults } from './routes.js'
import {
  GRUDGE_ROUTE_OPTION_KEYS,
  type GrudgeFastifyDecorator,
  type GrudgeHook,
  type GrudgeRouteOptions,
} from './options.js'
import { keyOps } from '../../src/http/key-ops.js'
import { invalidOption } from '../../src/errors.js'

/**
 * Decorate the instance with `fastify.grudge` and the request with `grudge` (null until
 * decided; built when read, see {@link requestGrudge}): an accessor on the request
 * prototype, and five slots of the request class (the kept figures: key, first limiter, debt;
 * the first limiter's Decision when it is not kept as figures).
 */
export function decorate(
  fastify: FastifyInstance,
  scope: PluginScope,
  defaults: RouteDefaults & { readonly config: Parameters<typeof makeHook>[1] },
): void {
  const shared = keyOps(defaults.config, scope.view, defaults.shared)
  const decorator: GrudgeFastifyDecorator = {
    peek: shared.peek,
    reset: shared.reset,
    forgive: shared.forgive,
    route: (name: string) => {
      const ops = scope.routeOps.get(name)
      if (ops === undefined)
        invalidOption(
          'route',
          `the name of a route limiter (${[...scope.routeOps.keys()].map((n) => JSON.stringify(n)).join(', ') || 'none: no route has a config.grudge of its own'})`,
          name,
        )
      return ops
    },
    stats: () => scope.telemetry.checkHealth(),
    prometheus: () => prometheusText(scope.telemetry.stats()),
    bloom: scope.bloomOf,
    hook: (overrides?: GrudgeRouteOptions) => {
      let h
      let ops = shared
      if (overrides === undefined) h = makeHook(scope, defaults.config, defaults.shared)
      else {
        checkKnownOptions(overrides, GRUDGE_ROUTE_OPTION_KEYS, 'hook.')
        const config = parseLimiterOptions<FastifyRequest, FastifyReply>({ ...defaults.common, ...overrides }, 'hook.')
        const limiter = defaults.makeLimiter(config, `hook:${scope.limiters.length}`)
        h = makeHook(scope, config, limiter)
        ops = keyOps(config, scope.view, limiter)
      }
      // the user placed it: no registration strips it; it stacks with the route's own limiter
      delete h[kOwner]
      h[kManual] = true
      const hook = asOnRequest(h) as GrudgeHook
      hook.peek = ops.peek
      hook.reset = ops.reset
      hook.forgive = ops.forgive
      return hook
    },
  }
  if (fastify.hasDecorator('grudge')) (fastify as unknown as { grudge: GrudgeFastifyDecorator }).grudge = decorator
  else fastify.decorate('grudge', decorator)
  // request.grudge is built when read, from the request's own slots (requestGrudge); setting
  // it replaces it for that request
  if (!fastify.hasRequestDecorator('grudge'))
    fastify.decorateRequest('grudge', {
      getter(this: FastifyRequest) {
        return requestGrudge(this)
      },
      setter(this: FastifyRequest, value: unknown) {
        setRequestGrudge(this, value)
      },
    } as never)
  // declared on the request class, so that setting them per request keeps one object shape
  // (a property added per request would fork Fastify's Request objects into two shapes)
  if (!fastify.hasRequestDecorator(kKey)) fastify.decorateRequest(kKey as never, '' as never)
  if (!fastify.hasRequestDecorator(kFirst)) fastify.decorateRequest(kFirst as never, null as never)
  if (!fastify.hasRequestDecorator(kDecided)) fastify.decorateRequest(kDecided as never, null as never)
  if (!fastify.hasRequestDecorator(kDebtHigh)) fastify.decorateRequest(kDebtHigh as never, 0 as never)
  if (!fastify.hasRequestDecorator(kDebtLow)) fastify.decorateRequest(kDebtLow as never, 0 as never)
}
