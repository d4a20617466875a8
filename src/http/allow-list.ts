/**
 * The `allowList` option: keys, client addresses and CIDR ranges that are never limited, or a
 * predicate.
 *
 * - An address entry exempts that one address: `2001:db8:abcd:12::1` is that host, not its
 *   /64 (the `ipv6Subnet` grouping of keys does not widen an allow-list entry). Spellings of
 *   one address match (`::ffff:10.1.2.3` is `10.1.2.3`, a zone or port is dropped), as the
 *   `ip` key part reads addresses.
 * - A CIDR entry (`2001:db8::/48`, `10.0.0.0/8`) exempts its range; an IPv4 range also
 *   matches IPv4-mapped IPv6 clients. Parsed with ipaddr.js.
 * - Any other string is a key (`fn:alice`, `tenant:acme`, `ip:2001:db8::/64`) compared with
 *   the request key.
 * @module
 */
import ipaddr from 'ipaddr.js'
import { invalidOption } from '../errors.js'
import { normalizeIp, type RequestView } from './client-key.js'

type Range = readonly [ipaddr.IPv4 | ipaddr.IPv6, number]

/**
 * The allow list as parsed: a set of keys and addresses, ranges, a predicate, or neither.
 * @internal
 */
export interface AllowList<Req> {
  /** Keys and exact addresses (normalised, ungrouped); undefined for none. */
  readonly set: ReadonlySet<string> | undefined
  /** CIDR ranges; undefined for none. */
  readonly ranges: readonly Range[] | undefined
  /** The predicate; only a `true` result (or a thenable of `true`) allows. */
  readonly fn: ((req: Req, key: string) => boolean | PromiseLike<boolean>) | undefined
}

const NONE = Object.freeze({ set: undefined, ranges: undefined, fn: undefined })

/**
 * Parse the `allowList` option.
 * @param v an array of strings, a predicate or undefined
 * @param option option path for messages
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for anything else, or a CIDR entry whose prefix is out of range
 * @internal
 */
export function parseAllowList<Req>(v: unknown, option = 'allowList'): AllowList<Req> {
  if (typeof v === 'function')
    return Object.freeze({ set: undefined, ranges: undefined, fn: v as AllowList<Req>['fn'] })
  if (v === undefined) return NONE
  if (!Array.isArray(v)) invalidOption(option, 'an array of strings or a function', v)
  const set = new Set<string>()
  const ranges: Range[] = []
  for (const a of v as unknown[]) {
    if (typeof a !== 'string') invalidOption(option, 'an array of strings or a function', a)
    const slash = a.indexOf('/')
    if (slash > 0 && ipaddr.isValid(a.slice(0, slash)) && /^\d{1,3}$/.test(a.slice(slash + 1))) {
      let range: Range
      try {
        range = ipaddr.parseCIDR(a)
      } catch {
        invalidOption(option, 'a CIDR range with a prefix length within its family (/0–/32, /0–/128)', a)
      }
      ranges.push(range)
      set.add(a) // also a key: `ip:` keys of grouped IPv6 clients read `network/prefix`
      continue
    }
    set.add(a)
    set.add(normalizeIp(a, 128))
  }
  return Object.freeze({ set, ranges: ranges.length > 0 ? Object.freeze(ranges) : undefined, fn: undefined })
}

function inRanges(ranges: readonly Range[], address: string): boolean {
  const n = normalizeIp(address, 128)
  if (!ipaddr.isValid(n)) return false
  const ip = ipaddr.parse(n)
  for (const r of ranges) if (ip.kind() === r[0].kind() && ip.match(r as [typeof ip, number])) return true
  return false
}

/**
 * Whether a key or its client's address is on the allow list (sync unless the predicate
 * returns a thenable).
 * @internal
 */
export function isAllowed<Req>(
  list: AllowList<Req>,
  view: RequestView<Req>,
  req: Req,
  key: string,
): boolean | PromiseLike<boolean> {
  if (list.set !== undefined) {
    if (list.set.has(key)) return true
    const ip = view.ip(req)
    if (ip !== undefined && ip !== '') {
      if (list.set.has(normalizeIp(ip, 128))) return true
      if (list.ranges !== undefined && inRanges(list.ranges, ip)) return true
    }
  }
  if (list.fn !== undefined) return list.fn(req, key)
  return false
}
