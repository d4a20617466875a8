import { GrudgeError, invalidOption } from '../errors.js'
import type { DebtMeter } from './debt-meter.js'
import type { ScoreStore } from './store.js'
import type { Limiter } from './limiter.js'

/** The debt meter's reading of a key (see {@link KeyState}). */
export interface LimitState {
  /** The tier read, for a tiered limit; undefined otherwise. */
  tier: string | undefined
  /** The key's debt in cost units, in [0, maxDebt]: the Min over its cells in the deciding generation. */
  debt: number
  /** The quota (burst) of the key's tier. */
  limit: number
  /** Quota units left, floored, ≥ 0 (what the `RateLimit` field's `r` would say). */
  remaining: number
  /** Ms until the debt drains to 0. */
  resetMs: number
}

/** What {@link Limiter.peek} reads of a key, per configured policy; nothing is consumed. */
export interface KeyState {
  /** The key read. */
  key: string
  /** The debt meter's reading; absent without one. */
  limit?: LimitState
  /** The feedback score in [0, 1] (its throttling probability); absent without one. */
  fairness?: {
    /** The decayed feedback score in [0, 1]. */
    score: number
  }
  /** The abuse score; absent without one. */
  abuse?: {
    /** The decayed score in [0, maxScore]. */
    score: number
    /** Whether the key is blocked (score ≥ threshold): its next request gets 403. */
    blocked: boolean
    /** Ms until the score decays below the threshold; 0 when not blocked. */
    retryAfterMs: number
  }
}

/** Which scores {@link Limiter.reset} and {@link Limiter.forgive} lower. */
export interface ForgiveOptions {
  /** The policy: `limit` (debt, in cost units), `fairness` or `abuse` (score). Default: every policy for `reset`, `limit` for `forgive`. */
  policy?: 'limit' | 'fairness' | 'abuse'
  /** For a tiered limit, the tier to lower; default every tier. */
  tier?: string
}

function known(v: number, what: string): number {
  if (Number.isNaN(v))
    throw new GrudgeError(
      'ERR_GRUDGE_LIMIT_STORE_FAILED',
      `${what}: expected a score from the store, received NaN (the store failed and onStoreError answered)`,
    )
  return v
}

async function read(store: ScoreStore, key: string, what: string): Promise<number> {
  return known(await store.read(key), what)
}

/**
 * Lower a key's cells by `amount`, or by the key's own estimate E (the Min over its cells in
 * the deciding generation) when `amount` is undefined, clamped at 0 (spec/limiter.md §Forgive).
 */
async function lower(
  limiter: Limiter,
  store: ScoreStore,
  policy: string,
  key: string,
  amount: number | undefined,
  what: string,
): Promise<void> {
  const by = amount ?? (await read(store, key, what))
  if (by > 0) known(await store.add(key, -by), what)
  // a Redis exact store in its 'local' fallback lowered its own copy only: said once, through
  // the adapter's logger (the telemetry's warn), without the key
  if (store.writesLocally?.(key) === true)
    limiter.telemetry.notice(
      `grudge: ${limiter.name}: ${what}() during a Redis outage (onStoreError: 'local') lowered the ${policy} of the key on this instance's in-process fallback only; the shared cells in Redis keep it, and the fallback is dropped when Redis answers again: repeat the ${what}() then if it must hold fleet-wide`,
    )
}

/**
 * {@link Limiter.peek}.
 * @internal
 */
export async function peekKey(limiter: Limiter, key: string, tier: string | undefined): Promise<KeyState> {
  checkKey(key)
  const state: KeyState = { key }
  const meter = limiter.limit !== undefined ? limiter.meterOf(tier) : undefined
  if (meter !== undefined) {
    const debt = await read(meter.store, key, 'peek')
    const v = meter.verdict({ admitted: true, score: debt }, 0)
    state.limit = { tier, debt, limit: meter.burst, remaining: v.remaining, resetMs: v.resetMs }
  }
  if (limiter.fairness !== undefined) state.fairness = { score: await read(limiter.fairness.store, key, 'peek') }
  const abuse = limiter.abuse
  if (abuse !== undefined) {
    const score = await read(abuse.store, key, 'peek')
    const blocked = score >= abuse.threshold
    state.abuse = { score, blocked, retryAfterMs: blocked ? abuse.retryAfterMsFor(score) : 0 }
  }
  return state
}

function meters(limiter: Limiter, tier: string | undefined): DebtMeter[] {
  if (limiter.limit === undefined) return []
  if (tier === undefined && limiter.tiers !== undefined) return [...limiter.tiers.values()]
  return [limiter.meterOf(tier)!]
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string') invalidOption('key', 'a request key string (e.g. ip:203.0.113.7)', typeof key)
}

/**
 * {@link Limiter.forgive} (and {@link Limiter.reset}, with `amount` undefined).
 * @internal
 */
export async function forgiveKey(
  limiter: Limiter,
  key: string,
  amount: number | undefined,
  options: ForgiveOptions | undefined,
  what: 'reset' | 'forgive',
): Promise<void> {
  checkKey(key)
  const o = options ?? {}
  if (typeof o !== 'object' || o === null) invalidOption(`${what} options`, 'an object { policy?, tier? }', o)
  if (amount !== undefined && (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0))
    invalidOption('amount', 'a finite number > 0', amount)
  const policy = o.policy ?? (what === 'forgive' ? 'limit' : undefined)
  if (policy !== undefined && policy !== 'limit' && policy !== 'fairness' && policy !== 'abuse')
    invalidOption('policy', "'limit', 'fairness' or 'abuse'", policy)
  if (policy !== undefined && limiter[policy] === undefined)
    invalidOption('policy', `a policy this limiter has (it has no ${policy})`, policy)
  if (o.tier !== undefined) limiter.meterOf(o.tier) // an unknown tier is refused before anything changes
  const stores: [ScoreStore, string][] = []
  if (policy === undefined || policy === 'limit')
    for (const m of meters(limiter, o.tier)) stores.push([m.store, 'debt'])
  if ((policy === undefined || policy === 'fairness') && limiter.fairness !== undefined)
    stores.push([limiter.fairness.store, 'fairness score'])
  if ((policy === undefined || policy === 'abuse') && limiter.abuse !== undefined)
    stores.push([limiter.abuse.store, 'abuse score'])
  for (const [s, name] of stores) await lower(limiter, s, name, key, amount, what)
}
