import { GrudgeError, invalidOption } from '../errors.js'
import { checkKnownOptions, optionKeys } from '../options.js'
import { DebtMeter, parseDebtMeterOptions, type DebtMeterConfig, type DebtMeterOptions } from './debt-meter.js'
import type { ResolvedSketchOptions } from './options.js'

/** One tier of a tiered debt meter: its own rate, burst and debt ceiling. */
export interface TierOptions {
  /** Requests (cost units) per second that drain from a key's debt in this tier: finite, > 0. */
  rate: number
  /** The debt a key of this tier may carry and still be admitted: finite, > 0 (the tier's quota). */
  burst: number
  /** The tier's debt ceiling: finite, ≥ burst. Default 10 × burst. */
  maxDebt?: number
}

/** The option names of {@link TierOptions}; any other key is refused. */
export const TIER_OPTION_KEYS = optionKeys<TierOptions>({ rate: true, burst: true, maxDebt: true })

/**
 * A debt meter with per-plan limits (`limit: { tiers: { free: {…}, pro: {…} } }`): each
 * request is charged in the tier it names. Each tier is a debt meter of its own with its own
 * sketch (spec/limiter.md §Tiers says why cells are not shared across tiers), so the memory
 * of the policy is at most the number of tiers × the policy's `memory` budget; a self-sized
 * tier that sees little traffic shrinks to 64 cells per level.
 */
export interface TieredDebtMeterOptions {
  /** The tiers by name: 1 to {@link MAX_TIERS} names of printable ASCII, each with its own `{ rate, burst, maxDebt? }`. */
  tiers: Readonly<Record<string, TierOptions>>
  /** Cost of one request: a finite number in [0, the smallest burst]; default 1. */
  cost?: number
  /** Policy name in the rate-limit fields (the same for every tier); default `"default"`. */
  name?: string
}

/** The option names of {@link TieredDebtMeterOptions}; any other key is refused. */
export const TIERED_DEBT_METER_OPTION_KEYS = optionKeys<TieredDebtMeterOptions>({
  tiers: true,
  cost: true,
  name: true,
})

/** The most tiers a policy takes: each is a sketch of its own, so the set must stay small. */
export const MAX_TIERS = 64

/** Whether debt-meter options are tiered (`tiers` given). */
export function isTiered(o: DebtMeterOptions | TieredDebtMeterOptions): o is TieredDebtMeterOptions {
  return typeof o === 'object' && o !== null && 'tiers' in o && o.tiers !== undefined
}

/**
 * Tiered options checked: one {@link DebtMeterConfig} per tier, in the order given. Pure.
 * @param options the policy options
 * @param sketch the limiter's resolved sketch options (generations, periodMs)
 * @param prefix option path prefix for messages (`limit.`)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option (`limit.tiers.pro.rate`,
 * an unknown key, no tier or more than {@link MAX_TIERS}, a tier name that is not printable
 * ASCII, a cost above a tier's burst); `ERR_GRUDGE_ROTATOR_AMNESTY` as a debt meter
 * @internal
 */
export function parseTieredOptions(
  options: TieredDebtMeterOptions,
  sketch: Pick<ResolvedSketchOptions, 'generations' | 'periodMs'>,
  prefix: string,
): ReadonlyMap<string, DebtMeterConfig> {
  checkKnownOptions(options, TIERED_DEBT_METER_OPTION_KEYS, prefix)
  const tiers = options.tiers
  if (typeof tiers !== 'object' || tiers === null || Array.isArray(tiers))
    invalidOption(prefix + 'tiers', 'an object of tier name → { rate, burst, maxDebt? }', tiers)
  const names = Object.keys(tiers)
  if (names.length === 0 || names.length > MAX_TIERS)
    invalidOption(prefix + 'tiers', `1 to ${MAX_TIERS} tiers`, `${names.length} tiers`)
  const out = new Map<string, DebtMeterConfig>()
  for (const name of names) {
    if (!/^[\x20-\x7e]+$/.test(name)) invalidOption(`${prefix}tiers`, 'tier names of printable ASCII', name)
    const t = tiers[name]
    const p = `${prefix}tiers.${name}.`
    if (typeof t !== 'object' || t === null) invalidOption(p.slice(0, -1), 'an object { rate, burst, maxDebt? }', t)
    checkKnownOptions(t, TIER_OPTION_KEYS, p)
    const tier: DebtMeterOptions = { rate: t.rate, burst: t.burst, maxDebt: t.maxDebt, name: options.name }
    if ('cost' in options) tier.cost = options.cost
    try {
      out.set(name, parseDebtMeterOptions(tier, sketch, p))
    } catch (err) {
      // the shared cost is checked against each tier's burst: name the option that was set
      if (err instanceof GrudgeError && err.message.includes(`"${p}cost"`))
        invalidOption(prefix + 'cost', `a finite number in [0, the smallest burst] (tier "${name}")`, options.cost)
      throw err
    }
  }
  return out
}

/**
 * The meters of a tiered debt meter, one per tier, by name.
 * @param options the policy options
 * @param sketch resolved sketch options
 * @param storeName the policy's store name; tier `t` is stored as `<storeName>:<t>`
 * @param prefix option path prefix for messages
 * @throws {GrudgeError} as {@link parseTieredOptions}
 * @internal
 */
export function buildTiers(
  options: TieredDebtMeterOptions,
  sketch: ResolvedSketchOptions,
  storeName: string,
  prefix: string,
): ReadonlyMap<string, DebtMeter> {
  parseTieredOptions(options, sketch, prefix)
  const out = new Map<string, DebtMeter>()
  for (const name of Object.keys(options.tiers)) {
    const t = options.tiers[name]
    const tier: DebtMeterOptions = { rate: t.rate, burst: t.burst, maxDebt: t.maxDebt, name: options.name }
    if ('cost' in options) tier.cost = options.cost
    out.set(name, new DebtMeter(tier, sketch, `${storeName}:${name}`, `${prefix}tiers.${name}.`))
  }
  return out
}

/**
 * The error of a request naming no tier of a tiered policy (or a tier it does not have).
 * @param names the policy's tier names
 * @param received what the tier function returned
 * @internal
 */
export function unknownTier(names: readonly string[], received: unknown): never {
  const shown = typeof received === 'string' ? JSON.stringify(received.slice(0, 40)) : typeof received
  const expected =
    names.length === 0
      ? 'no tier (this policy has no tiers)'
      : `one of ${names.map((n) => JSON.stringify(n)).join(', ')}`
  throw new GrudgeError('ERR_GRUDGE_TIER_UNKNOWN', `limit.tier: expected ${expected}, received ${shown}`)
}
