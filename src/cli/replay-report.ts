import type { LogFormat, ReplayConfig } from './replay-config.js'
import { formatDuration } from './units.js'

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

/**
 * One point of a policy's sizes over time: the shape of each generation after a rotation (or
 * at the start), with the load measured over the generation that just ended and what the
 * capacity model (spec/sizing.md) predicts for the deciding generation at that load.
 */
export interface GenerationSizes {
  /** Log time of the rotation (the first point: of the first request), ms since the epoch. */
  atMs: number
  /** Rotations completed (0 at the start). */
  rotation: number
  /** Present (true) on a point taken at an early growth: a load jump grew the generations before the rotation (in process by folding, spec/rotator.md). */
  early?: true
  /** Cells per level of each generation, oldest (the one that decides) first. */
  cellsPerLevel: number[]
  /**
   * The load since the previous point: admitted requests per second (rate) or the sum of the
   * positive score deltas per second (abuse), all keys; 0 at the start.
   */
  loadPerSecond: number
  /** Distinct keys the policy refused since the previous point: the model's hot keys. */
  hotKeys: number
  /**
   * ρ of the deciding generation at that load: admitted cost per second / (M × rate) for the
   * debt meter (`debtMeterLoadFactor`), the mean background of a cell ν·w / (M·λ) for the abuse
   * score (`scoreBackground`).
   */
  loadFactor: number
  /** The predicted false-reject (rate) or false-block (abuse) rate of a fresh key in the deciding generation at that load (`sketchFalsePositiveRate`, `abuseFalseBlockRate`). */
  predictedFalseRejectRate: number
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
    /** Cells per level of the first generations: the fixed shape, or the budget's largest when self-sized. */
    cellsPerLevel: number
    /** Whether the policies size their generations from the load (no `--cells`). */
    selfSized: boolean
    /** The memory budget of each policy in bytes, when one applies (self-sized, or given beside `--cells`). */
    memoryBytes?: number
    generations: number
    /** Bytes held by the policies' stores at the end (cells of all generations and the load meters). */
    sizeBytes: number
    /** Per policy, its sizes over time: a point at the start and one at every rotation. */
    sizes: { rate?: GenerationSizes[]; abuse?: GenerationSizes[] }
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

const MINUTE_MS = 60_000
/** Round bin widths the timeline picks from (ms): 1, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, 1, 7 days. */
const BINS_MS = [1, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 10_080].map((m) => m * MINUTE_MS)
/** The most bars the auto bin draws: the chart is 888 px wide, so a bar stays ≥ 2 px. */
export const MAX_AUTO_BINS = 400
/** The share of non-empty bins the auto bin asks for: most of them (three quarters). */
export const MIN_FILLED_SHARE = 0.75

/**
 * The timeline's automatic bin width: the smallest round width ({@link BINS_MS}) at which
 * the span holds at most {@link MAX_AUTO_BINS} bins and at least {@link MIN_FILLED_SHARE} of the bins between
 * the first and the last request are non-empty, so traffic that arrives in bursts (a cron
 * at minute :05 of every hour) draws as a series of bars, not a sparse comb. When no width
 * reaches half, the width with the largest non-empty share (the smallest on a tie).
 * @param minutes the minutes holding at least one request (ms since the epoch / 60000)
 * @returns a width in ms, a multiple of 60000
 */
export function autoBinMs(minutes: Iterable<number>): number {
  const list = [...minutes]
  if (list.length === 0) return MINUTE_MS
  let lo = Infinity
  let hi = -Infinity
  for (const m of list) {
    if (m < lo) lo = m
    if (m > hi) hi = m
  }
  let best = BINS_MS[BINS_MS.length - 1]
  let bestShare = -1
  for (const w of BINS_MS) {
    const wm = w / MINUTE_MS
    const span = Math.floor(hi / wm) - Math.floor(lo / wm) + 1
    if (span > MAX_AUTO_BINS) continue
    const share = new Set(list.map((m) => Math.floor(m / wm))).size / span
    if (share >= MIN_FILLED_SHARE) return w
    if (share > bestShare) {
      best = w
      bestShare = share
    }
  }
  return best
}

interface KeyStats {
  rejected: number
  startedMs: number
  endedMs: number
}

/**
 * The decision counts of a replay, sketch and reference side by side, and the report
 * sections built from them: totals, throttled keys, the comparison with the reference, the
 * timeline. Requests are binned by minute as they come; {@link ReplayTally.timeline} groups
 * the minutes into the report's bins.
 */
export class ReplayTally {
  private admitted = 0
  private rejected = 0
  private refAdmitted = 0
  private refRejected = 0
  private differing = 0
  private readonly throttledKeys = new Map<string, KeyStats>()
  private readonly refRejectedByKey = new Map<string, number>()
  private readonly minutes = new Map<number, Float64Array>()
  private curMinute = -1
  private curBin: Float64Array = new Float64Array(3)

  /**
   * Count one request.
   * @param nowMs its time, ms since the epoch (non-decreasing across calls)
   * @param key its key
   * @param admitted the sketch policies' decision
   * @param refAdmitted the exact reference's decision
   */
  record(nowMs: number, key: string, admitted: boolean, refAdmitted: boolean): void {
    const minute = Math.floor(nowMs / 60_000)
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
    if (admitted) {
      this.admitted++
      bin[0]++
    } else {
      this.rejected++
      bin[1]++
      const s = this.throttledKeys.get(key)
      if (s === undefined) this.throttledKeys.set(key, { rejected: 1, startedMs: nowMs, endedMs: nowMs })
      else {
        s.rejected++
        s.endedMs = nowMs
      }
    }
    if (refAdmitted) this.refAdmitted++
    else {
      this.refRejected++
      bin[2]++
      this.refRejectedByKey.set(key, (this.refRejectedByKey.get(key) ?? 0) + 1)
    }
    if (admitted !== refAdmitted) this.differing++
  }

  /** The report's `totals`. */
  totals(): ReplayReport['totals'] {
    return { requests: this.admitted + this.rejected, admitted: this.admitted, rejected: this.rejected }
  }

  /**
   * The report's `throttled`: the `top` keys by refusals (then earliest first refusal, then key).
   * @param top how many keys to list, ≥ 1
   * @param requestsOf all requests of a key (the reference counts them)
   */
  throttled(top: number, requestsOf: (key: string) => number): ReplayReport['throttled'] {
    const keys = [...this.throttledKeys]
      .sort((a, b) => b[1].rejected - a[1].rejected || a[1].startedMs - b[1].startedMs || (a[0] < b[0] ? -1 : 1))
      .slice(0, top)
      .map(([key, s]) => ({
        key,
        rejected: s.rejected,
        requests: requestsOf(key),
        referenceRejected: this.refRejectedByKey.get(key) ?? 0,
        startedMs: s.startedMs,
        endedMs: s.endedMs,
      }))
    return { distinctKeys: this.throttledKeys.size, top: keys }
  }

  /** The report's `reference`: the reference's counts and the keys only one side throttled (20 of each). */
  reference(): ReplayReport['reference'] {
    const refKeys = new Set(this.refRejectedByKey.keys())
    const onlySketch = [...this.throttledKeys.keys()].filter((k) => !refKeys.has(k)).sort()
    const onlyReference = [...refKeys].filter((k) => !this.throttledKeys.has(k)).sort()
    return {
      admitted: this.refAdmitted,
      rejected: this.refRejected,
      decisionsDiffering: this.differing,
      distinctKeysThrottled: refKeys.size,
      onlySketch: onlySketch.slice(0, 20),
      onlySketchCount: onlySketch.length,
      onlyReference: onlyReference.slice(0, 20),
      onlyReferenceCount: onlyReference.length,
    }
  }

  /**
   * The report's `timeline`; empty bins are omitted.
   * @param binMs bin width in ms, a multiple of 60000; 0 picks one from the data ({@link autoBinMs})
   */
  timeline(binMs: number): ReplayReport['timeline'] {
    if (binMs === 0) binMs = autoBinMs(this.minutes.keys())
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
    return { binMs, bins: [...bins.values()].sort((a, b) => a.startMs - b.startMs) }
  }
}

/**
 * The report's one-line description of each policy of a config (`rate 1/s burst 20`,
 * `abuse 404=1 threshold 5 half-life 10 min`).
 */
export function policyLabels(c: ReplayConfig): string[] {
  const policies: string[] = []
  if (c.ratePerSecond !== null) policies.push(`rate ${c.ratePerSecond}/s burst ${c.burst}`)
  if (c.abuse !== null) {
    const w = Object.entries(c.abuse)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')
    policies.push(`abuse ${w} threshold ${c.threshold} half-life ${formatDuration(c.halfLifeMs)}`)
  }
  return policies
}

/** The most points of a policy's sizes the text and HTML reports list (`--json` has them all). */
export const MAX_SIZE_ROWS = 12

/**
 * The points of a policy's sizes the text and HTML reports list: the first, every point
 * whose shapes differ from the point before (a resize reaching a generation), and the last,
 * at most {@link MAX_SIZE_ROWS} (the first ones, then the last); `--json` keeps every point.
 * @param points the policy's sizes, oldest first
 * @returns the points to list and how many were left out
 */
export function sizeRows(points: readonly GenerationSizes[]): { rows: GenerationSizes[]; omitted: number } {
  const rows: GenerationSizes[] = []
  for (let i = 0; i < points.length; i++) {
    const p = points[i]
    const prev = points[i - 1]
    const changed = prev === undefined || p.cellsPerLevel.some((c, g) => c !== prev.cellsPerLevel[g])
    if (changed || i === points.length - 1) rows.push(p)
  }
  if (rows.length <= MAX_SIZE_ROWS) return { rows, omitted: points.length - rows.length }
  const kept = [...rows.slice(0, MAX_SIZE_ROWS - 1), rows[rows.length - 1]]
  return { rows: kept, omitted: points.length - kept.length }
}

/**
 * The report's one-line account of the sketches' memory and shape: `8.0 MiB at the end; each
 * policy self-sized within 10.0 MiB (4 levels × 64–65,536 cells × 16 B × 2 generations and half
 * of one for a growth's fold)`, or
 * for a fixed shape `512.0 KiB (1 × 2 generations × 4 levels × 4,096 cells × 16 B)`.
 * @param s the report's `sketch`
 * @param bytes formats bytes (`formatBytes`)
 * @param num formats a count
 */
export function sketchMemoryText(
  s: ReplayReport['sketch'],
  bytes: (n: number) => string,
  num: (n: number) => string,
): string {
  if (!s.selfSized)
    return `${bytes(s.sizeBytes)} (${s.policies.length} × ${s.generations} generations × ${s.levels} levels × ${num(s.cellsPerLevel)} cells × 16 B)`
  const all = [...(s.sizes.rate ?? []), ...(s.sizes.abuse ?? [])].flatMap((p) => p.cellsPerLevel)
  const lo = Math.min(s.cellsPerLevel, ...all)
  const range = lo === s.cellsPerLevel ? num(lo) : `${num(lo)}–${num(s.cellsPerLevel)}`
  return `${bytes(s.sizeBytes)} at the end; each policy self-sized within ${bytes(s.memoryBytes ?? 0)} (${s.levels} levels × ${range} cells × 16 B × ${s.generations} generations and half of one for a growth's fold)`
}
