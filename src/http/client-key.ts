/**
 * Request keys: the client address normalised (port, mapping, zone and IPv6 subnet), the
 * built-in parts (`ip`, `tenant`, `route`), key functions, and their unambiguous join.
 * Frameworks come in through a {@link RequestView}.
 * @module
 */
import ipaddr from 'ipaddr.js'
import { invalidOption } from '../errors.js'
import { isThenable } from './thenable.js'

const DOTTED_V4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/

/**
 * Normalise a client address into the key of its client, so that spellings of one client
 * share one key:
 *
 * - a port is dropped: `1.2.3.4:5678` → `1.2.3.4`, `[2001:db8::1]:443` → the IPv6 address;
 * - an IPv4-mapped IPv6 address is its IPv4 address: `::ffff:1.2.3.4` → `1.2.3.4`;
 * - an IPv6 address is grouped by its first `ipv6Subnet` bits (default 64, the usual
 *   end-site assignment of RFC 6177), written `network/prefix`: one host that owns a /64
 *   cannot escape its limit by hopping addresses inside it;
 * - a zone id (`fe80::1%eth0`) is dropped.
 *
 * Anything that does not parse as an address is returned unchanged (it is still a key: a
 * request is never left unlimited because its address looks odd). Parsing uses ipaddr.js.
 *
 * @param address the address as the framework reports it (`request.ip`, `req.ip`)
 * @param ipv6Subnet prefix length in bits for IPv6 grouping, integer in [1, 128] (default 64)
 * @returns the normalised address
 */
export function normalizeIp(address: string, ipv6Subnet = 64): string {
  // fast path: a plain dotted IPv4 address is already normal
  if (DOTTED_V4.test(address)) return address
  let a = address.trim()
  if (a.length === 0) return a
  // [v6]:port
  if (a.charCodeAt(0) === 91 /* [ */) {
    const close = a.indexOf(']')
    if (close > 0) a = a.slice(1, close)
  } else {
    const colon = a.indexOf(':')
    // v4:port (exactly one colon and a dot before it)
    if (colon > 0 && colon === a.lastIndexOf(':') && a.lastIndexOf('.', colon) > 0) a = a.slice(0, colon)
  }
  const pct = a.indexOf('%')
  if (pct > 0) a = a.slice(0, pct)
  if (!ipaddr.isValid(a)) return address
  let ip: ipaddr.IPv4 | ipaddr.IPv6
  try {
    ip = ipaddr.parse(a)
  } catch {
    return address
  }
  if (ip.kind() === 'ipv4') return ip.toString()
  const v6 = ip as ipaddr.IPv6
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString()
  if (ipv6Subnet >= 128) return v6.toString()
  const bytes = v6.toByteArray()
  for (let bit = ipv6Subnet; bit < 128; bit++) {
    if (bit % 8 === 0 && bit + 8 <= 128) {
      bytes[bit >> 3] = 0
      bit += 7
    } else bytes[bit >> 3] &= ~(0x80 >> (bit & 7)) & 0xff
  }
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6Subnet}`
}

/** What a key part reads from a request: the framework-neutral view the adapters fill in. */
export interface KeyRequest {
  /** The client address as the framework reports it (its trust-proxy setting applied). */
  ip: string
  /** HTTP method, upper case. */
  method: string
  /** The route pattern (`/users/:id`), never the raw URL; undefined when the framework does not know it. */
  routePattern: string | undefined
  /** Read one request header by lower-case name. */
  header(name: string): string | undefined
}

/** A built-in key part. */
export type KeyPartName = 'ip' | 'tenant' | 'route'

/** Options of {@link keyPart}: how the `'ip'` and `'tenant'` parts are derived. */
export interface ClientKeyOptions {
  /** IPv6 grouping prefix in bits, integer in [1, 128]; default 64. */
  ipv6Subnet?: number
  /** Header carrying the tenant id for the `'tenant'` part, lower case; default `x-tenant-id`. */
  tenantHeader?: string
}

/**
 * The key string of one built-in part:
 *
 * - `'ip'` → `ip:` + {@link normalizeIp}(request ip);
 * - `'tenant'` → `tenant:` + the tenant header, or **the `'ip'` key when the header is
 *   missing or empty** (so an anonymous client is still limited, by its address);
 * - `'route'` → `route:` + method + space + route pattern (`route:GET /users/:id`); when the
 *   framework does not know the pattern (an Express middleware mounted before routing, an
 *   unmatched URL) the pattern is `*`, never the raw URL, so `/users/1` and `/users/2` share.
 *
 * @param part the part name
 * @param req the request view
 * @param options tenant header and IPv6 subnet (defaults: `x-tenant-id`, 64)
 * @returns the part's key
 */
export function keyPart(part: KeyPartName, req: KeyRequest, options: ClientKeyOptions = {}): string {
  if (part === 'ip') return 'ip:' + normalizeIp(req.ip ?? '', options.ipv6Subnet ?? 64)
  if (part === 'tenant') {
    const t = req.header(options.tenantHeader ?? 'x-tenant-id')
    if (t === undefined || t === '') return 'ip:' + normalizeIp(req.ip ?? '', options.ipv6Subnet ?? 64)
    return 'tenant:' + t
  }
  return 'route:' + req.method + ' ' + (req.routePattern ?? '*')
}

/**
 * Join key parts into one key without ambiguity: each part is length-prefixed
 * (`<length>:<part>`), so `['a|b', 'c']` and `['a', 'b|c']` never meet. A single part is
 * returned as it is.
 * @param parts the key of each part
 * @returns the combined key
 */
export function joinKeyParts(parts: readonly string[]): string {
  if (parts.length === 1) return parts[0]
  let out = ''
  for (const p of parts) out += p.length + ':' + p
  return out
}

/**
 * Validate an `ipv6Subnet` option.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `name`
 * @internal
 */
export function checkIpv6Subnet(value: unknown, name = 'ipv6Subnet'): number {
  if (value === undefined) return 64
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 128) {
    invalidOption(name, 'an integer in [1, 128]', value)
  }
  return value
}

/**
 * A key part: a built-in name or a function of the request. A function may answer a string,
 * a finite number (taken as its decimal `String(n)`, as @fastify/rate-limit's `keyGenerator`
 * allows: `() => 42`), or a Promise or other thenable of either; anything else is
 * `ERR_GRUDGE_OPTION_INVALID` on the request's error path.
 */
export type KeySpec<Req> = KeyPartName | ((req: Req) => string | number | PromiseLike<string | number>)

/**
 * The framework's reads of a request (each adapter has one).
 * @internal
 */
export interface RequestView<Req> {
  /** The client address, as the framework reports it. */
  ip(req: Req): string
  /** The method, upper case. */
  method(req: Req): string
  /** The route pattern, or undefined when the framework does not know it. */
  route(req: Req): string | undefined
  /** One request header by lower-case name. */
  header(req: Req, name: string): string | undefined
}

/**
 * How keys are derived: the parsed `key`, `tenantHeader` and `ipv6Subnet` options.
 * @internal
 */
export interface KeyRules<Req> {
  /** The parts, in order (at least one). */
  readonly keyParts: readonly KeySpec<Req>[]
  /** Header of the tenant id, lower case. */
  readonly tenantHeader: string
  /** IPv6 grouping prefix in bits, [1, 128]. */
  readonly ipv6Subnet: number
}

/**
 * Parse the `key` option: a part or a non-empty array of parts.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `option`
 * @internal
 */
export function parseKeyParts<Req>(v: unknown, option = 'key'): readonly KeySpec<Req>[] {
  const raw = v ?? 'ip'
  const parts = (Array.isArray(raw) ? raw : [raw]) as KeySpec<Req>[]
  if (parts.length === 0) invalidOption(option, "'ip', 'tenant', 'route', a function or a non-empty array of them", raw)
  for (const k of parts) {
    if (k !== 'ip' && k !== 'tenant' && k !== 'route' && typeof k !== 'function')
      invalidOption(option, "'ip', 'tenant', 'route' or a function", k)
  }
  return Object.freeze([...parts])
}

/**
 * The request's key from the configured parts. Sync unless a key function returns a
 * Promise. A key function that throws throws here (the adapter sends it down the
 * framework's error path).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when a key function returns a non-string
 * @internal
 */
export function deriveKey<Req>(rules: KeyRules<Req>, view: RequestView<Req>, req: Req): string | Promise<string> {
  const parts = rules.keyParts
  if (parts.length === 1) return onePart(rules, view, req, parts[0])
  const out: (string | Promise<string>)[] = []
  let async = false
  for (const p of parts) {
    const v = onePart(rules, view, req, p)
    if (v instanceof Promise) async = true
    out.push(v)
  }
  if (!async) return joinKeyParts(out as string[])
  return Promise.all(out.map((v) => Promise.resolve(v))).then(joinKeyParts)
}

function checkKey(v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'number' && Number.isFinite(v)) return String(v)
  return invalidOption('key', 'a key function returning a string or a finite number', v)
}

/** The last `ip` key part built, by its address and subnet ({@link ipKey}). */
let lastAddress: string | undefined
let lastSubnet = 0
let lastIpKey = ''

/**
 * The `ip` key part of an address: `ip:` + {@link normalizeIp}, a pure function of the address
 * and the subnet, so the last one built is kept and returned for the same pair: a client's run
 * of requests (a keep-alive connection, a burst) builds its key once, with no regular
 * expression and no new string per request; any other pair builds it as before.
 */
function ipKey(address: string, ipv6Subnet: number): string {
  if (address === lastAddress && ipv6Subnet === lastSubnet) return lastIpKey
  const key = 'ip:' + normalizeIp(address, ipv6Subnet)
  lastAddress = address
  lastSubnet = ipv6Subnet
  lastIpKey = key
  return key
}

function onePart<Req>(
  rules: KeyRules<Req>,
  view: RequestView<Req>,
  req: Req,
  p: KeySpec<Req>,
): string | Promise<string> {
  if (typeof p === 'function') {
    const v = p(req)
    if (isThenable(v)) return Promise.resolve(v).then((x) => 'fn:' + checkKey(x))
    return 'fn:' + checkKey(v)
  }
  if (p === 'ip') return ipKey(view.ip(req) ?? '', rules.ipv6Subnet)
  const kr: KeyRequest = {
    ip: view.ip(req) ?? '',
    method: view.method(req),
    routePattern: view.route(req),
    header: (name) => view.header(req, name),
  }
  return keyPart(p, kr, rules)
}
