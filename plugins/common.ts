/**
 * What the Fastify plugin and the Express middleware share: option parsing (once, frozen,
 * coded errors naming the option), key derivation and the error body. Framework-specific
 * reads (address, method, route pattern, headers) come in through a {@link RequestView}.
 */
import { invalidOption } from '../src/errors.js'
import { checkKnownOptions, optionKeys, type OptionNames } from '../src/options.js'
import {
  keyPart,
  joinKeyParts,
  normalizeIp,
  checkIpv6Subnet,
  type KeyPartName,
  type KeyRequest,
} from '../src/http/client-key.js'
import { retryAfterSeconds, delaySeconds } from '../src/http/headers.js'
import type { Decision } from '../src/limit/decision.js'
import type { DebtMeterOptions } from '../src/limit/debt-meter.js'
import type { FeedbackScoreOptions } from '../src/limit/feedback-score.js'
import type { AbuseScoreOptions } from '../src/limit/abuse-score.js'
import type { PolicySketchOptions } from '../src/limit/options.js'
import { Limiter } from '../src/limit/limiter.js'
import type { Telemetry } from '../src/limit/telemetry.js'
import type { BloomLookup } from '../src/limit/bloom-gate.js'
import { BloomFilterRegistry, REGISTER_BLOOM_KEYS, type RegisterBloomOptions } from '../src/bloom/registry.js'
import { PERSIST_POLICY_KEYS } from '../src/bloom/persist.js'
import type { Ticker } from '../src/clock.js'

/** A key part: a built-in name or a function of the request. */
export type KeySpec<Req> = KeyPartName | ((req: Req) => string | Promise<string>)

/** Debt-meter options as adapters take them: `cost` may be a function of the request. */
export interface AdapterLimitOptions<Req> extends Omit<DebtMeterOptions, 'cost'> {
  /** Cost of a request: a number in [0, burst] (default 1) or `(req) => number`. */
  cost?: number | ((req: Req) => number)
  /**
   * Policy name in the `RateLimit-Policy` / `RateLimit` fields (a non-empty string, sent as
   * an sf-string). Default: the Express middleware's `name` when given, else `default`.
   * When several Express middleware decide one request their policies are listed side by
   * side: a name given here (or through `name`) replaces an earlier policy of the same name,
   * while a defaulted `default` that clashes is written under the middleware's
   * `express:<n>` name instead, so names stay unique (spec/http.md §3.1).
   */
  name?: string
}

/** Feedback-score options as adapters take them. */
export interface AdapterFairnessOptions<Req, Res> extends FeedbackScoreOptions {
  /** Whether a response is a failure; default status ≥ 500 or slower than `slowMs`. */
  isFailure?: (req: Req, res: Res) => boolean
}

/** Abuse-score options as adapters take them. */
export interface AdapterAbuseOptions<Req, Res> extends AbuseScoreOptions {
  /** Delta of a response; when given, `weights` is ignored. Must return a finite number. */
  score?: (req: Req, res: Res) => number
}

/** What the error-response builder receives. */
export interface ErrorContext {
  /** 429, 503 or 403. */
  statusCode: number
  /** The policy that denied. */
  policy: Decision['policy']
  /** Retry-After in seconds (≥ 1), the same figure as the header and the `t=` of the RateLimit field. */
  retryAfterSeconds: number
  /** The debt meter's quota, if any. */
  limit: number | undefined
  /** The request key. */
  key: string
  /** The whole decision. */
  decision: Decision
}

/** Options shared by both adapters (the plugin's/middleware's defaults). */
export interface CommonOptions<Req, Res> extends PolicySketchOptions {
  /** Debt meter: `{ rate, burst, cost?, maxDebt? }`; denied → 429. */
  limit?: AdapterLimitOptions<Req> | false
  /** Feedback score: denied → 503 (or 429). */
  fairness?: AdapterFairnessOptions<Req, Res> | false
  /** Abuse score: blocked → 403. */
  abuse?: AdapterAbuseOptions<Req, Res> | false
  /** The request key: `'ip'` (default), `'tenant'`, `'route'`, a function, or an array combining them. */
  key?: KeySpec<Req> | readonly KeySpec<Req>[]
  /** Header of the tenant id (lower case); default `x-tenant-id`. A missing tenant falls back to the IP key. */
  tenantHeader?: string
  /** IPv6 grouping prefix in bits, [1, 128]; default 64. */
  ipv6Subnet?: number
  /** `false` sends no rate-limit fields at all; default true (IETF fields and Retry-After). */
  headers?: boolean
  /** Also send `X-RateLimit-Limit/Remaining/Reset`; default false. */
  legacyHeaders?: boolean
  /** Body of a denial; default `{ statusCode, error, message }` naming the retry delay. */
  errorResponseBuilder?: (req: Req, context: ErrorContext) => unknown
  /** Called once per denied request, before the answer. */
  onExceeded?: (req: Req, key: string, decision: Decision) => void
  /** Keys or client addresses (normalised) never limited, or a predicate; only a `true` result (or a native Promise of `true`) allows. */
  allowList?: readonly string[] | ((req: Req, key: string) => boolean | Promise<boolean>)
  /** Requests for which this returns `true` (exactly; a Promise or any other value does not skip, so an async predicate never disables limiting) skip every policy. Synchronous. */
  skip?: (req: Req) => boolean
  /** Uniform [0, 1) source for the feedback score; default Math.random. */
  random?: () => number
  /** Estimated false-positive rate above which one warning is logged; default 0.01. */
  targetFalsePositiveRate?: number
  /** Longest wait in ms for an asynchronous store before `onStoreError` decides; default 1000. */
  storeTimeoutMs?: number
  /** A store timeout or rejection: `'open'` (admit, no figures; default) or `'closed'` (503). */
  onStoreError?: 'open' | 'closed'
}

/**
 * The names of {@link CommonOptions}, the options both adapters take (each adds its own to
 * them for its top-level list).
 */
export const COMMON_OPTION_NAMES: OptionNames<CommonOptions<unknown, unknown>> = Object.freeze({
  levels: true,
  cellsPerLevel: true,
  generations: true,
  periodMs: true,
  hasher: true,
  clock: true,
  ticker: true,
  store: true,
  limit: true,
  fairness: true,
  abuse: true,
  key: true,
  tenantHeader: true,
  ipv6Subnet: true,
  headers: true,
  legacyHeaders: true,
  errorResponseBuilder: true,
  onExceeded: true,
  allowList: true,
  skip: true,
  random: true,
  targetFalsePositiveRate: true,
  storeTimeoutMs: true,
  onStoreError: true,
})
/** The option names of {@link AdapterLimitOptions} (`limit`). */
export const ADAPTER_LIMIT_KEYS = optionKeys<AdapterLimitOptions<unknown>>({
  rate: true,
  burst: true,
  cost: true,
  maxDebt: true,
  name: true,
})
/** The option names of {@link AdapterFairnessOptions} (`fairness`). */
export const ADAPTER_FAIRNESS_KEYS = optionKeys<AdapterFairnessOptions<unknown, unknown>>({
  failureDelta: true,
  successDelta: true,
  lambdaPerSecond: true,
  slowMs: true,
  status: true,
  isFailure: true,
})
/** The option names of {@link AdapterAbuseOptions} (`abuse`). */
export const ADAPTER_ABUSE_KEYS = optionKeys<AdapterAbuseOptions<unknown, unknown>>({
  weights: true,
  threshold: true,
  halfLifeMs: true,
  maxScore: true,
  score: true,
})

/** The framework's reads of a request. */
export interface RequestView<Req> {
  ip(req: Req): string
  method(req: Req): string
  route(req: Req): string | undefined
  header(req: Req, name: string): string | undefined
}

/** Options of an adapter after parsing. */
export interface ResolvedCommon<Req, Res> {
  readonly keyParts: readonly KeySpec<Req>[]
  readonly tenantHeader: string
  readonly ipv6Subnet: number
  readonly cost: ((req: Req) => number) | undefined
  readonly isFailure: ((req: Req, res: Res) => boolean) | undefined
  readonly abuseScore: ((req: Req, res: Res) => number) | undefined
  readonly errorResponseBuilder: (req: Req, context: ErrorContext) => unknown
  readonly onExceeded: ((req: Req, key: string, decision: Decision) => void) | undefined
  readonly allowSet: ReadonlySet<string> | undefined
  readonly allowFn: ((req: Req, key: string) => boolean | Promise<boolean>) | undefined
  readonly skip: ((req: Req) => boolean) | undefined
  /** Build the core limiter for these options. */
  makeLimiter(name: string, telemetry: Telemetry | undefined): Limiter
}

const STATUS_TEXT: Record<number, string> = { 403: 'Forbidden', 429: 'Too Many Requests', 503: 'Service Unavailable' }

/** The default body of a denial. */
export function defaultErrorBody(
  _req: unknown,
  c: ErrorContext,
): { statusCode: number; error: string; message: string } {
  const what =
    c.policy === 'abuse'
      ? 'Blocked'
      : c.policy === 'fairness' || c.policy === 'store'
        ? 'Temporarily throttled'
        : 'Rate limit exceeded'
  return {
    statusCode: c.statusCode,
    error: STATUS_TEXT[c.statusCode] ?? 'Error',
    message: `${what}, retry in ${c.retryAfterSeconds} second${c.retryAfterSeconds === 1 ? '' : 's'}`,
  }
}

function fn(name: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'function') invalidOption(name, 'a function', v)
}

/**
 * Parse adapter options once. Throws at registration, never per request. The top-level
 * names are the adapter's to check (each adds its own options); the nested policy
 * objects (`limit`, `fairness`, `abuse`) are checked here.
 * @param o the options
 * @param prefix option path prefix for messages (e.g. `config.grudge.` for a route)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option (also an unknown key
 * of a policy, e.g. `limit.burts`); `ERR_GRUDGE_ROTATOR_AMNESTY`
 */
export function resolveCommon<Req, Res>(o: CommonOptions<Req, Res>, prefix = ''): ResolvedCommon<Req, Res> {
  if (typeof o !== 'object' || o === null) invalidOption(prefix || 'options', 'an object', o)
  const rawKey = o.key ?? 'ip'
  const keyParts = (Array.isArray(rawKey) ? rawKey : [rawKey]) as KeySpec<Req>[]
  if (keyParts.length === 0)
    invalidOption(prefix + 'key', "'ip', 'tenant', 'route', a function or a non-empty array of them", rawKey)
  for (const k of keyParts) {
    if (k !== 'ip' && k !== 'tenant' && k !== 'route' && typeof k !== 'function')
      invalidOption(prefix + 'key', "'ip', 'tenant', 'route' or a function", k)
  }
  const tenantHeader = o.tenantHeader ?? 'x-tenant-id'
  if (typeof tenantHeader !== 'string' || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(tenantHeader))
    invalidOption(prefix + 'tenantHeader', 'a lower-case header name', tenantHeader)
  const ipv6Subnet = checkIpv6Subnet(o.ipv6Subnet, prefix + 'ipv6Subnet')
  if (o.headers !== undefined && typeof o.headers !== 'boolean')
    invalidOption(prefix + 'headers', 'a boolean', o.headers)
  if (o.legacyHeaders !== undefined && typeof o.legacyHeaders !== 'boolean')
    invalidOption(prefix + 'legacyHeaders', 'a boolean', o.legacyHeaders)
  fn(prefix + 'errorResponseBuilder', o.errorResponseBuilder)
  fn(prefix + 'onExceeded', o.onExceeded)
  fn(prefix + 'skip', o.skip)
  let allowSet: Set<string> | undefined
  let allowFn: ResolvedCommon<Req, Res>['allowFn']
  if (typeof o.allowList === 'function') allowFn = o.allowList
  else if (Array.isArray(o.allowList)) {
    allowSet = new Set()
    for (const a of o.allowList) {
      if (typeof a !== 'string') invalidOption(prefix + 'allowList', 'an array of strings or a function', a)
      allowSet.add(a)
      allowSet.add(normalizeIp(a, ipv6Subnet))
    }
  } else if (o.allowList !== undefined)
    invalidOption(prefix + 'allowList', 'an array of strings or a function', o.allowList)
  let cost: ((req: Req) => number) | undefined
  let limit: DebtMeterOptions | false | undefined
  if (o.limit) {
    if (typeof o.limit !== 'object') invalidOption(prefix + 'limit', 'an object { rate, burst }', o.limit)
    checkKnownOptions(o.limit, ADAPTER_LIMIT_KEYS, prefix + 'limit.')
    if (typeof o.limit.cost === 'function') {
      cost = o.limit.cost
      limit = { ...o.limit, cost: undefined }
    } else limit = o.limit as DebtMeterOptions
  }
  // the adapters' own policy options (isFailure, score) are taken out here: the core
  // policies refuse names they do not know
  let isFailure: ResolvedCommon<Req, Res>['isFailure']
  let fairness: FeedbackScoreOptions | undefined
  if (o.fairness) {
    if (typeof o.fairness !== 'object') invalidOption(prefix + 'fairness', 'an object', o.fairness)
    checkKnownOptions(o.fairness, ADAPTER_FAIRNESS_KEYS, prefix + 'fairness.')
    fn(prefix + 'fairness.isFailure', o.fairness.isFailure)
    const { isFailure: f, ...rest } = o.fairness
    isFailure = f
    fairness = rest
  }
  let abuseScore: ResolvedCommon<Req, Res>['abuseScore']
  let abuse: AbuseScoreOptions | undefined
  if (o.abuse) {
    if (typeof o.abuse !== 'object') invalidOption(prefix + 'abuse', 'an object', o.abuse)
    checkKnownOptions(o.abuse, ADAPTER_ABUSE_KEYS, prefix + 'abuse.')
    fn(prefix + 'abuse.score', o.abuse.score)
    const { score, ...rest } = o.abuse
    abuseScore = score
    abuse = rest
  }
  const headers =
    o.headers === false ? (false as const) : { ietf: true, legacy: o.legacyHeaders === true, retryAfter: true }
  const limiterOptions = {
    levels: o.levels,
    cellsPerLevel: o.cellsPerLevel,
    generations: o.generations,
    periodMs: o.periodMs,
    hasher: o.hasher,
    clock: o.clock,
    ticker: o.ticker,
    store: o.store,
    random: o.random,
    storeTimeoutMs: o.storeTimeoutMs,
    onStoreError: o.onStoreError,
    limit,
    fairness,
    abuse,
    headers,
  }
  // parse the policies now, so that a bad option throws at registration
  new Limiter({ ...limiterOptions, store: () => NULL_STORE }, prefix)
  return Object.freeze({
    keyParts: Object.freeze(keyParts),
    tenantHeader,
    ipv6Subnet,
    cost,
    isFailure,
    abuseScore,
    errorResponseBuilder: o.errorResponseBuilder ?? defaultErrorBody,
    onExceeded: o.onExceeded,
    allowSet,
    allowFn,
    skip: o.skip,
    makeLimiter: (name: string, telemetry: Telemetry | undefined) =>
      new Limiter({ ...limiterOptions, name, telemetry }, prefix),
  })
}

/** A store that holds nothing, for validating options without allocating sketches. */
const zero = (): number => 0
const NULL_STORE = {
  tryConsume: () => ({ admitted: true, score: 0 }),
  add: zero,
  read: zero,
  sizeBytes: zero,
  close: () => undefined,
}

/**
 * The request's key from the configured parts. Sync unless a key function returns a
 * Promise. A key function that throws throws here (the adapter sends it down the
 * framework's error path); a non-string result is an error too.
 */
export function deriveKey<Req, Res>(
  r: ResolvedCommon<Req, Res>,
  view: RequestView<Req>,
  req: Req,
): string | Promise<string> {
  const parts = r.keyParts
  if (parts.length === 1) return onePart(r, view, req, parts[0])
  const out: (string | Promise<string>)[] = []
  let async = false
  for (const p of parts) {
    const v = onePart(r, view, req, p)
    if (v instanceof Promise) async = true
    out.push(v)
  }
  if (!async) return joinKeyParts(out as string[])
  return Promise.all(out.map((v) => Promise.resolve(v))).then(joinKeyParts)
}

function checkKey(v: unknown): string {
  if (typeof v !== 'string') invalidOption('key', 'a key function returning a string', v)
  return v
}

function onePart<Req, Res>(
  r: ResolvedCommon<Req, Res>,
  view: RequestView<Req>,
  req: Req,
  p: KeySpec<Req>,
): string | Promise<string> {
  if (typeof p === 'function') {
    const v = p(req)
    if (v instanceof Promise) return v.then((x) => 'fn:' + checkKey(x))
    return 'fn:' + checkKey(v)
  }
  if (p === 'ip') return 'ip:' + normalizeIp(view.ip(req) ?? '', r.ipv6Subnet)
  const kr: KeyRequest = {
    ip: view.ip(req) ?? '',
    method: view.method(req),
    routePattern: view.route(req),
    header: (name) => view.header(req, name),
  }
  return keyPart(p, kr, { ipv6Subnet: r.ipv6Subnet, tenantHeader: r.tenantHeader })
}

/** Whether a key or its client's address is on the allow list (sync unless a predicate returns a Promise). */
export function isAllowed<Req, Res>(
  r: ResolvedCommon<Req, Res>,
  view: RequestView<Req>,
  req: Req,
  key: string,
): boolean | Promise<boolean> {
  if (r.allowSet !== undefined) {
    if (r.allowSet.has(key)) return true
    const ip = view.ip(req)
    if (ip !== undefined && r.allowSet.has(normalizeIp(ip, r.ipv6Subnet))) return true
  }
  if (r.allowFn !== undefined) return r.allowFn(req, key)
  return false
}

/** The context handed to the error-response builder. */
export function errorContext(decision: Decision, key: string): ErrorContext {
  return {
    statusCode: decision.status,
    policy: decision.policy,
    retryAfterSeconds: retryAfterSeconds(decision.retryAfterMs),
    limit: decision.limit,
    key,
    decision,
  }
}

/** The abuse delta and failure flag of a response. */
export function outcomeOf<Req, Res>(
  r: ResolvedCommon<Req, Res>,
  limiter: Limiter,
  req: Req,
  res: Res,
  status: number,
  elapsedMs: number,
): { failed: boolean; abuseDelta: number } {
  let failed = false
  if (limiter.fairness !== undefined)
    failed =
      r.isFailure !== undefined ? r.isFailure(req, res) === true : status >= 500 || elapsedMs > limiter.fairness.slowMs
  let abuseDelta = 0
  if (limiter.abuse !== undefined)
    abuseDelta = r.abuseScore !== undefined ? r.abuseScore(req, res) : limiter.abuse.deltaForStatus(status)
  return { failed, abuseDelta }
}

/** A Bloom registry an adapter consults for the `bloom` option (a `BloomFilterRegistry` is one). */
export interface BloomRegistryLike extends BloomLookup {
  /** Checkpoint and release; called on server close. */
  close?(): void | Promise<void>
  /** The named filter (for `fastify.grudge.bloom(name)`). */
  get?(name: string): unknown
}

/**
 * A registry described by configuration: the adapter builds a `BloomFilterRegistry`,
 * `init(dir)`s it, `register`s each filter (loading its checkpoint when there is one) and
 * closes it (a last checkpoint) when the server closes.
 */
export interface BloomRegistryConfig {
  /** Directory of the checkpoints (created if missing). */
  dir: string
  /** Filters by name: `{ capacity, errorRate, policy?, shardCount?, ... }` (see `RegisterBloomOptions`). */
  filters: Readonly<Record<string, RegisterBloomOptions>>
  /** Ticker of the checkpoint timers (tests pass a FakeTicker). */
  ticker?: Ticker
  /** Receives background checkpoint errors. */
  onError?: (err: Error) => void
}

/** The option names of {@link BloomRegistryConfig}. */
export const BLOOM_REGISTRY_CONFIG_KEYS = optionKeys<BloomRegistryConfig>({
  dir: true,
  filters: true,
  ticker: true,
  onError: true,
})

/**
 * The registry an adapter uses: the object itself when it has `mightContain` (a value: its
 * keys are not checked), else a `BloomFilterRegistry` built from a {@link BloomRegistryConfig}.
 * @param v a registry or its configuration
 * @param option option path for error messages
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for neither, or for an unknown key of the
 * configuration, of a filter's options or of a filter's `policy` (named by its full path,
 * e.g. `bloomRegistry.filters.users.capacty`); the registry's own errors for a bad configuration
 */
export function openBloomRegistry(v: BloomRegistryLike | BloomRegistryConfig, option: string): BloomRegistryLike {
  if (typeof v !== 'object' || v === null)
    invalidOption(option, 'a registry with mightContain(name, item) or { dir, filters }', v)
  if (typeof (v as BloomRegistryLike).mightContain === 'function') return v as BloomRegistryLike
  const c = v as BloomRegistryConfig
  if (typeof c.dir !== 'string' || typeof c.filters !== 'object' || c.filters === null) {
    invalidOption(option, 'a registry with mightContain(name, item) or { dir, filters }', v)
  }
  checkKnownOptions(c, BLOOM_REGISTRY_CONFIG_KEYS, option + '.')
  // checked here first, so that the message names the path from the adapter's options
  for (const [name, o] of Object.entries(c.filters)) {
    const path = `${option}.filters.${name}.`
    checkKnownOptions(o, REGISTER_BLOOM_KEYS, path)
    if (typeof o === 'object' && o !== null) checkKnownOptions(o.policy, PERSIST_POLICY_KEYS, path + 'policy.')
  }
  const registry = new BloomFilterRegistry({ ticker: c.ticker, onError: c.onError })
  registry.init(c.dir)
  try {
    for (const [name, o] of Object.entries(c.filters)) registry.register(name, o)
  } catch (err) {
    void registry.close()
    throw err
  }
  return registry
}

export { delaySeconds }
