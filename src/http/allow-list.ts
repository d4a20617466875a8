/**
 * The `allowList` option: keys or client addresses that are never limited, or a predicate.
 * A listed address matches in its normalised form too (`::ffff:1.2.3.4` lists `1.2.3.4`),
 * so that the list and the `ip` key part read addresses the same way.
 * @module
 */
import { invalidOption } from '../errors.js'
import { normalizeIp, type RequestView } from './client-key.js'

/**
 * The allow list as parsed: a set of keys and addresses, a predicate, or neither.
 * @internal
 */
export interface AllowList<Req> {
  /** Keys and normalised addresses; undefined for none. */
  readonly set: ReadonlySet<string> | undefined
  /** The predicate; only a `true` result (or a native Promise of `true`) allows. */
  readonly fn: ((req: Req, key: string) => boolean | Promise<boolean>) | undefined
  /** IPv6 grouping of the addresses, bits. */
  readonly ipv6Subnet: number
}

/**
 * Parse the `allowList` option.
 * @param v an array of strings, a predicate or undefined
 * @param ipv6Subnet IPv6 grouping in bits, [1, 128]
 * @param option option path for messages
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for anything else
 * @internal
 */
export function parseAllowList<Req>(v: unknown, ipv6Subnet: number, option = 'allowList'): AllowList<Req> {
  if (typeof v === 'function') return Object.freeze({ set: undefined, fn: v as AllowList<Req>['fn'], ipv6Subnet })
  if (v === undefined) return Object.freeze({ set: undefined, fn: undefined, ipv6Subnet })
  if (!Array.isArray(v)) invalidOption(option, 'an array of strings or a function', v)
  const set = new Set<string>()
  for (const a of v as unknown[]) {
    if (typeof a !== 'string') invalidOption(option, 'an array of strings or a function', a)
    set.add(a)
    set.add(normalizeIp(a, ipv6Subnet))
  }
  return Object.freeze({ set, fn: undefined, ipv6Subnet })
}

/**
 * Whether a key or its client's address is on the allow list (sync unless the predicate
 * returns a Promise).
 * @internal
 */
export function isAllowed<Req>(
  list: AllowList<Req>,
  view: RequestView<Req>,
  req: Req,
  key: string,
): boolean | Promise<boolean> {
  if (list.set !== undefined) {
    if (list.set.has(key)) return true
    const ip = view.ip(req)
    if (ip !== undefined && list.set.has(normalizeIp(ip, list.ipv6Subnet))) return true
  }
  if (list.fn !== undefined) return list.fn(req, key)
  return false
}
