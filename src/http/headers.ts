/**
 * Rate-limit response fields.
 *
 * The IETF fields follow **draft-ietf-httpapi-ratelimit-headers-10** (27 September 2025),
 * whose two fields are Structured Field Lists (RFC 9651) of items named by the policy:
 *
 * - `RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>` — the quota (here the burst)
 *   and the window in which it is restored (here burst / rate, rounded up);
 * - `RateLimit: "<name>";r=<remaining>;t=<seconds>` — quota units left and seconds until
 *   the quota is restored (see `Decision.resetMs` for what "restored" means).
 *
 * (Earlier drafts used `RateLimit-Limit/-Remaining/-Reset` or one dictionary
 * `limit=, remaining=, reset=`; those are not emitted.) The legacy family is
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` (delta seconds, as
 * GitHub and @fastify/rate-limit send it), and `Retry-After` is delay-seconds (RFC 9110
 * §10.2.3).
 *
 * The core's {@link Decision} carries numbers; this module is where they become fields. Each
 * limiter's constant parts (the quoted policy name, the whole `RateLimit-Policy` value) are
 * built once, in its {@link FieldSource}, so a decision costs only the `RateLimit` member
 * and the figures' strings.
 *
 * Every figure is a non-negative integer: values are floored (remaining) or rounded up
 * (seconds), clamped at 0 and never NaN; a 0 is sent as `0`, never omitted. Every figure has
 * at most 15 digits (an RFC 9651 sf-integer; Retry-After is 1*DIGIT): a larger one (a rate
 * of 1e-16/s, a burst of 1e22) is sent as 999999999999999, never in exponent notation.
 */

import { invalidOption } from '../errors.js'
import { checkKnownOptions, optionKeys } from '../options.js'
import { ceilSeconds, nonNegativeInt, type Decision } from '../limit/decision.js'

/** The largest figure written: an RFC 9651 sf-integer has at most 15 digits. */
const MAX_FIGURE = 999_999_999_999_999

/**
 * A count as a field figure: floored, ≥ 0, at most 15 digits (see the module comment).
 * @internal
 */
export function countFigure(x: number): number {
  const n = nonNegativeInt(x)
  return n > MAX_FIGURE ? MAX_FIGURE : n
}

/**
 * A duration in ms as a field figure in whole seconds: rounded up, ≥ 0, at most 15 digits.
 * @internal
 */
export function secondsFigure(ms: number): number {
  const n = ceilSeconds(ms)
  return n > MAX_FIGURE ? MAX_FIGURE : n
}

/** Which fields are written. */
export interface HeaderOptions {
  /** Write `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10). Default true. */
  ietf?: boolean
  /** Write `X-RateLimit-Limit/Remaining/Reset`. Default false. */
  legacy?: boolean
  /** Write `Retry-After` on denials. Default true. */
  retryAfter?: boolean
}

/**
 * The option names of {@link HeaderOptions}; any other key is refused.
 * @internal
 */
export const HEADER_OPTION_KEYS = optionKeys<HeaderOptions>({ ietf: true, legacy: true, retryAfter: true })

/**
 * Parse header options: `false` for none, else every family decided (defaults filled in), frozen.
 * @param h the options
 * @param option option path for messages
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a non-object or an unknown key
 * @internal
 */
export function parseHeaderOptions(
  h: HeaderOptions | false | undefined,
  option = 'headers',
): Readonly<Required<HeaderOptions>> | false {
  if (h === false) return false
  if (h !== undefined && (typeof h !== 'object' || h === null))
    invalidOption(option, 'false or { ietf, legacy, retryAfter }', h)
  if (h) checkKnownOptions(h, HEADER_OPTION_KEYS, option + '.')
  return Object.freeze({ ietf: h?.ietf ?? true, legacy: h?.legacy ?? false, retryAfter: h?.retryAfter ?? true })
}

/** What one limiter contributes to the fields; constant per limiter, built once by {@link fieldSource}. */
export interface FieldSource {
  /** The debt meter's policy name as an sf-string; '' without a debt meter. */
  readonly quotedName: string
  /** The debt meter's `RateLimit-Policy` member; '' without a debt meter. */
  readonly policyField: string
  /** Whether the policy name was defaulted: it never replaces a member of the same name (spec/http.md §3.1). */
  readonly implicit: boolean
  /** The limiter's own name as an sf-string: what a defaulted name becomes on a clash. */
  readonly altQuotedName: string
  /** The `RateLimit-Policy` member under {@link FieldSource.altQuotedName}. */
  readonly altPolicyField: string
  /** Whether `RateLimit-Policy` and `RateLimit` are written. */
  readonly ietf: boolean
  /** Whether `X-RateLimit-*` are written. */
  readonly legacy: boolean
  /** Whether `Retry-After` is written on a denial. */
  readonly retryAfter: boolean
}

/** What {@link fieldSource} reads of a limiter (a `Limiter` is one). */
export interface FieldOwner {
  /** The limiter's name. */
  readonly name: string
  /** Its debt meter (a `DebtMeter` is one), or undefined for none. */
  readonly limit: FieldMeter | undefined
}

/** What {@link fieldSource} reads of a debt meter (a `DebtMeter` is one). */
export interface FieldMeter {
  /** The policy name, written as an sf-string. */
  readonly name: string
  /** The quota (burst), ≥ 0. */
  readonly burst: number
  /** Ms in which the quota is restored from empty (burst / rate · 1000). */
  readonly windowMs: number
}

/**
 * The field source of a limiter: its debt meter's name, quota and window formatted once.
 * @param limiter the limiter (its name and debt meter)
 * @param headers which families to write (default IETF fields and Retry-After), or false for none
 * @param implicit whether the debt meter's name was defaulted rather than given; default false
 */
export function fieldSource(limiter: FieldOwner, headers: HeaderOptions | false = {}, implicit = false): FieldSource {
  const meter = limiter.limit
  return Object.freeze({
    quotedName: meter !== undefined ? sfString(meter.name) : '',
    policyField: meter !== undefined ? policyField(meter.name, meter.burst, meter.windowMs) : '',
    implicit,
    altQuotedName: sfString(limiter.name),
    altPolicyField: meter !== undefined ? policyField(limiter.name, meter.burst, meter.windowMs) : '',
    ietf: headers !== false && headers.ietf !== false,
    legacy: headers !== false && headers.legacy === true,
    retryAfter: headers !== false && headers.retryAfter !== false,
  })
}

/**
 * The `RateLimit-Policy` value: `"<name>";q=<limit>;w=<window seconds, ≥ 1>`.
 * @internal
 */
export function policyField(name: string, limit: number, windowMs: number): string {
  return `${sfString(name)};q=${countFigure(limit)};w=${Math.max(1, secondsFigure(windowMs))}`
}

/**
 * Retry-After seconds of a denial (delay-seconds, RFC 9110 §10.2.3): the core's
 * whole-seconds rounding (`ceilSeconds`), at least 1.
 * @internal
 */
export function retryAfterSeconds(ms: number): number {
  const s = secondsFigure(ms)
  return s < 1 ? 1 : s
}

/**
 * An RFC 9651 sf-string: printable ASCII with `"` and `\` escaped. Other characters, which an
 * sf-string cannot hold, are written as the percent-encoded bytes of their UTF-8 (`%` itself
 * as `%25`), so that two names never collapse into one member (`zoë` → `zo%C3%AB`, `zoé` →
 * `zo%C3%A9`). Names given in options are refused unless printable ASCII
 * ({@link checkPolicyName}); this covers names derived from route URLs.
 * @internal
 */
export function sfString(s: string): string {
  let out = '"'
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x22 || c === 0x5c) out += '\\' + s[i]
    else if (c === 0x25 || c < 0x20 || c > 0x7e) {
      const cp = s.codePointAt(i)!
      if (cp > 0xffff) i++
      for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8'))
        out += '%' + b.toString(16).toUpperCase().padStart(2, '0')
    } else out += s[i]
  }
  return out + '"'
}

/**
 * Check a policy name given in options: a non-empty string of printable ASCII (what an
 * sf-string holds as it is, so the name sent is the name given).
 * @param option option path for messages
 * @param name the name
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option
 * @internal
 */
export function checkPolicyName(option: string, name: unknown): void {
  if (typeof name !== 'string' || !/^[\x20-\x7e]+$/.test(name))
    invalidOption(
      option,
      'a non-empty string of printable ASCII (an RFC 9651 sf-string; names differing only in other letters would collapse)',
      name,
    )
}

/**
 * Write the rate-limit fields of a decision (lower-case names, in the order
 * `ratelimit-policy`, `ratelimit`, `x-ratelimit-*`, `retry-after`). A decision without
 * figures (no debt meter, or a store that failed open) gets none: nothing is invented.
 * `set` is a module function of the adapter's, so that writing allocates no closure.
 * @param out where the fields go (a reply, a response, a record)
 * @param set writes one field into `out`
 * @param source the limiter's field source
 * @param d the decision
 * @internal
 */
export function writeRateLimitFields<Out>(
  out: Out,
  set: (out: Out, name: string, value: string) => unknown,
  source: FieldSource,
  d: Decision,
): void {
  if (d.limit !== undefined && d.remaining !== undefined && d.resetMs !== undefined) {
    const remaining = countFigure(d.remaining)
    const reset = secondsFigure(d.resetMs)
    if (source.ietf) {
      set(out, 'ratelimit-policy', source.policyField)
      set(out, 'ratelimit', `${source.quotedName};r=${remaining};t=${reset}`)
    }
    if (source.legacy) {
      set(out, 'x-ratelimit-limit', String(countFigure(d.limit)))
      set(out, 'x-ratelimit-remaining', String(remaining))
      set(out, 'x-ratelimit-reset', String(reset))
    }
  }
  if (!d.admitted && source.retryAfter) set(out, 'retry-after', String(retryAfterSeconds(d.retryAfterMs)))
}

function setRecord(out: Record<string, string>, name: string, value: string): void {
  out[name] = value
}

/**
 * The rate-limit fields of a decision as a record (lower-case names), for a server of your
 * own over the core `Limiter`: `for (const n in h) reply.header(n, h[n])`.
 * @param source the limiter's field source ({@link fieldSource}, built once per limiter)
 * @param d the decision
 */
export function rateLimitHeaders(source: FieldSource, d: Decision): Record<string, string> {
  const out: Record<string, string> = {}
  writeRateLimitFields(out, setRecord, source, d)
  return out
}
