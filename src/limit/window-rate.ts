import { invalidOption } from '../errors.js'

/** A fixed-window limit as @fastify/rate-limit writes it: `max` requests per `timeWindow` ms. */
export interface FastifyRateLimitWindow {
  /** Requests per window: a finite number > 0. */
  max: number
  /** The window in ms: a finite number > 0 (FRL's strings such as `'1 minute'` are not parsed here). */
  timeWindow: number
}

/** A fixed-window limit as express-rate-limit writes it: `limit` requests per `windowMs` ms. */
export interface ExpressRateLimitWindow {
  /** Requests per window: a finite number > 0. */
  limit: number
  /** The window in ms: a finite number > 0. */
  windowMs: number
}

/** The debt-meter options a fixed window maps to (the `limit` option of the grudge adapters and the Limiter). */
export interface WindowRate {
  /** Requests per second drained from a key's debt: max / timeWindow · 1000. */
  rate: number
  /** The burst: max, the requests a fresh key may send at once. */
  burst: number
}

/**
 * Turn a fixed-window limit, "`max` per `timeWindow` ms" (@fastify/rate-limit) or "`limit`
 * per `windowMs` ms" (express-rate-limit), into the `{ rate, burst }` of a grudge debt meter:
 * burst = max and rate = max / timeWindow · 1000 per second. Example: 100 per 60 000 ms →
 * `{ rate: 100 / 60, burst: 100 }`.
 *
 * The two do not behave the same over time (docs/migrating.md): both admit `max` requests at
 * once from a fresh key and the same long-run average, but the fixed window then refuses
 * until the window ends and admits `max` again at once (so up to 2·max straddle an edge),
 * while the debt meter (a GCRA, ITU-T I.371) admits one request every timeWindow / max ms.
 * @param window `{ max, timeWindow }` or `{ limit, windowMs }`, numbers > 0, the window in ms
 * @returns `{ rate, burst }`, rate per second
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when neither shape is given, when both
 * are, or for a count or window that is not a finite number > 0 (a string window included)
 */
export function windowRate(window: FastifyRateLimitWindow | ExpressRateLimitWindow): WindowRate {
  if (typeof window !== 'object' || window === null)
    invalidOption('window', 'an object { max, timeWindow } or { limit, windowMs }', window)
  const frl = 'max' in window || 'timeWindow' in window
  const erl = 'limit' in window || 'windowMs' in window
  if (frl === erl)
    invalidOption('window', 'exactly one of { max, timeWindow } and { limit, windowMs }', Object.keys(window).join(','))
  const [countName, windowName] = frl ? ['max', 'timeWindow'] : ['limit', 'windowMs']
  const o = window as unknown as Record<string, unknown>
  const count = o[countName]
  const ms = o[windowName]
  if (typeof count !== 'number' || !Number.isFinite(count) || count <= 0)
    invalidOption(countName, 'a finite number > 0 (requests per window)', count)
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0)
    invalidOption(windowName, 'a finite number of ms > 0', ms)
  // count · 1000 is exact for any sane count, so rate is the correctly rounded quotient (100 / 60 exactly as written)
  return { rate: (count * 1000) / ms, burst: count }
}
