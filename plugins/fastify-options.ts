/**
 * The option names of the Fastify plugin, for the unknown-option check at registration (a
 * module of its own so that `grudge/fastify` exports no more than it did).
 */
import type { RegisterOptions } from 'fastify'
import { optionKeys, type OptionNames } from '../src/options.js'
import { COMMON_OPTION_NAMES } from './common.js'
import type { FastifyBloomRouteOptions, GrudgeFastifyOptions, GrudgeRouteOptions } from './fastify.js'

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
