/**
 * Rate-limit response fields.
 *
 * The IETF fields follow **draft-ietf-httpapi-ratelimit-headers-10** (27 September 2025),
 * whose two fields are Structured Field Lists (RFC 9651) of items named by the policy:
 *
 * - `RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>` — the quota (here the burst)
 *   and the window in which it is restored (here burst / rate, rounded up);
 * - `RateLimit: "<name>";r=<remaining>;t=<seconds>` — quota units left and seconds until
 *   the quota is restored (see {@link RateLimitFigures.resetMs} for what "restored" means).
 *
 * (Earlier drafts used `RateLimit-Limit/-Remaining/-Reset` or one dictionary
 * `limit=, remaining=, reset=`; those are not emitted.) The legacy family is
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (delta seconds, as
 * GitHub and @fastify/rate-limit send it), and `Retry-After` is delay-seconds (RFC 9110
 * §10.2.3).
 *
 * Every figure is a non-negative integer: values are floored (remaining) or rounded up
 * (seconds), clamped at 0 and never NaN; a 0 is sent as `0`, never omitted.
 */

import { optionKeys } from '../options.js'

/** Which fields {@link rateLimitHeaders} writes. */
export interface HeaderOptions {
  /** Write `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10). Default true. */
  ietf?: boolean
  /** Write `X-RateLimit-Limit/Remaining/Reset`. Default false. */
  legacy?: boolean
  /** Write `Retry-After` on denials. Default true. */
  retryAfter?: boolean
}

/** The option names of {@link HeaderOptions}; any other key is refused where a constructor takes them. */
export const HEADER_OPTION_KEYS = optionKeys<HeaderOptions>({ ietf: true, legacy: true, retryAfter: true })

/** The figures a policy reports, in the units named. */
export interface RateLimitFigures {
  /** Policy name, written as an sf-string item. */
  name: string
  /** Quota (the burst), ≥ 0. */
  limit: number
  /** Quota units left (floored, ≥ 0). */
  remaining: number
  /** Window in ms in which the quota is restored from empty (burst / rate). */
  windowMs: number
  /** Ms until the quota is restored: for an admitted request until the debt drains to 0; for a denied one until this request would be admitted (equal to `retryAfterMs`). */
  resetMs: number
  /** The `RateLimit-Policy` value, when the caller has it cached; else built from name, limit and windowMs. */
  policyField?: string
  /** The name as an sf-string, when the caller has it cached. */
  quotedName?: string
}

/** The `RateLimit-Policy` value: `"<name>";q=<limit>;w=<window seconds, ≥ 1>`. */
export function policyField(name: string, limit: number, windowMs: number): string {
  return `${sfString(name)};q=${nonNegativeInt(limit)};w=${Math.max(1, delaySeconds(windowMs))}`
}

/**
 * Delay-seconds of a duration in ms: ceil(ms / 1000), at least 0, NaN → 0. Sub-microsecond
 * excess (floating-point noise of a decayed score divided by a small rate) is ignored, so an
 * exact 86 400 000 ms computed as 86 400 000.000003 is 86 400 s, not 86 401.
 */
export function delaySeconds(ms: number): number {
  if (!(ms > 0)) return 0
  if (ms === Infinity) return 2147483647
  return Math.ceil(ms / 1000 - 1e-6)
}

/** Retry-After seconds of a denial: {@link delaySeconds}, at least 1. */
export function retryAfterSeconds(ms: number): number {
  const s = delaySeconds(ms)
  return s < 1 ? 1 : s
}

/** A non-negative integer for a header: floor, ≥ 0, NaN → 0. */
export function nonNegativeInt(x: number): number {
  if (!(x > 0)) return 0
  if (x === Infinity) return Number.MAX_SAFE_INTEGER
  return Math.floor(x)
}

/** An RFC 9651 sf-string: printable ASCII with `"` and `\` escaped; other characters become `?`. */
export function sfString(s: string): string {
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x22 || c === 0x5c) out += '\\' + s[i]
    else if (c < 0x20 || c > 0x7e) out += '?'
    else out += s[i]
  }
  return out + '"'
}

/**
 * Write the rate-limit fields for `figures` into `out` (lower-case names).
 * @param out the header record to fill
 * @param figures the policy's figures, or undefined when there are none (a fail-open
 *   answer from an unreachable store: nothing is invented)
 * @param retryAfterMs ms until a denied request may be retried, or undefined when admitted
 * @param options which families to write
 */
export function rateLimitHeaders(
  out: Record<string, string>,
  figures: RateLimitFigures | undefined,
  retryAfterMs: number | undefined,
  options: HeaderOptions = {},
): Record<string, string> {
  if (figures !== undefined) {
    const limit = nonNegativeInt(figures.limit)
    const remaining = nonNegativeInt(figures.remaining)
    const reset = delaySeconds(figures.resetMs)
    if (options.ietf !== false) {
      out['ratelimit-policy'] = figures.policyField ?? policyField(figures.name, figures.limit, figures.windowMs)
      out['ratelimit'] = `${figures.quotedName ?? sfString(figures.name)};r=${remaining};t=${reset}`
    }
    if (options.legacy === true) {
      out['x-ratelimit-limit'] = String(limit)
      out['x-ratelimit-remaining'] = String(remaining)
      out['x-ratelimit-reset'] = String(reset)
    }
  }
  if (retryAfterMs !== undefined && options.retryAfter !== false)
    out['retry-after'] = String(retryAfterSeconds(retryAfterMs))
  return out
}
