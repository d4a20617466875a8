/**
 * The options of the Fastify plugin, its decorators' shapes and their key tables: the
 * interfaces and the names the unknown-option check compares against live in one file.
 * @module
 */
import type { FastifyReply, FastifyRequest, RegisterOptions, onRequestHookHandler } from 'fastify'
import { optionKeys, type OptionNames } from '../../src/options.js'
import { COMMON_OPTION_NAMES, type CommonOptions } from '../../src/http/options.js'
import type { BloomRegistryConfig, BloomRegistryLike } from '../../src/http/bloom-registry.js'
import type { Decision } from '../../src/limit/decision.js'
import type { LimiterStats } from '../../src/limit/telemetry.js'
import type { KeyOps } from '../../src/http/key-ops.js'

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

/** A hook from {@link GrudgeFastifyDecorator.hook}, with the key operations of its limiter. */
export type GrudgeHook = onRequestHookHandler & KeyOps<FastifyRequest>

/**
 * `fastify.grudge`. Its `peek`, `reset` and `forgive` act on the plugin's own limiter (the
 * one of every route without a `config.grudge` of its own); a route's own limiter is
 * reached with {@link GrudgeFastifyDecorator.route}, a hook's with the hook's methods.
 */
export interface GrudgeFastifyDecorator extends KeyOps<FastifyRequest> {
  /** Windowed statistics: requests, admitted/rejected per policy, distinct keys, memory, false-positive estimate. */
  stats(): LimiterStats
  /** Prometheus text exposition of {@link GrudgeFastifyDecorator.stats} (needs the optional peer `prom-client`; rejects with `ERR_GRUDGE_PEER_MISSING` without it). */
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
  hook(overrides?: GrudgeRouteOptions): GrudgeHook
  /**
   * The key operations of a route's own limiter (a route with a `config.grudge` of its own),
   * by the limiter's name: its methods and URL as declared, `'POST /login'`, `'GET,HEAD /a'`
   * (the names `stats()` reports).
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a name no route limiter has (the
   * message lists them)
   */
  route(name: string): KeyOps<FastifyRequest>
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

/**
 * What Fastify's `register` reads from the plugin's options object and passes on with it
 * (`lib/plugin-override.js`: the route prefix, log level and log serializers of the
 * plugin's context): allowed beside grudge's options, and not ours.
 */
export const FASTIFY_REGISTER_KEYS = optionKeys<RegisterOptions>({ prefix: true, logLevel: true, logSerializers: true })

const ROUTE_OPTION_NAMES: OptionNames<GrudgeRouteOptions> = { ...COMMON_OPTION_NAMES, bloom: true }

/** The names of {@link GrudgeRouteOptions}: `config.grudge` of a route, and `fastify.grudge.hook(overrides)`. */
export const GRUDGE_ROUTE_OPTION_KEYS = optionKeys<GrudgeRouteOptions>(ROUTE_OPTION_NAMES)

/** The names of {@link GrudgeFastifyOptions} (Fastify's register options are allowed beside them). */
export const GRUDGE_FASTIFY_OPTION_KEYS = optionKeys<GrudgeFastifyOptions>({
  ...ROUTE_OPTION_NAMES,
  bloomRegistry: true,
  notFound: true,
})

/** The names of {@link FastifyBloomRouteOptions} (`config.grudge.bloom`). */
export const FASTIFY_BLOOM_ROUTE_KEYS = optionKeys<FastifyBloomRouteOptions>({
  filter: true,
  item: true,
  onAbsent: true,
})
