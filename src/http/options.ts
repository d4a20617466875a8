/**
 * The options both adapters share, their key tables, and their parser: partial options in,
 * a complete frozen {@link AdapterConfig} out, or a coded error naming the option. Framework
 * reads come in through a `RequestView`; nothing here imports a framework.
 * @module
 */
import { GrudgeError, invalidOption } from '../errors.js'
import { checkKnownOptions, optionKeys, type OptionNames } from '../options.js'
import { checkIpv6Subnet, parseKeyParts, type KeyRules, type KeySpec } from './client-key.js'
import { parseAllowList, type AllowList } from './allow-list.js'
import type { ErrorContext } from './error-body.js'
import type { FairnessStatus } from './status.js'
import {
  checkPolicyName,
  parseHeaderOptions,
  parseStandardHeaders,
  type HeaderOptions,
  type StandardHeadersDraft,
} from './headers.js'
import type { OutcomeRules } from './outcome.js'
import type { Decision } from '../limit/decision.js'
import type { DebtMeter, DebtMeterOptions } from '../limit/debt-meter.js'
import type { TieredDebtMeterOptions } from '../limit/tiers.js'
import type { FeedbackScoreOptions } from '../limit/feedback-score.js'
import type { AbuseScoreOptions } from '../limit/abuse-score.js'
import { POLICY_SKETCH_OPTION_NAMES, type PolicySketchOptions } from '../limit/options.js'
import { checkLimiterOptions, Limiter, type LimiterOptions } from '../limit/limiter.js'
import type { Telemetry } from '../limit/telemetry.js'

/** Debt-meter options as adapters take them: `cost` may be a function of the request. */
export interface AdapterLimitOptions<Req> extends Omit<DebtMeterOptions, 'cost'> {
  /** Cost of a request: a number in [0, burst] (default 1) or `(req) => number`. */
  cost?: number | ((req: Req) => number)
  /**
   * Policy name in the `RateLimit-Policy` / `RateLimit` fields: printable ASCII (0x20–0x7E)
   * without `%`, sent as given as an RFC 9651 sf-string (`"` and `\` escaped); anything else
   * is `ERR_GRUDGE_OPTION_INVALID`. Default: the Express middleware's `name` when given, else `default`.
   * When several Express middleware decide one request their policies are listed side by
   * side: a name given here (or through `name`) replaces an earlier policy of the same name,
   * while a defaulted `default` that clashes is written under the middleware's
   * `express:<n>` name instead, so names stay unique (spec/http.md §3.1).
   */
  name?: string
}

/**
 * Per-plan limits as adapters take them: each request is charged in the tier `tier(req)`
 * names, each tier a debt meter of its own (`{ rate, burst, maxDebt? }`) with its own
 * sketch (so memory is at most tiers × `memory`; spec/limiter.md §Tiers).
 */
export interface AdapterTieredLimitOptions<Req> extends Omit<TieredDebtMeterOptions, 'cost'> {
  /**
   * The tier of a request: one of the names of `tiers`. It may be async (a Promise or any
   * thenable is awaited). Any other answer (an unknown name, `undefined`) or a rejection
   * takes the framework's error path (a generic 500, logged with `ERR_GRUDGE_TIER_UNKNOWN`).
   */
  tier: (req: Req) => string | PromiseLike<string>
  /** Cost of a request: a number in [0, the smallest burst] (default 1) or `(req) => number` (checked against its tier's burst). */
  cost?: number | ((req: Req) => number)
  /** Policy name in the rate-limit fields, the same for every tier (each tier sends its own `q` and `w`); default as {@link AdapterLimitOptions.name}. */
  name?: string
}

/** Feedback-score options as adapters take them. */
export interface AdapterFairnessOptions<Req, Res> extends FeedbackScoreOptions {
  /** Whether a response is a failure; default status ≥ 500 or slower than `slowMs`. */
  isFailure?: (req: Req, res: Res) => boolean
  /** Status of a throttled request: 503 (default) or 429. */
  status?: FairnessStatus
}

/** Abuse-score options as adapters take them. */
export interface AdapterAbuseOptions<Req, Res> extends AbuseScoreOptions {
  /** Delta of a response; when given, `weights` is ignored. Must return a finite number. */
  score?: (req: Req, res: Res) => number
}

/** Options shared by both adapters (the plugin's/middleware's defaults). */
export interface CommonOptions<Req, Res> extends PolicySketchOptions {
  /** Debt meter: `{ rate, burst, cost?, maxDebt?, name? }`, or per-plan limits `{ tiers, tier, cost?, name? }`; denied → 429. */
  limit?: AdapterLimitOptions<Req> | AdapterTieredLimitOptions<Req> | false
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
  /** `false` sends no rate-limit fields at all, Retry-After included; default true (IETF fields and Retry-After). */
  headers?: boolean
  /**
   * The draft the IETF fields follow, with express-rate-limit's names: `'draft-10'`
   * (default: `RateLimit-Policy: "<name>";q=…;w=…` and `RateLimit: "<name>";r=…;t=…`),
   * `'draft-8'` (the same bytes), `'draft-7'` (`RateLimit-Policy: <q>;w=<w>` and
   * `RateLimit: limit=…, remaining=…, reset=…`), `'draft-6'` (`RateLimit-Policy: <q>;w=<w>`,
   * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`), or `false` for none (the
   * legacy fields and Retry-After are still sent as configured). `true` is refused with
   * `ERR_GRUDGE_OPTION_INVALID`: it means `'draft-6'` in express-rate-limit, so name the draft.
   */
  standardHeaders?: StandardHeadersDraft | false
  /**
   * Also send `X-RateLimit-Limit/Remaining/Reset`, the reset in delta seconds as
   * @fastify/rate-limit sends it (express-rate-limit sends an epoch time); default false.
   */
  legacyHeaders?: boolean
  /**
   * Status of a debt-meter denial: an integer in [400, 599]; default 429 (as both
   * @fastify/rate-limit and express-rate-limit's `statusCode`). The abuse score's block
   * stays 403 (@fastify/rate-limit's `ban` answers 403 too) and the feedback score's status
   * is `fairness.status`.
   */
  statusCode?: number
  /**
   * Body of a denial; default `{ statusCode, error, message }` naming the retry delay (with
   * Fastify's `useErrorHandler`, an `Error` with `statusCode`). Called with the request and
   * the denial's context; its answer is sent as the body (or thrown, with `useErrorHandler`).
   */
  errorResponseBuilder?: (req: Req, context: ErrorContext) => unknown
  /**
   * Send a denial down the framework's error path instead of answering it: the
   * `errorResponseBuilder` result (default a `DenialError`: an `Error` with
   * `statusCode`) is thrown as @fastify/rate-limit does, so that Fastify's
   * `setErrorHandler` (or Express's error middleware, through `next(err)`) sees it and
   * answers. The rate-limit fields and Retry-After are set before; the reply's status is
   * not (the handler reads `error.statusCode`; Fastify's default handler answers with it).
   * Default false: the adapter answers the denial itself.
   */
  useErrorHandler?: boolean
  /** Called once per denied request, before the answer. */
  onExceeded?: (req: Req, key: string, decision: Decision) => void
  /**
   * Never limited: an array of keys, client addresses and CIDR ranges, or a predicate. An
   * address entry (`2001:db8::1`, `10.1.2.3`, `::ffff:10.1.2.3`) exempts that one address,
   * whatever `ipv6Subnet` groups keys by; a CIDR entry (`2001:db8::/48`, `10.0.0.0/8`)
   * exempts its range; any other string is compared with the request key (`fn:alice`,
   * `tenant:acme`). A predicate allows on any truthy answer (as @fastify/rate-limit's `allowList` does); it may be async (a Promise or any
   * thenable is awaited; a rejection goes down the framework's error path).
   */
  allowList?: readonly string[] | ((req: Req, key: string) => boolean | PromiseLike<boolean>)
  /**
   * Requests for which this answers a truthy value skip every policy (as express-rate-limit's
   * `skip` reads it: `req => req.headers['x-internal']` skips when the header is present); a
   * falsy answer limits. It may be async: a Promise (any thenable) is awaited, and a rejection goes down
   * the framework's error path.
   */
  skip?: (req: Req) => boolean | PromiseLike<boolean>
  /** Uniform [0, 1) source for the feedback score; default Math.random. */
  random?: () => number
  /** Estimated false-positive rate above which one warning is logged; default 0.01. */
  targetFalsePositiveRate?: number
  /** Longest wait in ms for an asynchronous store before `onStoreError` decides; default 1000. */
  storeTimeoutMs?: number
  /** A store timeout or rejection: `'open'` (admit, no figures; default) or `'closed'` (503). */
  onStoreError?: 'open' | 'closed'
  /**
   * The status recorded for the feedback and abuse scores when the client aborts a request
   * before its response is sent (Fastify's `onRequestAbort`, a `close` before `finish` in
   * Express): an integer in [100, 599]; default 499 (nginx's "client closed request"). Weight
   * it in `abuse.weights` (`{ 499: 1 }`) to make aborting count as probing.
   */
  abortStatus?: number
}

/**
 * The names of {@link CommonOptions}, the options both adapters take (each adds its own to
 * them for its top-level list).
 * @internal
 */
export const COMMON_OPTION_NAMES: OptionNames<CommonOptions<unknown, unknown>> = Object.freeze({
  ...POLICY_SKETCH_OPTION_NAMES,
  limit: true,
  fairness: true,
  abuse: true,
  key: true,
  tenantHeader: true,
  ipv6Subnet: true,
  headers: true,
  standardHeaders: true,
  legacyHeaders: true,
  statusCode: true,
  errorResponseBuilder: true,
  useErrorHandler: true,
  onExceeded: true,
  allowList: true,
  skip: true,
  random: true,
  targetFalsePositiveRate: true,
  storeTimeoutMs: true,
  onStoreError: true,
  abortStatus: true,
})
/**
 * The option names of {@link AdapterLimitOptions} (`limit`).
 * @internal
 */
export const ADAPTER_LIMIT_KEYS = optionKeys<AdapterLimitOptions<unknown>>({
  rate: true,
  burst: true,
  cost: true,
  maxDebt: true,
  name: true,
})
/**
 * The option names of {@link AdapterTieredLimitOptions} (`limit` with `tiers`).
 * @internal
 */
export const ADAPTER_TIERED_LIMIT_KEYS = optionKeys<AdapterTieredLimitOptions<unknown>>({
  tiers: true,
  tier: true,
  cost: true,
  name: true,
})
/**
 * The option names of {@link AdapterFairnessOptions} (`fairness`).
 * @internal
 */
export const ADAPTER_FAIRNESS_KEYS = optionKeys<AdapterFairnessOptions<unknown, unknown>>({
  failureDelta: true,
  successDelta: true,
  lambdaPerSecond: true,
  slowMs: true,
  status: true,
  isFailure: true,
})
/**
 * Refuse an `abuse.weights` entry for the status this limiter's own refusals answer with
 * (`statusCode` of its debt meter, `fairness.status` of its feedback score): outcomes are
 * recorded for admitted requests only, so such a weight would never see the limiter's own
 * refusals, and `{ 429: 5 }` would silently never escalate. Those refusals are scored by
 * `abuse.refusalWeight`; a status the app (or another limiter of a stack) sends is scored by
 * a weight on a limiter without that policy, or by `abuse.score(req, res)`.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `abuse.weights.<status>` and `abuse.refusalWeight`
 */
function checkOwnRefusalWeights(
  weights: unknown,
  limitStatus: number | undefined,
  fairnessStatus: number | undefined,
  prefix: string,
): void {
  if (typeof weights !== 'object' || weights === null) return
  for (const [status, policy] of [
    [limitStatus, 'limit'],
    [fairnessStatus, 'fairness'],
  ] as const) {
    if (status === undefined || !Object.hasOwn(weights, String(status))) continue
    invalidOption(
      `${prefix}abuse.weights.${status}`,
      `no weight for ${status}, the status of this limiter's own ${policy} refusals: outcomes are recorded for admitted requests only, so it would never fire; use ${prefix}abuse.refusalWeight to score refused requests (escalation), or abuse.score(req, res) for a ${status} the app sends`,
      (weights as Record<string, unknown>)[String(status)],
    )
  }
}

/**
 * The option names of {@link AdapterAbuseOptions} (`abuse`).
 * @internal
 */
export const ADAPTER_ABUSE_KEYS = optionKeys<AdapterAbuseOptions<unknown, unknown>>({
  weights: true,
  threshold: true,
  halfLifeMs: true,
  maxScore: true,
  refusalWeight: true,
  score: true,
})

/**
 * The adapters' options after parsing: complete, checked and frozen. Build its limiters
 * with {@link buildLimiter}.
 * @internal
 */
export interface AdapterConfig<Req, Res> extends KeyRules<Req>, OutcomeRules<Req, Res> {
  /** The cost function of `limit.cost`, when it is one. */
  readonly cost: ((req: Req) => number) | undefined
  /** The tier function of a tiered `limit`, else undefined. */
  readonly tier: ((req: Req) => string | PromiseLike<string>) | undefined
  /** The body of a denial (or what is thrown, with Fastify's `useErrorHandler`); undefined for the default. */
  readonly errorResponseBuilder: ((req: Req, context: ErrorContext) => unknown) | undefined
  /** Whether a denial goes down the framework's error path (thrown) instead of being answered. */
  readonly useErrorHandler: boolean
  /** Called once per denied request. */
  readonly onExceeded: ((req: Req, key: string, decision: Decision) => void) | undefined
  /** The parsed `allowList`. */
  readonly allowList: AllowList<Req>
  /** The `skip` predicate. */
  readonly skip: ((req: Req) => boolean | PromiseLike<boolean>) | undefined
  /** Which rate-limit fields are written, or false for none. */
  readonly headers: Readonly<Required<HeaderOptions>> | false
  /** Status of a feedback-score denial: 503 or 429. */
  readonly fairnessStatus: FairnessStatus
  /** Status of a debt-meter denial (`statusCode`), in [400, 599]. */
  readonly limitStatus: number
  /** The core limiter's options (checked, frozen; the adapter adds name and telemetry). */
  readonly limiter: Readonly<LimiterOptions>
  /** The option path prefix the options were parsed under (e.g. `config.grudge.`). */
  readonly prefix: string
  /** The status recorded for an aborted request. */
  readonly abortStatus: number
}

function fn(name: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'function') invalidOption(name, 'a function', v)
}

/**
 * Parse adapter options once: a complete frozen {@link AdapterConfig}, or a coded error
 * naming the option. Pure: it opens no store and starts no timer (the policies' options
 * are checked by `checkLimiterOptions`, without building their sketches). The top-level
 * names are the adapter's to check (each adds its own options); the nested policy objects
 * (`limit`, `fairness`, `abuse`) are checked here.
 * @param o the options
 * @param prefix option path prefix for messages (e.g. `config.grudge.` for a route)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option (also an unknown key
 * of a policy, e.g. `limit.burts`); `ERR_GRUDGE_ROTATOR_AMNESTY`
 * @internal
 */
export function parseLimiterOptions<Req, Res>(o: CommonOptions<Req, Res>, prefix = ''): AdapterConfig<Req, Res> {
  if (typeof o !== 'object' || o === null) invalidOption(prefix || 'options', 'an object', o)
  const keyParts = parseKeyParts<Req>(o.key, prefix + 'key')
  const tenantHeader = o.tenantHeader ?? 'x-tenant-id'
  if (typeof tenantHeader !== 'string' || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(tenantHeader))
    invalidOption(prefix + 'tenantHeader', 'a lower-case header name', tenantHeader)
  const ipv6Subnet = checkIpv6Subnet(o.ipv6Subnet, prefix + 'ipv6Subnet')
  if (o.headers !== undefined && typeof o.headers !== 'boolean')
    invalidOption(prefix + 'headers', 'a boolean', o.headers)
  if (o.legacyHeaders !== undefined && typeof o.legacyHeaders !== 'boolean')
    invalidOption(prefix + 'legacyHeaders', 'a boolean', o.legacyHeaders)
  const draft = parseStandardHeaders(o.standardHeaders, prefix + 'standardHeaders')
  const limitStatus = o.statusCode ?? 429
  if (typeof limitStatus !== 'number' || !Number.isInteger(limitStatus) || limitStatus < 400 || limitStatus > 599)
    invalidOption(prefix + 'statusCode', 'an integer status in [400, 599]', limitStatus)
  fn(prefix + 'errorResponseBuilder', o.errorResponseBuilder)
  if (o.useErrorHandler !== undefined && typeof o.useErrorHandler !== 'boolean')
    invalidOption(prefix + 'useErrorHandler', 'a boolean', o.useErrorHandler)
  fn(prefix + 'onExceeded', o.onExceeded)
  fn(prefix + 'skip', o.skip)
  const allowList = parseAllowList<Req>(o.allowList, prefix + 'allowList')
  const abortStatus = o.abortStatus ?? 499
  if (typeof abortStatus !== 'number' || !Number.isInteger(abortStatus) || abortStatus < 100 || abortStatus > 599)
    invalidOption(prefix + 'abortStatus', 'an integer status in [100, 599]', abortStatus)
  let cost: ((req: Req) => number) | undefined
  let tier: AdapterConfig<Req, Res>['tier']
  let limit: DebtMeterOptions | TieredDebtMeterOptions | undefined
  if (o.limit) {
    if (typeof o.limit !== 'object') invalidOption(prefix + 'limit', 'an object { rate, burst }', o.limit)
    const tiered = 'tiers' in o.limit || 'tier' in o.limit
    checkKnownOptions(o.limit, tiered ? ADAPTER_TIERED_LIMIT_KEYS : ADAPTER_LIMIT_KEYS, prefix + 'limit.')
    if (o.limit.name !== undefined) checkPolicyName(prefix + 'limit.name', o.limit.name)
    let rest: Record<string, unknown> = { ...o.limit }
    if (tiered) {
      const t = (o.limit as AdapterTieredLimitOptions<Req>).tier
      if (typeof t !== 'function')
        invalidOption(prefix + 'limit.tier', 'a function (req) => tier name (with limit.tiers)', t)
      if ((o.limit as AdapterTieredLimitOptions<Req>).tiers === undefined)
        invalidOption(
          prefix + 'limit.tiers',
          'an object of tier name → { rate, burst, maxDebt? } (with limit.tier)',
          undefined,
        )
      tier = t
      const { tier: _t, ...r } = o.limit as AdapterTieredLimitOptions<Req>
      rest = r
      // a frozen copy of each tier: mutating the caller's options later changes nothing
      const tiers = rest.tiers as Record<string, unknown>
      if (typeof tiers === 'object' && tiers !== null)
        rest.tiers = Object.freeze(
          Object.fromEntries(
            Object.entries(tiers).map(([k, v]) => [
              k,
              typeof v === 'object' && v !== null ? Object.freeze({ ...v }) : v,
            ]),
          ),
        )
    }
    if (typeof rest.cost === 'function') {
      cost = rest.cost as (req: Req) => number
      rest.cost = undefined
    }
    limit = Object.freeze(rest) as unknown as DebtMeterOptions | TieredDebtMeterOptions
  }
  // the adapters' own policy options (isFailure, status, score) are taken out here: the
  // core policies refuse names they do not know
  let isFailure: AdapterConfig<Req, Res>['isFailure']
  let fairnessStatus: FairnessStatus = 503
  let fairness: FeedbackScoreOptions | undefined
  if (o.fairness) {
    if (typeof o.fairness !== 'object') invalidOption(prefix + 'fairness', 'an object', o.fairness)
    checkKnownOptions(o.fairness, ADAPTER_FAIRNESS_KEYS, prefix + 'fairness.')
    fn(prefix + 'fairness.isFailure', o.fairness.isFailure)
    const { isFailure: f, status, ...rest } = o.fairness
    if (status !== undefined && status !== 503 && status !== 429)
      invalidOption(prefix + 'fairness.status', '503 or 429', status)
    isFailure = f
    fairnessStatus = status ?? 503
    fairness = Object.freeze(rest)
  }
  let abuseScore: AdapterConfig<Req, Res>['abuseScore']
  let abuse: AbuseScoreOptions | undefined
  if (o.abuse) {
    if (typeof o.abuse !== 'object') invalidOption(prefix + 'abuse', 'an object', o.abuse)
    checkKnownOptions(o.abuse, ADAPTER_ABUSE_KEYS, prefix + 'abuse.')
    fn(prefix + 'abuse.score', o.abuse.score)
    const { score, ...rest } = o.abuse
    abuseScore = score
    abuse = Object.freeze(rest)
    checkOwnRefusalWeights(
      o.abuse.weights,
      o.limit ? limitStatus : undefined,
      o.fairness ? fairnessStatus : undefined,
      prefix,
    )
  }
  const headers = parseHeaderOptions(
    o.headers === false
      ? false
      : draft === false
        ? { ietf: false, legacy: o.legacyHeaders === true }
        : { draft, legacy: o.legacyHeaders === true },
  )
  const limiter: LimiterOptions = Object.freeze({
    memory: o.memory,
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
  })
  checkLimiterOptions(limiter, prefix)
  return Object.freeze({
    keyParts,
    tenantHeader,
    ipv6Subnet,
    cost,
    tier,
    isFailure,
    abuseScore,
    errorResponseBuilder: o.errorResponseBuilder,
    useErrorHandler: o.useErrorHandler === true,
    onExceeded: o.onExceeded,
    allowList,
    skip: o.skip,
    headers,
    fairnessStatus,
    limitStatus,
    limiter,
    prefix,
    abortStatus,
  })
}

/**
 * Build a limiter of a parsed configuration.
 * @param config the adapter's configuration
 * @param name the limiter's name (namespaces its state in a shared store)
 * @param telemetry the counters it reports into (the adapter's), or undefined for its own
 * @internal
 */
export function buildLimiter<Req, Res>(
  config: AdapterConfig<Req, Res>,
  name: string,
  telemetry: Telemetry | undefined,
): Limiter {
  return new Limiter({ ...config.limiter, name, telemetry }, config.prefix)
}

/**
 * The cost of a request: the `limit.cost` function's answer, checked, or undefined for the
 * configured constant. A function answering anything but a finite number ≥ 0 (an
 * `undefined` included) takes the error path, as a key function answering a non-string
 * does; a cost above the burst (3 with `burst: 2.5`), which no debt could ever admit, takes
 * it with its own code (a constant cost above the burst is refused at construction).
 * @param config the adapter's configuration
 * @param meter the debt meter the request is charged in (its tier's, for a tiered limit: its burst bounds the cost)
 * @param req the request
 * @throws {GrudgeError} `ERR_GRUDGE_ADAPTER_COST_OVER_BURST` for a cost above the burst;
 * `ERR_GRUDGE_OPTION_INVALID` naming `limit.cost` for any other bad cost
 * @internal
 */
export function requestCost<Req, Res>(
  config: AdapterConfig<Req, Res>,
  meter: DebtMeter | undefined,
  req: Req,
): number | undefined {
  if (config.cost === undefined || meter === undefined) return undefined
  const cost = config.cost(req)
  const burst = meter.burst
  if (typeof cost === 'number' && Number.isFinite(cost) && cost > burst)
    throw new GrudgeError(
      'ERR_GRUDGE_ADAPTER_COST_OVER_BURST',
      `option "${config.prefix}limit.cost": expected a cost ≤ burst = ${burst} (a request costing more could never be admitted), received ${cost}`,
    )
  return meter.checkCost(cost)
}

/** The limiters that have logged a cost above their burst: logged once per limiter. */
const costLogged = new WeakSet<object>()

/**
 * Whether a request-time failure is to be logged: every one, except a cost above the burst
 * after the first of its limiter (a misconfiguration, the same on every such request).
 * @param limiter the limiter that failed
 * @param err the failure
 * @internal
 */
export function firstReport(limiter: object, err: unknown): boolean {
  if ((err as { code?: unknown } | null)?.code !== 'ERR_GRUDGE_ADAPTER_COST_OVER_BURST') return true
  if (costLogged.has(limiter)) return false
  costLogged.add(limiter)
  return true
}
