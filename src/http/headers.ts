/**
 * Rate-limit response fields.
 *
 * The IETF fields follow **draft-ietf-httpapi-ratelimit-headers-10** (27 September 2025) by
 * default, whose two fields are Structured Field Lists (RFC 9651) of items named by the
 * policy:
 *
 * - `RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>` — the quota (here the burst)
 *   and the window in which it is restored (here burst / rate, rounded up);
 * - `RateLimit: "<name>";r=<remaining>;t=<seconds>` — quota units left and seconds until
 *   the quota is restored (see `Decision.resetMs` for what "restored" means).
 *
 * `standardHeaders` picks an earlier draft instead, with express-rate-limit's names (its
 * `source/headers.ts` is the reference for what each writes):
 *
 * - `'draft-6'`: `RateLimit-Policy: <quota>;w=<window>`, `RateLimit-Limit: <quota>`,
 *   `RateLimit-Remaining: <r>`, `RateLimit-Reset: <t>`;
 * - `'draft-7'`: `RateLimit-Policy: <quota>;w=<window>` and one dictionary
 *   `RateLimit: limit=<quota>, remaining=<r>, reset=<t>`;
 * - `'draft-8'`: the named lists above (draft-08 introduced them; draft-10 kept their
 *   syntax), so `'draft-8'` and `'draft-10'` write the same bytes. express-rate-limit adds
 *   a `pk` (partition key: a hash of the client key) parameter, optional in the draft; grudge
 *   sends none, as it would cost a hash per request and says nothing a client can act on.
 *
 * The legacy family is `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`
 * in **delta seconds** until the quota is restored, as @fastify/rate-limit sends it
 * (express-rate-limit sends an epoch time in seconds, GitHub too), and `Retry-After` is
 * delay-seconds (RFC 9110 §10.2.3).
 *
 * The core's {@link Decision} carries numbers; this module is where they become fields. Each
 * limiter's constant parts (the quoted policy name, the whole `RateLimit-Policy` value, the
 * quota's figure) are built once, in its {@link FieldSource}; the per-request values (the
 * `RateLimit` value of a (remaining, reset) pair, the figures) are kept in bounded caches
 * once built, so that a single policy's fields allocate nothing per request in a steady
 * state (test/plugins/alloc.test.ts measures it).
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

/**
 * The IETF draft the standard fields follow (express-rate-limit's `standardHeaders` names):
 * `'draft-6'` (`RateLimit-Limit/-Remaining/-Reset` + `RateLimit-Policy`), `'draft-7'` (one
 * `RateLimit: limit=, remaining=, reset=` + `RateLimit-Policy`), `'draft-8'` and
 * `'draft-10'` (named policies; the same bytes).
 */
export type StandardHeadersDraft = 'draft-6' | 'draft-7' | 'draft-8' | 'draft-10'

/** The drafts {@link StandardHeadersDraft} names, in order. */
const DRAFTS: readonly StandardHeadersDraft[] = ['draft-6', 'draft-7', 'draft-8', 'draft-10']

/**
 * Check a `standardHeaders` option: a draft name, or false for none; undefined is the
 * default `'draft-10'`. `true` is refused: in express-rate-limit it means `'draft-6'`,
 * while grudge's default is `'draft-10'`, so the draft must be named.
 * @param v the option
 * @param option option path for messages
 * @returns the draft, or false
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option
 * @internal
 */
export function parseStandardHeaders(v: unknown, option = 'standardHeaders'): StandardHeadersDraft | false {
  if (v === undefined) return 'draft-10'
  if (v === false) return false
  if (typeof v === 'string' && (DRAFTS as readonly string[]).includes(v)) return v as StandardHeadersDraft
  invalidOption(
    option,
    v === true
      ? "a draft name (express-rate-limit's true is 'draft-6'; grudge's default is 'draft-10'), or false"
      : "'draft-6', 'draft-7', 'draft-8', 'draft-10' or false",
    v,
  )
}

/** Which fields are written. */
export interface HeaderOptions {
  /** Write the IETF fields (`RateLimit-Policy` and `RateLimit`, or draft-6's three). Default true. */
  ietf?: boolean
  /** The draft the IETF fields follow; default `'draft-10'`. */
  draft?: StandardHeadersDraft
  /** Write `X-RateLimit-Limit/Remaining/Reset`. Default false. */
  legacy?: boolean
  /** Write `Retry-After` on denials. Default true. */
  retryAfter?: boolean
}

/**
 * The option names of {@link HeaderOptions}; any other key is refused.
 * @internal
 */
export const HEADER_OPTION_KEYS = optionKeys<HeaderOptions>({ ietf: true, draft: true, legacy: true, retryAfter: true })

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
    invalidOption(option, 'false or { ietf, draft, legacy, retryAfter }', h)
  if (h) checkKnownOptions(h, HEADER_OPTION_KEYS, option + '.')
  const draft = parseStandardHeaders(h?.draft, option + '.draft')
  if (draft === false) invalidOption(option + '.draft', "'draft-6', 'draft-7', 'draft-8' or 'draft-10'", false)
  return Object.freeze({
    ietf: h?.ietf ?? true,
    draft,
    legacy: h?.legacy ?? false,
    retryAfter: h?.retryAfter ?? true,
  })
}

/** What one limiter contributes to the fields; constant per limiter, built once by {@link fieldSource}. */
export interface FieldSource {
  /** The debt meter's policy name as an sf-string; '' without a debt meter. */
  readonly quotedName: string
  /** The debt meter's named `RateLimit-Policy` member (drafts 8 and 10); '' without a debt meter. */
  readonly policyField: string
  /** Whether the policy name was defaulted: it never replaces a member of the same name (spec/http.md §3.1). */
  readonly implicit: boolean
  /** The limiter's own name as an sf-string: what a defaulted name becomes on a clash. */
  readonly altQuotedName: string
  /** The `RateLimit-Policy` member under {@link FieldSource.altQuotedName}. */
  readonly altPolicyField: string
  /** The unnamed `RateLimit-Policy` member of drafts 6 and 7 (`<quota>;w=<window>`); '' without a debt meter. */
  readonly unnamedPolicyField: string
  /** The quota as a figure (burst, floored, at most 15 digits); 0 without a debt meter. */
  readonly quota: number
  /** {@link FieldSource.quota} as written (`RateLimit-Limit`, `X-RateLimit-Limit`, draft-7's `limit=`); '' without a debt meter. */
  readonly limitFigure: string
  /** Whether the IETF fields are written. */
  readonly ietf: boolean
  /** The draft they follow. */
  readonly draft: StandardHeadersDraft
  /** Whether `X-RateLimit-*` are written. */
  readonly legacy: boolean
  /** Whether `Retry-After` is written on a denial. */
  readonly retryAfter: boolean
  /**
   * The `RateLimit` values built so far, by (remaining, reset): the per-request part of the
   * fields, kept so that a steady state allocates nothing (bounded, see `stateValue`).
   * @internal
   */
  readonly states: Map<number, string>
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
 * @param headers which families to write and the draft (default IETF fields of draft-10
 * and Retry-After), or false for none
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
    unnamedPolicyField: meter !== undefined ? unnamedPolicyField(meter.burst, meter.windowMs) : '',
    quota: meter !== undefined ? countFigure(meter.burst) : 0,
    limitFigure: meter !== undefined ? String(countFigure(meter.burst)) : '',
    ietf: headers !== false && headers.ietf !== false,
    draft: headers !== false && headers.draft !== undefined ? headers.draft : 'draft-10',
    legacy: headers !== false && headers.legacy === true,
    retryAfter: headers !== false && headers.retryAfter !== false,
    states: new Map<number, string>(),
  })
}

/** At most this many `RateLimit` values are kept per limiter (about 60 B each). */
const MAX_STATES = 2048
/** Pairs (remaining, reset) below this bound are cached: r · 2^15 + t stays a small integer. */
const STATE_BOUND = 32768

/**
 * The `RateLimit` value of a (remaining, reset) pair in the source's draft (draft-7's
 * dictionary, or the named member of drafts 8 and 10): built once, then taken from the
 * source's cache (at most 2048 values per limiter; a pair beyond it, a figure ≥ 32 768, a
 * quota other than the source's or a name other than its own is built per request).
 * @param source the limiter's field source
 * @param quoted the member's name as an sf-string (drafts 8 and 10)
 * @param limit the quota figure (draft-7)
 * @param remaining the remaining figure
 * @param reset the reset figure (seconds)
 * @internal
 */
export function stateValue(
  source: FieldSource,
  quoted: string,
  limit: number,
  remaining: number,
  reset: number,
): string {
  const cacheable =
    quoted === source.quotedName && limit === source.quota && remaining < STATE_BOUND && reset < STATE_BOUND
  const k = remaining * STATE_BOUND + reset
  if (cacheable) {
    const v = source.states.get(k)
    if (v !== undefined) return v
  }
  const v =
    source.draft === 'draft-7'
      ? `limit=${limit}, remaining=${remaining}, reset=${reset}`
      : `${quoted};r=${remaining};t=${reset}`
  if (cacheable && source.states.size < MAX_STATES) source.states.set(k, v)
  return v
}

/** Figures below this are written from a table built as they are first seen. */
const FIGURE_TABLE = 4096
const FIGURES: string[] = []

/**
 * A figure (a non-negative integer) as a string; below 4096 from a table, so writing it
 * allocates nothing once seen.
 * @internal
 */
export function figureString(n: number): string {
  if (n < FIGURE_TABLE) {
    const s = FIGURES[n]
    if (s !== undefined) return s
    return (FIGURES[n] = String(n))
  }
  return String(n)
}

/**
 * The unnamed `RateLimit-Policy` member of drafts 6 and 7: `<limit>;w=<window seconds, ≥ 1>`.
 * @internal
 */
export function unnamedPolicyField(limit: number, windowMs: number): string {
  return `${countFigure(limit)};w=${Math.max(1, secondsFigure(windowMs))}`
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
 * An RFC 9651 sf-string (§3.3.3: printable ASCII 0x20–0x7E, with `"` and `\` escaped).
 * Other characters, which an sf-string cannot hold, are written as the percent-encoded bytes
 * of their UTF-8 (`%` itself as `%25`), so that two names never collapse into one member
 * (`zoë` → `zo%C3%AB`, `zoé` → `zo%C3%A9`). Names given in options hold neither
 * ({@link checkPolicyName}), so they are sent verbatim; the encoding covers names derived
 * from route URLs, and since a given name has no `%` it never equals an encoded one.
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
 * Check a policy name given in options: a non-empty string of printable ASCII (0x20–0x7E,
 * what an RFC 9651 sf-string holds) without `%`, so the name sent is the name given
 * ({@link sfString} escapes `"` and `\` only). `%` is refused because in a sent name it
 * marks a percent-encoded byte of a name derived from a route URL (`/zoë` → `/zo%C3%AB`):
 * a given `zo%C3%AB` would be the same member, and `50%` would be sent as `50%25`.
 * @param option option path for messages
 * @param name the name
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option
 * @internal
 */
export function checkPolicyName(option: string, name: unknown): void {
  if (typeof name !== 'string' || !/^[\x20-\x24\x26-\x7e]+$/.test(name))
    invalidOption(
      option,
      "a non-empty string of printable ASCII without '%' (an RFC 9651 sf-string, sent as given; names differing only in other letters would collapse, and '%' marks the encoded bytes of names derived from route URLs)",
      name,
    )
}

/**
 * What the fields of a decision are written from: a {@link Decision}, or the limiter's
 * reused figures of one (which say NaN where a Decision says undefined).
 * @internal
 */
export type DecisionFields = Pick<Decision, 'admitted' | 'retryAfterMs'> & {
  /** The quota, undefined or NaN for none. */
  readonly limit: number | undefined
  /** Quota units left. */
  readonly remaining: number | undefined
  /** Ms until the quota is restored. */
  readonly resetMs: number | undefined
}

/**
 * Write the rate-limit fields of a decision (lower-case names, in the order
 * `ratelimit-policy`, `ratelimit` (or draft-6's `ratelimit-limit/-remaining/-reset`),
 * `x-ratelimit-*`, `retry-after`). A decision without figures (no debt meter, or a store
 * that failed open) gets none: nothing is invented. `set` is a module function of the
 * adapter's, so that writing allocates no closure; the values come from the source's
 * caches, so that a steady state allocates nothing.
 * @param out where the fields go (a reply, a response, a record)
 * @param set writes one field into `out`
 * @param source the limiter's field source
 * @param d the decision, or the limiter's figures of it
 * @internal
 */
export function writeRateLimitFields<Out>(
  out: Out,
  set: (out: Out, name: string, value: string) => unknown,
  source: FieldSource,
  d: DecisionFields,
): void {
  // a Decision without a quota has no limit; the limiter's reused figures say NaN
  if (d.limit !== undefined && !Number.isNaN(d.limit) && d.remaining !== undefined && d.resetMs !== undefined) {
    const limit = countFigure(d.limit)
    const limitFigure = limit === source.quota ? source.limitFigure : figureString(limit)
    const remaining = countFigure(d.remaining)
    const reset = secondsFigure(d.resetMs)
    if (source.ietf) {
      if (source.draft === 'draft-6') {
        set(out, 'ratelimit-policy', source.unnamedPolicyField)
        set(out, 'ratelimit-limit', limitFigure)
        set(out, 'ratelimit-remaining', figureString(remaining))
        set(out, 'ratelimit-reset', figureString(reset))
      } else {
        set(out, 'ratelimit-policy', source.draft === 'draft-7' ? source.unnamedPolicyField : source.policyField)
        set(out, 'ratelimit', stateValue(source, source.quotedName, limit, remaining, reset))
      }
    }
    if (source.legacy) {
      set(out, 'x-ratelimit-limit', limitFigure)
      set(out, 'x-ratelimit-remaining', figureString(remaining))
      set(out, 'x-ratelimit-reset', figureString(reset))
    }
  }
  if (!d.admitted && source.retryAfter) set(out, 'retry-after', figureString(retryAfterSeconds(d.retryAfterMs)))
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
