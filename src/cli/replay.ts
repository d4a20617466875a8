import { DebtMeter, type DebtVerdict } from '../limit/debt-meter.js'
import { AbuseScore, type AbuseVerdict } from '../limit/abuse-score.js'
import { resolveSketchOptions } from '../limit/options.js'
import { localStore } from '../limit/store.js'
import { sipHash } from '../hash/hasher.js'
import { ManualClock as FakeClock, ManualTicker as FakeTicker } from '../clock.js'
import { invalidOption } from '../errors.js'
import { accessRecord, parseAccessLine, type AccessRecord } from './access-log.js'
import { AuthLogParser, authRecord, type AuthRecord } from './auth-log.js'
import { HyperLogLogDistinct, type DistinctCounter } from './distinct.js'
import { ExactReference } from './reference.js'
import { formatDuration } from './units.js'

/** Log formats the replay reads. */
export type LogFormat = 'access' | 'auth'

/** How a request is turned into a key. Access logs: `ip`, `ip24` (the IPv4 /24 or IPv6 /64), `route`, `ip+route`, `ip+method`. Auth logs: `ip`, `user`, `ip+user`. */
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
  /** Cells per level M of each sketch, integer in [16, 2^24]. Default 4096. */
  cellsPerLevel?: number
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
  readonly cellsPerLevel: number
  readonly generations: number | undefined
  readonly periodMs: number | undefined
  readonly top: number
  readonly binMs: number
  readonly year: number
  readonly maxDisorderMs: number
  readonly seed: number | undefined
}

/** A throttled key in the report. */
export interface ThrottledKey {
  key: string
  /** Requests of the key refused by the sketch policies. */
  rejected: number
  /** All requests of the key. */
  requests: number
  /** Requests of the key refused by the exact reference. */
  referenceRejected: number
  /** Time of the first refusal, ms since the epoch. */
  startedMs: number
  /** Time of the last refusal, ms since the epoch. */
  endedMs: number
}

/** One bin of the timeline. */
export interface TimelineBin {
  /** Start of the bin, ms since the epoch. */
  startMs: number
  admitted: number
  rejected: number
  /** Requests the exact reference refused in this bin. */
  referenceRejected: number
}

/** Everything `grudge replay` reports; `--json` prints it as is. */
export interface ReplayReport {
  input: {
    format: LogFormat | 'unknown'
    linesRead: number
    /** Lines that parsed (for auth logs: well-formed syslog lines, events or not). */
    linesParsed: number
    linesUnparseable: number
    /** Up to 5 unparseable lines: line number (1-based) and text (cut at 200 characters). */
    unparseableSamples: { line: number; text: string }[]
    /** Auth logs: sshd login events (a `message repeated N times` line counts N). */
    events: number
    /** Parsed lines whose time was before a time already read (put back in order by the reorder buffer). */
    outOfOrder: number
    /** Of those, lines more than `maxDisorderMs` late, replayed at the latest time already replayed. */
    late: number
    /** The largest step back in time, ms. */
    maxBackwardsMs: number
  }
  /** Earliest and latest time read (ms since the epoch and ISO 8601). */
  span: { startMs: number; endMs: number; durationMs: number; start: string; end: string }
  config: ReplayConfig
  totals: { requests: number; admitted: number; rejected: number }
  /** Distinct keys: `count` by the counter (a HyperLogLog by default), `exact` from the reference's map. */
  distinctKeys: { count: number; method: 'exact' | 'hyperloglog'; relativeStandardError: number; exact: number }
  throttled: { distinctKeys: number; top: ThrottledKey[] }
  sketch: {
    policies: string[]
    levels: number
    cellsPerLevel: number
    generations: number
    sizeBytes: number
    /** Rotation period of each policy, ms. */
    periodsMs: { rate?: number; abuse?: number }
    /** Rotations during the replay (log time span / period of the first policy). */
    rotations: number
  }
  reference: {
    admitted: number
    rejected: number
    /** Requests decided differently by the sketch and the reference. */
    decisionsDiffering: number
    distinctKeysThrottled: number
    /** Keys the sketch throttled and the reference never did (false positives of the sketch), up to 20, and their count. */
    onlySketch: string[]
    onlySketchCount: number
    /** Keys the reference throttled and the sketch never did, up to 20, and their count. */
    onlyReference: string[]
    onlyReferenceCount: number
  }
  timeline: { binMs: number; bins: TimelineBin[] }
}

const BINS_MS = [60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000]

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
    effective === 'auth' ? AUTH_KEYS : effective === 'access' ? ACCESS_KEYS : [...ACCESS_KEYS, ...AUTH_KEYS]
  if (!allowed.includes(key)) invalidOption('key', allowed.join(' | '), key)
  const ratePerSecond =
    options.ratePerSecond === null
      ? null
      : options.ratePerSecond === undefined
        ? effective === 'auth'
          ? null
          : 1
        : positive('rate', options.ratePerSecond)
  const burst = options.burst === undefined ? 20 : positive('burst', options.burst, false, 0.999999)
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
  const cellsPerLevel = intIn('cells', options.cellsPerLevel, 16, 1 << 24, 4096)
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
    generations,
    periodMs,
    top,
    binMs,
    year,
  })
}

interface KeyStats {
  rejected: number
  startedMs: number
  endedMs: number
}

const KEY_CODES: Record<KeyKind, number> = {
  ip: 0,
  ip24: 1,
  route: 2,
  'ip+route': 3,
  'ip+method': 4,
  user: 5,
  'ip+user': 6,
}

/** The /24 of an IPv4 address, or the /64 of an IPv6 one (first four groups, not expanded). */
export function subnetOf(ip: string): string {
  if (ip.indexOf(':') >= 0) {
    const parts = ip.split(':')
    return parts.slice(0, 4).join(':') + '::/64'
  }
  const dot = ip.lastIndexOf('.')
  return dot < 0 ? ip : ip.slice(0, dot) + '.0/24'
}

/**
 * Replays a log through grudge's policies on a fake clock set from each line's time, beside
 * an {@link ExactReference}, and builds a {@link ReplayReport}. Feed it lines with
 * {@link Replay.line}, then call {@link Replay.finish}. Pure: no I/O, no wall clock.
 *
 * Policies: the adapters' own {@link DebtMeter} and {@link AbuseScore} (in-process stores:
 * Rotators of Min Sketches), with their defaults, in the order the adapters run them:
 * - abuse score: exponential decay with `halfLifeMs`, ceiling 4 × threshold; a request is
 *   refused iff the key's score is ≥ threshold; an admitted request adds the weight of its
 *   outcome (status or auth event). Refused requests add nothing: with the limiter on, they
 *   would not have reached the application.
 * - debt meter: drains at `ratePerSecond`; a request of cost 1 is admitted iff
 *   `debt + 1 ≤ burst`.
 *
 * Time: lines go through a reorder buffer (see {@link ReplayOptions.maxDisorderMs}); the
 * policies' clock is each replayed line's time, and their rotations follow that clock.
 */
export class Replay {
  /** The configuration; its `format` is fixed once the first line parses. */
  config: ReplayConfig
  private readonly options: ReplayOptions
  private format: LogFormat | 'unknown'
  private readonly clock = new FakeClock(0)
  private readonly ticker = new FakeTicker()
  private generations = 0
  private rate: DebtMeter | undefined
  private abuse: AbuseScore | undefined
  private reference!: ExactReference
  private readonly distinct: DistinctCounter
  private readonly access: AccessRecord = accessRecord()
  private readonly auth: AuthRecord = authRecord()
  private authParser!: AuthLogParser
  private detectParser: AuthLogParser
  private statusWeights = new Float64Array(600)
  private eventWeights = { failed: 0, invalid: 0, accepted: 0 }
  private keyCode = 0
  private started = false
  private nowMs = -Infinity
  private startMs = 0
  // counters
  private linesRead = 0
  private linesParsed = 0
  private linesBad = 0
  private readonly samples: { line: number; text: string }[] = []
  private events = 0
  private outOfOrder = 0
  private maxBackwardsMs = 0
  private late = 0
  private maxSeenMs = 0
  private seq = 0
  private readonly heap = new MinHeap()
  private admitted = 0
  private rejected = 0
  private refAdmitted = 0
  private refRejected = 0
  private differing = 0
  private readonly throttled = new Map<string, KeyStats>()
  private readonly refRejectedByKey = new Map<string, number>()
  private readonly minutes = new Map<number, Float64Array>()
  private curMinute = -1
  private curBin: Float64Array = new Float64Array(3)

  /**
   * @param options see {@link ReplayOptions}
   * @param distinct the distinct-key counter (default a HyperLogLog of precision 14)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
   */
  constructor(options: ReplayOptions = {}, distinct?: DistinctCounter) {
    this.options = options
    this.config = replayConfig(options)
    this.distinct = distinct ?? new HyperLogLogDistinct(14, this.config.seed)
    this.format = this.config.format === 'auto' ? 'unknown' : this.config.format
    this.detectParser = new AuthLogParser(this.config.year)
    if (this.format !== 'unknown') this.setup(this.format)
  }

  private setup(format: LogFormat): void {
    this.format = format
    const c = (this.config = replayConfig(this.options, format))
    this.keyCode = KEY_CODES[c.key]
    this.authParser = new AuthLogParser(c.year)
    if (c.abuse !== null) {
      const w = c.abuse
      // the rule of AbuseScore.deltaForStatus: exact status, then Nxx, then success (< 400), then default, else 0
      for (let st = 100; st < 600; st++) {
        this.statusWeights[st] =
          w[String(st)] ?? w[`${Math.floor(st / 100)}xx`] ?? (st < 400 ? w.success : undefined) ?? w.default ?? 0
      }
      this.eventWeights = { failed: w.failed ?? 0, invalid: w.invalid ?? 0, accepted: w.accepted ?? 0 }
    }
    this.reference = new ExactReference(
      c.ratePerSecond ?? 0,
      c.burst,
      c.abuse === null ? 0 : c.halfLifeMs,
      c.threshold,
      c.abuseHi,
    )
  }

  /**
   * Replay one line (without its newline). Never throws on content: a line that does not
   * parse is counted and sampled. Decisions are made when the line leaves the reorder
   * buffer (at the latest in {@link Replay.finish}).
   */
  line(text: string): void {
    this.linesRead++
    if (text.length === 0) {
      this.bad(text)
      return
    }
    if (this.format === 'unknown') {
      if (parseAccessLine(text, this.access)) this.setup('access')
      else if (this.detectParser.parse(text, this.auth) !== 'bad') this.setup('auth')
      else {
        this.bad(text)
        return
      }
    }
    if (this.format === 'access') {
      const r = this.access
      if (!parseAccessLine(text, r)) {
        this.bad(text)
        return
      }
      this.linesParsed++
      let key: string
      switch (this.keyCode) {
        case 0:
          key = r.ip
          break
        case 1:
          key = subnetOf(r.ip)
          break
        case 2:
          key = r.path
          break
        case 3:
          key = r.ip + ' ' + r.path
          break
        default:
          key = r.ip + ' ' + r.method
      }
      this.ingest(r.timeMs, key, this.statusWeights[r.status], 1)
    } else {
      const r = this.auth
      const kind = this.authParser.parse(text, r)
      if (kind === 'bad') {
        this.bad(text)
        return
      }
      this.linesParsed++
      if (kind === 'other') {
        this.ingest(r.timeMs, '', 0, 0)
        return
      }
      const key =
        this.keyCode === 0
          ? r.ip
          : this.keyCode === 1
            ? subnetOf(r.ip)
            : this.keyCode === 5
              ? r.user
              : r.ip + ' ' + r.user
      this.events += r.count
      this.ingest(r.timeMs, key, this.eventWeights[r.event as 'failed' | 'invalid' | 'accepted'], r.count)
    }
  }

  private bad(text: string): void {
    this.linesBad++
    if (this.samples.length < 5)
      this.samples.push({ line: this.linesRead, text: text.length > 200 ? text.slice(0, 200) + '…' : text })
  }

  /** Put one parsed line (count 0: a line with no request, which only moves time) in the reorder buffer; replay what is old enough. */
  private ingest(t: number, key: string, weight: number, count: number): void {
    if (!this.started) {
      this.started = true
      this.startMs = t
      this.maxSeenMs = t
    }
    if (t < this.startMs) this.startMs = t
    if (t < this.maxSeenMs) {
      this.outOfOrder++
      if (this.maxSeenMs - t > this.maxBackwardsMs) this.maxBackwardsMs = this.maxSeenMs - t
      if (t < this.nowMs) {
        this.late++
        t = this.nowMs
      }
    } else {
      this.maxSeenMs = t
    }
    if (count > 0 || this.heap.length > 0) this.heap.push({ t, seq: this.seq++, key, weight, count })
    this.drain(this.maxSeenMs - this.config.maxDisorderMs)
    if (this.heap.length === 0 && count === 0) this.advance(t)
  }

  /** Replay the buffered lines with time ≤ `untilMs`, oldest first (ties in input order). */
  private drain(untilMs: number): void {
    const heap = this.heap
    while (heap.length > 0 && heap.peek().t <= untilMs) {
      const e = heap.pop()
      this.advance(e.t)
      for (let i = 0; i < e.count; i++) this.decide(e.key, e.weight)
    }
  }

  private advance(t: number): void {
    if (t <= this.nowMs) return
    const first = this.nowMs === -Infinity
    this.nowMs = t
    this.clock.set(t)
    if (first) this.buildPolicies()
    // the policies' tickers rotate once per whole period of the clock since they last did
    else this.ticker.tick()
  }

  /** The policies, built when the clock first holds log time (their rotation counts from it). */
  private buildPolicies(): void {
    const c = this.config
    const seed = c.seed
    const sketch = resolveSketchOptions({
      levels: c.levels,
      cellsPerLevel: c.cellsPerLevel,
      generations: c.generations,
      periodMs: c.periodMs,
      hasher: seed === undefined ? undefined : sipHash(seed),
      // a master seed for the Rotators' generation seeds, so that a seeded replay repeats exactly
      store: seed === undefined ? undefined : (spec) => localStore()({ ...spec, sketch: { ...spec.sketch, seed } }),
      clock: this.clock,
      ticker: this.ticker,
    })
    this.generations = sketch.generations
    if (c.ratePerSecond !== null)
      this.rate = new DebtMeter({ rate: c.ratePerSecond, burst: c.burst }, sketch, 'replay:rate')
    if (c.abuse !== null)
      this.abuse = new AbuseScore(
        { threshold: c.threshold, halfLifeMs: c.halfLifeMs, maxScore: c.abuseHi },
        sketch,
        'replay:abuse',
      )
  }

  private decide(key: string, weight: number): void {
    const now = this.nowMs
    this.distinct.add(key)
    let ok = true
    const abuse = this.abuse
    // in-process stores answer synchronously: the verdicts are values, not Promises
    if (abuse !== undefined && !(abuse.check(key) as AbuseVerdict).admitted) ok = false
    if (ok && this.rate !== undefined) ok = (this.rate.consume(key) as DebtVerdict).admitted
    if (ok && abuse !== undefined && weight !== 0) void abuse.record(key, weight)
    const refOk = this.reference.decide(key, weight, now)
    const minute = Math.floor(now / 60_000)
    if (minute !== this.curMinute) {
      this.curMinute = minute
      let bin = this.minutes.get(minute)
      if (bin === undefined) {
        bin = new Float64Array(3)
        this.minutes.set(minute, bin)
      }
      this.curBin = bin
    }
    const bin = this.curBin
    if (ok) {
      this.admitted++
      bin[0]++
    } else {
      this.rejected++
      bin[1]++
      const s = this.throttled.get(key)
      if (s === undefined) this.throttled.set(key, { rejected: 1, startedMs: now, endedMs: now })
      else {
        s.rejected++
        s.endedMs = now
      }
    }
    if (refOk) this.refAdmitted++
    else {
      this.refRejected++
      bin[2]++
      this.refRejectedByKey.set(key, (this.refRejectedByKey.get(key) ?? 0) + 1)
    }
    if (ok !== refOk) this.differing++
  }

  /** Bytes held by the sketch policies' cells (all generations). */
  sketchBytes(): number {
    return (this.rate?.store.sizeBytes() ?? 0) + (this.abuse?.store.sizeBytes() ?? 0)
  }

  /** Replay what is left in the reorder buffer and build the report. */
  finish(): ReplayReport {
    this.drain(Infinity)
    const c = this.config
    const endMs = this.started ? this.maxSeenMs : 0
    const startMs = this.started ? this.startMs : 0
    const top = [...this.throttled]
      .sort((a, b) => b[1].rejected - a[1].rejected || a[1].startedMs - b[1].startedMs || (a[0] < b[0] ? -1 : 1))
      .slice(0, c.top)
      .map(([key, s]) => ({
        key,
        rejected: s.rejected,
        requests: this.reference?.requests(key) ?? 0,
        referenceRejected: this.refRejectedByKey.get(key) ?? 0,
        startedMs: s.startedMs,
        endedMs: s.endedMs,
      }))
    const refKeys = new Set(this.refRejectedByKey.keys())
    const onlySketch = [...this.throttled.keys()].filter((k) => !refKeys.has(k)).sort()
    const onlyReference = [...refKeys].filter((k) => !this.throttled.has(k)).sort()
    let binMs = c.binMs
    const span = endMs - startMs
    if (binMs === 0) binMs = BINS_MS.find((b) => span / b < 1440) ?? BINS_MS[BINS_MS.length - 1]
    const bins = new Map<number, TimelineBin>()
    for (const [minute, v] of this.minutes) {
      const start = Math.floor((minute * 60_000) / binMs) * binMs
      let b = bins.get(start)
      if (b === undefined) {
        b = { startMs: start, admitted: 0, rejected: 0, referenceRejected: 0 }
        bins.set(start, b)
      }
      b.admitted += v[0]
      b.rejected += v[1]
      b.referenceRejected += v[2]
    }
    const policies: string[] = []
    if (c.ratePerSecond !== null) policies.push(`rate ${c.ratePerSecond}/s burst ${c.burst}`)
    if (c.abuse !== null) {
      const w = Object.entries(c.abuse)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')
      policies.push(`abuse ${w} threshold ${c.threshold} half-life ${formatDuration(c.halfLifeMs)}`)
    }
    return {
      input: {
        format: this.format,
        linesRead: this.linesRead,
        linesParsed: this.linesParsed,
        linesUnparseable: this.linesBad,
        unparseableSamples: this.samples.slice(),
        events: this.events,
        outOfOrder: this.outOfOrder,
        late: this.late,
        maxBackwardsMs: this.maxBackwardsMs,
      },
      span: {
        startMs,
        endMs,
        durationMs: span,
        start: this.started ? new Date(startMs).toISOString() : '',
        end: this.started ? new Date(endMs).toISOString() : '',
      },
      config: c,
      totals: { requests: this.admitted + this.rejected, admitted: this.admitted, rejected: this.rejected },
      distinctKeys: {
        count: this.distinct.estimate(),
        method: this.distinct.method,
        relativeStandardError: this.distinct.relativeStandardError,
        exact: this.reference?.size ?? 0,
      },
      throttled: { distinctKeys: this.throttled.size, top },
      sketch: {
        policies,
        levels: c.levels,
        cellsPerLevel: c.cellsPerLevel,
        generations: this.generations,
        periodsMs: { rate: this.rate?.periodMs, abuse: this.abuse?.periodMs },
        sizeBytes: this.sketchBytes(),
        rotations: Math.floor(span / (this.rate?.periodMs ?? this.abuse?.periodMs ?? Infinity)),
      },
      reference: {
        admitted: this.refAdmitted,
        rejected: this.refRejected,
        decisionsDiffering: this.differing,
        distinctKeysThrottled: refKeys.size,
        onlySketch: onlySketch.slice(0, 20),
        onlySketchCount: onlySketch.length,
        onlyReference: onlyReference.slice(0, 20),
        onlyReferenceCount: onlyReference.length,
      },
      timeline: { binMs, bins: [...bins.values()].sort((a, b) => a.startMs - b.startMs) },
    }
  }

  /** Release the policies' stores. */
  close(): void {
    void this.rate?.store.close()
    void this.abuse?.store.close()
  }
}

interface Pending {
  t: number
  seq: number
  key: string
  weight: number
  count: number
}

/** A binary min-heap of pending lines ordered by (time, input order). */
class MinHeap {
  private readonly items: Pending[] = []
  get length(): number {
    return this.items.length
  }
  peek(): Pending {
    return this.items[0]
  }
  push(p: Pending): void {
    const a = this.items
    let i = a.length
    a.push(p)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!less(p, a[parent])) break
      a[i] = a[parent]
      i = parent
    }
    a[i] = p
  }
  pop(): Pending {
    const a = this.items
    const top = a[0]
    const last = a.pop()!
    if (a.length > 0) {
      let i = 0
      const n = a.length
      for (;;) {
        const l = 2 * i + 1
        if (l >= n) break
        const r = l + 1
        const c = r < n && less(a[r], a[l]) ? r : l
        if (!less(a[c], last)) break
        a[i] = a[c]
        i = c
      }
      a[i] = last
    }
    return top
  }
}

function less(a: Pending, b: Pending): boolean {
  return a.t < b.t || (a.t === b.t && a.seq < b.seq)
}
