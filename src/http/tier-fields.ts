/**
 * The rate-limit field sources of a tiered limiter: one per tier, since each tier has its
 * own quota (`q`) and window (`w`); the policy name is the limit's, the same for every tier.
 * @module
 */
import { fieldSource, type FieldSource, type HeaderOptions } from './headers.js'
import type { Limiter } from '../limit/limiter.js'

/**
 * The field source of each tier of a tiered limiter, built once, or undefined for an untiered one.
 * @param limiter the limiter
 * @param config which fields are written (`headers` of the adapter's config)
 * @param implicit whether the policy name was defaulted (see `fieldSource`)
 * @internal
 */
export function tierFieldSources(
  limiter: Limiter,
  config: { readonly headers: HeaderOptions | false },
  implicit: boolean,
): ReadonlyMap<string, FieldSource> | undefined {
  if (limiter.tiers === undefined) return undefined
  const out = new Map<string, FieldSource>()
  for (const [name, meter] of limiter.tiers)
    out.set(name, fieldSource({ name: limiter.name, limit: meter }, config.headers, implicit))
  return out
}
