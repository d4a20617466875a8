/**
 * The option names of the Express middleware, for the unknown-option check at creation (a
 * module of its own so that `grudge/express` exports no more than it did).
 */
import { optionKeys } from '../src/options.js'
import { COMMON_OPTION_NAMES } from './common.js'
import type { GrudgeExpressOptions } from './express.js'

/** The names of {@link GrudgeExpressOptions}. */
export const GRUDGE_EXPRESS_OPTION_KEYS = optionKeys<GrudgeExpressOptions>({
  ...COMMON_OPTION_NAMES,
  name: true,
  handler: true,
  warn: true,
  bloom: true,
})

/** The names of the middleware's `bloom` option. */
export const EXPRESS_BLOOM_KEYS = optionKeys<NonNullable<GrudgeExpressOptions['bloom']>>({
  registry: true,
  filter: true,
  item: true,
  onAbsent: true,
})
