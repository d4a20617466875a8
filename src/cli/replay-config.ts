import { GrudgeError, describeValue, invalidOption } from '../errors.js'
import { closestName } from '../options.js'

/** Log formats the replay reads. */
export type LogFormat = 'access' | 'auth'

/**
 * How a request is turned into a key. Access logs: `ip`, `ip24`, `route`, `ip+route`,
 * `ip+method`. Auth logs: `ip`, `ip24`, `user`, `ip+user`. An address is keyed as the
 * adapters key it (`normalizeIp`: IPv4 as is, IPv4-mapped IPv6 as its IPv4, IPv6 by its /64,
 * port and zone dropped); `ip24` further groups IPv4 by its /24.
 */
export type KeyKind = 'ip' | 'ip24' | 'route' | 'ip+route' | 'ip+method' | 'user' | 'ip+user'

const ACCESS_KEYS: readonly KeyKind[] = ['ip', 'ip24', 'route', 'ip+route', 'ip+method']
const AUTH_KEYS: readonly KeyKind[] = ['ip', 'ip24', 'user', 'ip+user']

/** Options of {@link Replay}; every one optional. */
export interface ReplayOptions {
  /** `'access'` (CLF/Combined), `'auth'` (sshd syslog) or `'auto'` (default: decided by the first line that parses as either). */
  format?: LogFormat | 'auto'
  /** How requests map to keys; default `'ip'`. See {@link KeyKind}. */
  key?: KeyKind
  /** Rate of the debt-meter policy in requests per second, > 0; `null` turns it off. Default 1 for access logs, off for auth logs. */
  ratePerSecond?: number | null
  /** Burst of the debt-meter policy in requests, ≥ 1. Default 20. */
  burst?: number
  /**
   * Weights of the abuse score per outcome; `null` turns it off. Access logs: keys are a
   * status (`"404"`), a class (`"4xx"`) or `"default"` (the exact status wins over its class).
   * Auth logs: `failed`, `invalid`, `accepted`. Default off for access logs and
   * `{ failed: 1, invalid: 1, accepted: -2 }` for auth logs.
   */
  abuse?: Record<string, number> | null
  /** Abuse score at which requests are refused, > 0. Default 5. */
  threshold?: number
  /** Half-life of the abuse score in ms, > 0. Default 600000 (10 min). */
  halfLifeMs?: number
  /** Levels L of each sketch, integer in [1, 16]. Default 4. */
  levels?: number
  /**
   * Cells per level M of each sketch, integer in [16, 2^24]: given, a fixed shape. Default: none,
   * each policy sizes itself within `memoryBytes`, as the adapters' policies do by default
   * (spec/rotator.md §1, spec/sizing.md §5), and the report lists the sizes it chose over time.
   */
  cellsPerLevel?: number
  /**
   * Memory budget of each policy in bytes, a safe integer ≥ 1, read as the adapters read a
   * policy's `memory`: all generations, the 2 KiB load meter and a default telemetry's 36 KiB
   * inside it, so the replay builds the shapes an adapter builds. With `cellsPerLevel` the fixed
   * shape must fit it. Default the adapters' (10 MiB + 38 KiB: at most 4 × 65,536 cells).
   */
  memoryBytes?: number
  /** Generations of each Rotator, integer in [2, 16]. Default: the adapters' default. */
  generations?: number
  /**
   * Rotation period in ms (of log time); default each policy's shortest period that forgives
   * nothing early (the adapters' default: the debt meter's maxDebt / rate, the abuse score's
   * decay from its ceiling to 1/1000 of the threshold, over generations − 1).
   */
  periodMs?: number
  /** How many throttled keys the report lists, integer ≥ 1. Default 10. */
  top?: number
  /** Timeline bin in ms, a multiple of 60000; 0 (default) picks the smallest of 1 min, 5 min, 15 min, 1 h, 6 h, 1 day giving ≤ 1440 bins. */
  binMs?: number
  /** Year of the first line of a BSD-syslog auth log (which carries none); default the current UTC year. */
  year?: number
  /**
   * Disorder tolerated in ms of log time, ≥ 0: lines are held in a reorder buffer and replayed
   * in time order once the log has moved `maxDisorderMs` past them. A line older than that
   * is replayed at the latest time already replayed and counted as late. Default 60000.
   */
  maxDisorderMs?: number
  /** Master seed of the sketches' hashing (a safe integer ≥ 0), for a reproducible replay; default random. */
  seed?: number
}

/** The complete, frozen configuration of a replay (see {@link ReplayOptions}). */
export interface ReplayConfig {
  readonly format: LogFormat | 'auto'
  readonly key: KeyKind
  readonly ratePerSecond: number | null
  readonly burst: number
  readonly abuse: Readonly<Record<string, number>> | null
  readonly threshold: number
  readonly abuseHi: number
  readonly halfLifeMs: number
  readonly levels: number
  /** Fixed cells per level, or undefined for a self-sized policy. */
  readonly cellsPerLevel: number | undefined
  readonly memoryBytes: number | undefined
  readonly generations: number | undefined
  readonly periodMs: number | undefined
  readonly top: number
  readonly binMs: number
  readonly year: number
  readonly maxDisorderMs: number
  readonly seed: number | undefined
}

function intIn(name: string, v: unknown, lo: number, hi: number, dflt: number): number {
  if (v === undefined) return dflt
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi)
    invalidOption(name, `an integer in [${lo}, ${hi}]`, v)
  return v
}

function positive(name: string, v: unknown, integer = false, min = 0): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= min || (integer && !Number.isInteger(v))) {
    invalidOption(name, `${integer ? 'an integer' : 'a finite number'} > ${min}`, v)
  }
  return v
}

/**
 * Turn partial options into a complete frozen config.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
 */
export function replayConfig(options: ReplayOptions = {}, detected?: LogFormat): ReplayConfig {
  const format = options.format ?? 'auto'
  if (format !== 'auto' && format !== 'access' && format !== 'auth')
    invalidOption('format', "'auto', 'access' or 'auth'", format)
  const effective = format === 'auto' ? detected : format
  const key = options.key ?? 'ip'
  const allowed =
    effective === 'auth'
      ? AUTH_KEYS
      : effective === 'access'
        ? ACCESS_KEYS
        : [...new Set([...ACCESS_KEYS, ...AUTH_KEYS])]
  if (!allowed.includes(key)) {
    const near = typeof key === 'string' ? closestName(key, allowed) : undefined
    throw new GrudgeError(
      'ERR_GRUDGE_OPTION_INVALID',
      `option "key": expected ${allowed.join(' | ')}, received ${describeValue(key)}${near !== undefined ? `; did you mean ${near}?` : ''}`,
    )
  }
  const ratePerSecond =
    options.ratePerSecond === null
      ? null
      : options.ratePerSecond === undefined
        ? effective === 'auth'
          ? null
          : 1
        : positive('rate', options.ratePerSecond)
  // a request costs 1, so a burst below 1 would refuse every request
  const burst = options.burst ?? 20
  if (typeof burst !== 'number' || !Number.isFinite(burst) || burst < 1)
    invalidOption('burst', 'a number ≥ 1 (a request costs 1)', burst)
  let abuse: Record<string, number> | null
  if (options.abuse === undefined) abuse = effective === 'auth' ? { failed: 1, invalid: 1, accepted: -2 } : null
  else abuse = options.abuse
  if (abuse !== null) {
    if (typeof abuse !== 'object') invalidOption('abuse', 'an object of weights', abuse)
    for (const [name, w] of Object.entries(abuse)) {
      if (effective === 'auth' && !['failed', 'invalid', 'accepted'].includes(name))
        invalidOption(`abuse.${name}`, 'failed | invalid | accepted', name)
      if (effective === 'access' && !/^([1-5][0-9][0-9]|[1-5]xx|success|default)$/.test(name))
        invalidOption(`abuse.${name}`, 'a status (404), a class (4xx), success (< 400) or default', name)
      if (typeof w !== 'number' || !Number.isFinite(w)) invalidOption(`abuse.${name}`, 'a finite number', w)
    }
    abuse = Object.freeze({ ...abuse })
  }
  if (effective !== undefined && ratePerSecond === null && abuse === null)
    invalidOption('rate', 'a rate or abuse weights (both are off)', null)
  const threshold = options.threshold === undefined ? 5 : positive('threshold', options.threshold)
  const halfLifeMs = options.halfLifeMs === undefined ? 600_000 : positive('halfLifeMs', options.halfLifeMs)
  const levels = intIn('levels', options.levels, 1, 16, 4)
  const cellsPerLevel =
    options.cellsPerLevel === undefined ? undefined : intIn('cells', options.cellsPerLevel, 16, 1 << 24, 0)
  const memoryBytes = options.memoryBytes === undefined ? undefined : positive('memory', options.memoryBytes, true)
  const generations =
    options.generations === undefined ? undefined : intIn('generations', options.generations, 2, 16, 2)
  const periodMs = options.periodMs === undefined ? undefined : positive('period', options.periodMs)
  const top = options.top === undefined ? 10 : positive('top', options.top, true)
  const binMs = options.binMs ?? 0
  if (!Number.isInteger(binMs) || binMs < 0 || binMs % 60_000 !== 0)
    invalidOption('bin', 'a whole number of minutes (ms multiple of 60000), or 0 for auto', binMs)
  const year = options.year ?? new Date().getUTCFullYear()
  if (!Number.isInteger(year) || year < 1970 || year > 9999) invalidOption('year', 'an integer in [1970, 9999]', year)
  const maxDisorderMs = options.maxDisorderMs ?? 60_000
  if (typeof maxDisorderMs !== 'number' || !Number.isFinite(maxDisorderMs) || maxDisorderMs < 0) {
    invalidOption('maxDisorderMs', 'a finite number ≥ 0 (ms)', maxDisorderMs)
  }
  const seed = options.seed
  if (seed !== undefined && (!Number.isSafeInteger(seed) || seed < 0)) invalidOption('seed', 'a safe integer ≥ 0', seed)
  return Object.freeze({
    seed,
    format: effective ?? 'auto',
    maxDisorderMs,
    key,
    ratePerSecond,
    burst,
    abuse,
    threshold,
    abuseHi: threshold * 4,
    halfLifeMs,
    levels,
    cellsPerLevel,
    memoryBytes,
    generations,
    periodMs,
    top,
    binMs,
    year,
  })
}
