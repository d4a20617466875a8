import { DebtMeter, debtMeterLoad, type DebtVerdict } from '../limit/debt-meter.js'
import { AbuseScore, abuseModelWeight, abuseScoreLoad } from '../limit/abuse-score.js'
import { resolveSketchOptions } from '../limit/options.js'
import { telemetryMaxBytes } from '../limit/telemetry.js'
import {
  abuseFalseBlockRate,
  debtMeterLoadFactor,
  measuredClustering,
  requestsPerKeyOf,
  scoreBackground,
  sketchFalsePositiveRate,
} from '../sketch/sizing.js'
import { localStore } from '../limit/store.js'
import ipaddr from 'ipaddr.js'
import { normalizeIp } from '../http/client-key.js'
import { sipHash } from '../hash/hasher.js'
import { ManualClock } from '../clock.js'
import { LogTimeTicker } from './log-time-ticker.js'
import { AddressKeys } from './address-keys.js'
import { accessRecord, parseAccessBytes, parseAccessLine, type AccessRecord } from './access-log.js'
import { AuthLogParser, authRecord, type AuthRecord } from './auth-log.js'
import { HyperLogLogDistinct, type DistinctCounter } from './distinct.js'
import { ExactReference } from './reference.js'
import { ReorderBuffer, type ReorderSink } from './reorder-buffer.js'
import { replayConfig, type KeyKind, type LogFormat, type ReplayConfig, type ReplayOptions } from './replay-config.js'
import { policyLabels, ReplayTally, type ReplayReport } from './replay-report.js'
import { SizeHistory } from './size-history.js'

const KEY_CODES: Record<KeyKind, number> = {
  ip: 0,
  ip24: 1,
  route: 2,
  'ip+route': 3,
  'ip+method': 4,
  user: 5,
  'ip+user': 6,
}

/** Outcome codes of auth events, indexes of the replay's weight table. */
const AUTH_EVENTS = { failed: 0, invalid: 1, accepted: 2 } as const

/**
 * The key of a client address, as the adapters key it: {@link normalizeIp} (IPv4 as is,
 * IPv4-mapped IPv6 as its IPv4, IPv6 by its /64 written `network/64`, port and zone
 * dropped; anything else unchanged). With `ip24` an IPv4 address is grouped by its /24
 * (`a.b.c.0/24`).
 * @internal
 */
export function addressKey(ip: string, kind: 'ip' | 'ip24'): string {
  const n = normalizeIp(ip)
  if (kind === 'ip' || !ipaddr.IPv4.isValidFourPartDecimal(n)) return n
  return n.slice(0, n.lastIndexOf('.')) + '.0/24'
}

/**
 * Replays a log through grudge's policies on a manual clock set from each line's time, beside
 * an {@link ExactReference}, and builds a {@link ReplayReport}. Feed it lines with
 * {@link Replay.line}, then call {@link Replay.finish}. Pure: no I/O, no wall clock.
 *
 * Policies: the adapters' own {@link DebtMeter} and {@link AbuseScore} (in-process stores:
 * Rotators of Min Sketches), with their defaults, in the order the adapters run them:
 * - abuse score: exponential decay with `halfLifeMs`, ceiling 4 × threshold; a request is
 *   refused iff the key's score is ≥ threshold; an admitted request adds the weight of its
 *   outcome (status, weighed by {@link AbuseScore.deltaForStatus}, or auth event). Refused
 *   requests add nothing: with the limiter on, they would not have reached the application.
 * - debt meter: drains at `ratePerSecond`; a request of cost 1 is admitted iff
 *   `debt + 1 ≤ burst`.
 *
 * Keys: addresses are keyed as the adapters key them ({@link addressKey}).
 *
 * Time: lines go through a {@link ReorderBuffer} (see {@link ReplayOptions.maxDisorderMs});
 * the policies' clock is each replayed line's time, and their rotations follow that clock.
 */
export class Replay {
  /** The configuration; its `format` is fixed once the first line parses. */
  config: ReplayConfig
  private readonly options: ReplayOptions
  private format: LogFormat | 'unknown'
  private readonly clock = new ManualClock(0)
  private readonly ticker = new LogTimeTicker(this.clock)
  private generations = 0
  private rate: DebtMeter | undefined
  private abuse: AbuseScore | undefined
  private rateSizes: SizeHistory | undefined
  private abuseSizes: SizeHistory | undefined
  /** The policies' largest (first) cells per level and budget, once built. */
  private shape = { cellsPerLevel: 0, memoryBytes: undefined as number | undefined, selfSized: false }
  private reference!: ExactReference
  private readonly distinct: DistinctCounter
  private readonly access: AccessRecord = accessRecord()
  private readonly auth: AuthRecord = authRecord()
  /**
   * An access log keyed by address (`ip`, `ip24`): the key of each line's address, looked up
   * by its bytes (no string per line, the key normalized once per address). Each key is
   * added to the distinct counter when first seen there (adding it again would change
   * nothing), and its id finds its row in the reference.
   */
  private addresses: AddressKeys | undefined
  private authParser!: AuthLogParser
  private detectParser: AuthLogParser
  /** Abuse weight by outcome: a status (access logs) or an {@link AUTH_EVENTS} code; filled when the policies are built. */
  private readonly weights = new Float64Array(600)
  private keyCode = 0
  private nowMs = -Infinity
  private linesRead = 0
  private linesParsed = 0
  private linesBad = 0
  private readonly samples: { line: number; text: string }[] = []
  private events = 0
  private readonly buffer: ReorderBuffer
  private readonly tally = new ReplayTally()

  /**
   * @param options see {@link ReplayOptions}
   * @param distinct the distinct-key counter (default a HyperLogLog of precision 14)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
   */
  constructor(options: ReplayOptions = {}, distinct?: DistinctCounter) {
    this.options = options
    this.config = replayConfig(options)
    const sink: ReorderSink = {
      advance: (t) => this.advance(t),
      decide: (key, outcome, id) => this.decide(key, outcome, id),
    }
    this.buffer = new ReorderBuffer(this.config.maxDisorderMs, sink)
    this.distinct = distinct ?? new HyperLogLogDistinct(14, this.config.seed)
    this.format = this.config.format === 'auto' ? 'unknown' : this.config.format
    this.detectParser = new AuthLogParser(this.config.year)
    if (this.format !== 'unknown') this.setup(this.format)
  }

  private setup(format: LogFormat): void {
    this.format = format
    const c = (this.config = replayConfig(this.options, format))
    this.keyCode = KEY_CODES[c.key]
    if (format === 'access' && this.keyCode <= 1) {
      const kind = this.keyCode === 0 ? 'ip' : 'ip24'
      this.addresses = new AddressKeys(
        (ip) => addressKey(ip, kind),
        (key) => this.distinct.add(key),
      )
    }
    this.authParser = new AuthLogParser(c.year)
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
      if (!parseAccessLine(text, this.access)) {
        this.bad(text)
        return
      }
      this.accessLine()
    } else {
      const r = this.auth
      const kind = this.authParser.parse(text, r)
      if (kind === 'bad') {
        this.bad(text)
        return
      }
      this.linesParsed++
      if (kind === 'other') {
        this.buffer.add(r.timeMs, '', 0, 0)
        return
      }
      const key =
        this.keyCode === 0
          ? addressKey(r.ip, 'ip')
          : this.keyCode === 1
            ? addressKey(r.ip, 'ip24')
            : this.keyCode === 5
              ? r.user
              : addressKey(r.ip, 'ip') + ' ' + r.user
      this.events += r.count
      this.buffer.add(r.timeMs, key, AUTH_EVENTS[r.event as keyof typeof AUTH_EVENTS], r.count)
    }
  }

  /**
   * Replay one line given as its UTF-8 bytes `b[start..end)` (what `feedLines` hands over):
   * an access log is parsed from the bytes, with no string per line; anything else is
   * decoded and goes to {@link Replay.line}.
   * @internal
   */
  lineBytes(b: Buffer, start: number, end: number): void {
    if (this.format !== 'access' || end === start) return this.line(b.toString('utf8', start, end))
    this.linesRead++
    const addresses = this.addresses
    const ipEnd = parseAccessBytes(b, start, end, this.access, this.keyCode >= 2, addresses === undefined)
    if (ipEnd < 0) this.bad(b.toString('utf8', start, end))
    else if (addresses === undefined) this.accessLine()
    else {
      this.linesParsed++
      const id = addresses.idOf(b, start, ipEnd)
      this.buffer.add(this.access.timeMs, addresses.keys[id], this.access.status, 1, id)
    }
  }

  /** Buffer the access-log line just parsed into `this.access`. */
  private accessLine(): void {
    const r = this.access
    this.linesParsed++
    let key: string
    switch (this.keyCode) {
      case 0:
        key = addressKey(r.ip, 'ip')
        break
      case 1:
        key = addressKey(r.ip, 'ip24')
        break
      case 2:
        key = r.path
        break
      case 3:
        key = addressKey(r.ip, 'ip') + ' ' + r.path
        break
      default:
        key = addressKey(r.ip, 'ip') + ' ' + r.method
    }
    this.buffer.add(r.timeMs, key, r.status, 1)
  }

  private bad(text: string): void {
    this.linesBad++
    if (this.samples.length < 5)
      this.samples.push({ line: this.linesRead, text: text.length > 200 ? text.slice(0, 200) + '…' : text })
  }

  /** Log time moved forward (called by the reorder buffer). */
  private advance(t: number): void {
    const first = this.nowMs === -Infinity
    this.nowMs = t
    this.clock.set(t)
    if (first) this.buildPolicies(t)
    else {
      // the policies' timers fire as their periods pass in log time: a fixed shape rotates,
      // a self-sized one checks its load (every min(1 s, period / 4)) and rotates when due
      this.ticker.advance()
      this.rateSizes?.check(t)
      this.abuseSizes?.check(t)
    }
  }

  /**
   * The policies, built when the clock first holds log time (their rotation counts from it),
   * sized as an adapter sizes them: by `memoryBytes` (the default budget when absent) with a
   * default telemetry's bytes held inside it, or fixed by `cellsPerLevel`.
   * @param nowMs the first log time
   */
  private buildPolicies(nowMs: number): void {
    const c = this.config
    const seed = c.seed
    const sketch = resolveSketchOptions(
      {
        levels: c.levels,
        cellsPerLevel: c.cellsPerLevel,
        memory: c.memoryBytes,
        generations: c.generations,
        periodMs: c.periodMs,
        hasher: seed === undefined ? undefined : sipHash(seed),
        // a master seed for the Rotators' generation seeds, so that a seeded replay repeats exactly
        store: seed === undefined ? undefined : (spec) => localStore()({ ...spec, sketch: { ...spec.sketch, seed } }),
        clock: this.clock,
        ticker: this.ticker,
      },
      '',
      telemetryMaxBytes(),
    )
    this.generations = sketch.generations
    this.shape = { cellsPerLevel: sketch.cellsPerLevel, memoryBytes: sketch.memoryBytes, selfSized: !sketch.fixedShape }
    const L = sketch.levels
    if (c.ratePerSecond !== null) {
      const meter = new DebtMeter({ rate: c.ratePerSecond, burst: c.burst }, sketch, 'replay:rate')
      this.rate = meter
      this.rateSizes = new SizeHistory(
        meter.store,
        {
          loadFactor: (M, perSecond) => debtMeterLoadFactor(M, perSecond / meter.cost, meter.rate, meter.cost, 0),
          // B as the Limiter's stats() reads it (spec/sizing.md §2.6, §7): the window's admitted
          // cost over its distinct keys, lumped (the log's spacing is not measured), the first
          // request's figure standing in for all requests (measuredClustering)
          predict: (M, perSecond, hotKeys, window) =>
            sketchFalsePositiveRate(
              { levels: L, cellsPerLevel: M },
              debtMeterLoad(
                meter,
                sketch.generations,
                perSecond,
                hotKeys,
                measuredClustering(requestsPerKeyOf(window.amount, window.distinctKeys, meter.cost)),
              ),
            ),
        },
        nowMs,
      )
    }
    const w = c.abuse
    if (w !== null) {
      const auth = [w.failed ?? 0, w.invalid ?? 0, w.accepted ?? 0]
      const abuse = new AbuseScore(
        // statuses are weighed by the policy itself; auth events are the replay's own outcomes,
        // which the policy never weighs: their heaviest is its one weight, so that its sizer's
        // event weight (abuseModelWeight) is the log's
        {
          threshold: c.threshold,
          halfLifeMs: c.halfLifeMs,
          maxScore: c.abuseHi,
          weights: this.format === 'access' ? w : { default: abuseModelWeight(auth) },
        },
        sketch,
        'replay:abuse',
      )
      this.abuse = abuse
      if (this.format === 'access') for (let st = 100; st < 600; st++) this.weights[st] = abuse.deltaForStatus(st)
      else {
        this.weights[AUTH_EVENTS.failed] = auth[0]
        this.weights[AUTH_EVENTS.invalid] = auth[1]
        this.weights[AUTH_EVENTS.accepted] = auth[2]
      }
      const model = {
        threshold: abuse.threshold,
        halfLifeMs: abuse.halfLifeMs,
        maxScore: abuse.maxScore,
        weight: abuseModelWeight(this.format === 'access' ? Object.values(w) : auth),
      }
      this.abuseSizes = new SizeHistory(
        abuse.store,
        {
          loadFactor: (M, perSecond) => scoreBackground(M, abuseScoreLoad(model, perSecond)),
          predict: (M, perSecond, hotKeys) =>
            abuseFalseBlockRate(
              { levels: L, cellsPerLevel: M },
              abuseScoreLoad(model, perSecond, hotKeys),
              abuse.threshold,
            ),
        },
        nowMs,
      )
    }
  }

  /**
   * Decide one request at the time last advanced to (called by the reorder buffer).
   * @param outcome a status (access logs) or an auth event code
   * @param id the key's id in `addresses` (its distinct count is then already taken), or −1
   */
  private decide(key: string, outcome: number, id: number): void {
    const now = this.nowMs
    const weight = this.weights[outcome]
    if (id < 0) this.distinct.add(key)
    let ok = true
    const abuse = this.abuse
    // in-process stores answer synchronously: the scores and verdicts are values, not
    // Promises. The abuse rule read as AbuseScore.check states it (blocked iff score ≥
    // threshold) from the score itself, and the debt meter charged as the Limiter charges it
    // (one reused verdict): no verdict object and closure per request, which were a third of
    // the replay's allocation (sampling heap profile, 500k lines with --abuse)
    if (abuse !== undefined && (abuse.store.read(key) as number) >= abuse.threshold) {
      ok = false
      this.abuseSizes!.refused(key)
    }
    if (ok && this.rate !== undefined) {
      this.rateSizes!.seen(key)
      ok = (this.rate.charge(key) as DebtVerdict).admitted
      if (ok) this.rateSizes!.admitted(this.rate.cost)
      else this.rateSizes!.refused(key)
    }
    if (ok && abuse !== undefined && weight !== 0) {
      void abuse.record(key, weight)
      if (weight > 0) this.abuseSizes!.admitted(weight)
    }
    this.tally.record(now, key, ok, this.reference.decide(key, weight, now, id))
  }

  /** Bytes held by the sketch policies' cells (all generations). */
  sketchBytes(): number {
    return (this.rate?.store.sizeBytes() ?? 0) + (this.abuse?.store.sizeBytes() ?? 0)
  }

  /** Replay what is left in the reorder buffer and build the report. */
  finish(): ReplayReport {
    const buf = this.buffer
    buf.flush()
    const c = this.config
    const endMs = buf.started ? buf.maxSeenMs : 0
    const startMs = buf.started ? buf.startMs : 0
    const span = endMs - startMs
    return {
      input: {
        format: this.format,
        linesRead: this.linesRead,
        linesParsed: this.linesParsed,
        linesUnparseable: this.linesBad,
        unparseableSamples: this.samples.slice(),
        events: this.events,
        outOfOrder: buf.outOfOrder,
        late: buf.late,
        maxBackwardsMs: buf.maxBackwardsMs,
      },
      span: {
        startMs,
        endMs,
        durationMs: span,
        start: buf.started ? new Date(startMs).toISOString() : '',
        end: buf.started ? new Date(endMs).toISOString() : '',
      },
      config: c,
      totals: this.tally.totals(),
      distinctKeys: {
        count: this.distinct.estimate(),
        method: this.distinct.method,
        relativeStandardError: this.distinct.relativeStandardError,
        exact: this.reference?.size ?? 0,
      },
      throttled: this.tally.throttled(c.top, (key) => this.reference?.requests(key) ?? 0),
      sketch: {
        policies: policyLabels(c),
        levels: c.levels,
        cellsPerLevel: this.shape.cellsPerLevel,
        selfSized: this.shape.selfSized,
        ...(this.shape.memoryBytes === undefined ? {} : { memoryBytes: this.shape.memoryBytes }),
        generations: this.generations,
        periodsMs: { rate: this.rate?.periodMs, abuse: this.abuse?.periodMs },
        sizeBytes: this.sketchBytes(),
        // the first policy's store counts them (a self-sized one rotates once per check after a gap)
        rotations:
          (this.rateSizes ?? this.abuseSizes)?.rotations ??
          Math.floor(span / (this.rate?.periodMs ?? this.abuse?.periodMs ?? Infinity)),
        sizes: {
          ...(this.rateSizes === undefined ? {} : { rate: this.rateSizes.points }),
          ...(this.abuseSizes === undefined ? {} : { abuse: this.abuseSizes.points }),
        },
      },
      reference: this.tally.reference(),
      timeline: this.tally.timeline(c.binMs),
    }
  }

  /** Release the policies' stores. */
  close(): void {
    void this.rate?.store.close()
    void this.abuse?.store.close()
  }
}
