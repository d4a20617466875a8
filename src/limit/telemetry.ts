import type { Clock } from '../clock.js'
import { invalidOption } from '../errors.js'
import { HyperLogLog } from '../window/hyperloglog.js'
import { Window } from '../window/window.js'
import { sketchFalsePositiveRate } from '../sketch/sizing.js'
import type { PolicyName } from './decision.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Counts of one policy. */
export interface PolicyCounts {
  /** Requests this policy checked and let through in the window (a count, ≥ 0). */
  admitted: number
  /** Requests this policy denied in the window (a count, ≥ 0). */
  rejected: number
}

/** What {@link Telemetry.stats} returns. */
export interface LimiterStats {
  /** Length in ms of the window the counts cover (the last `windowBuckets` buckets, the current one partial). */
  windowMs: number
  /** Requests that reached the limiter. */
  requests: number
  /** Requests admitted by every policy. */
  admitted: number
  /** Requests rejected by any policy. */
  rejected: number
  /** Per policy: admitted (checked and passed) and rejected. */
  policies: Record<PolicyName, PolicyCounts>
  /** Estimated distinct keys in the window (a Window of HyperLogLog sketches, precision 14: ≈ 0.81 % standard error). */
  distinctKeys: number
  /** Memory of the sketches (all generations) and of the telemetry, in bytes. */
  memoryBytes: number
  /** Estimated false-positive rate of one sketch: sketchFalsePositiveRate(levels, cellsPerLevel, distinctKeys). */
  falsePositiveRate: number
  /** The target that triggers the one-time warning. */
  targetFalsePositiveRate: number
  /** Sizes that would bring the estimate to the target at the current distinct keys (see {@link suggestSize}). */
  suggested: {
    /** L, levels: the configured levels of the sketch (kept as is; only M is resized). */
    levels: number
    /** M, cells per level needed at `levels` levels; at least 16. */
    cellsPerLevel: number
  }
}

/** Options of {@link Telemetry}. */
export interface TelemetryOptions {
  /** Time source in ms. */
  clock: Clock
  /** Bucket length in ms; default 60 000. */
  bucketMs?: number
  /** Buckets kept (the window is bucketMs × windowBuckets); integer in [1, 60]; default 5. */
  windowBuckets?: number
  /** Estimated false-positive rate above which one warning is logged; in (0, 1), default 0.01. */
  targetFalsePositiveRate?: number
  /** Receives the one-time warning (the framework logger's warn). */
  warn?: (message: string) => void
}

/** The option names of {@link TelemetryOptions}; any other key is refused. */
export const TELEMETRY_OPTION_KEYS = optionKeys<TelemetryOptions>({
  clock: true,
  bucketMs: true,
  windowBuckets: true,
  targetFalsePositiveRate: true,
  warn: true,
})

const POLICIES: PolicyName[] = ['limit', 'fairness', 'abuse', 'bloom', 'store']
/** HyperLogLog precision of the distinct-key window: 2^14 one-byte registers per slot. */
const HLL_PRECISION = 14

interface Bucket {
  startMs: number
  requests: number
  admitted: number
  rejected: number
  counts: Record<PolicyName, PolicyCounts>
}

function emptyCounts(): Record<PolicyName, PolicyCounts> {
  const c = {} as Record<PolicyName, PolicyCounts>
  for (const p of POLICIES) c[p] = { admitted: 0, rejected: 0 }
  return c
}

/**
 * Windowed counters of a limiter: requests, admitted/rejected per policy and distinct keys
 * over the last few minutes, in a ring of per-minute buckets (no timers: buckets roll over
 * when the clock says so). Distinct keys come from a {@link Window} of HyperLogLog sketches
 * (Flajolet et al. 2007) over the same slots, merged when read.
 */
export class Telemetry {
  /** Length of one bucket in ms (finite, > 0; default 60 000). */
  readonly bucketMs: number
  /** Buckets kept: the window covers `bucketMs × windowBuckets` ms; integer in [1, 60], default 5. */
  readonly windowBuckets: number
  /** False-positive rate in (0, 1) above which one warning is logged; default 0.01. */
  readonly targetFalsePositiveRate: number
  /** The clock of the buckets (ms). @internal */
  readonly clock: Clock
  private readonly warnFn: ((message: string) => void) | undefined
  private readonly buckets: Bucket[] = []
  private readonly distinct: Window<HyperLogLog>
  private warned = false
  /** The time of the last bucket lookup (ms). */
  private nowMs = 0
  /** The bucket of the request being decided. */
  private cur: Bucket | undefined
  private sinceCheck = 0
  /** A new bucket started since the last health check (checked once per bucket at least). */
  private rolled = false
  /** Sketch shapes to report on: levels and cellsPerLevel of the policies' sketches, and their memory. */
  private readonly shapes: { levels: number; cellsPerLevel: number; sizeBytes: () => number }[] = []

  /**
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option, also a key that is
   * not an option of {@link TelemetryOptions}
   */
  constructor(options: TelemetryOptions) {
    checkKnownOptions(options, TELEMETRY_OPTION_KEYS)
    this.clock = options.clock
    const b = options.bucketMs ?? 60_000
    if (typeof b !== 'number' || !Number.isSafeInteger(b) || b <= 0)
      invalidOption('telemetry.bucketMs', 'a positive safe integer (ms)', b)
    this.bucketMs = b
    const n = options.windowBuckets ?? 5
    if (!Number.isInteger(n) || n < 1 || n > 60) invalidOption('telemetry.windowBuckets', 'an integer in [1, 60]', n)
    this.windowBuckets = n
    const t = options.targetFalsePositiveRate ?? 0.01
    if (typeof t !== 'number' || !(t > 0 && t < 1)) invalidOption('targetFalsePositiveRate', 'a number in (0, 1)', t)
    this.targetFalsePositiveRate = t
    this.warnFn = options.warn
    // the same slots as the counters: floor(t / bucketMs), the last windowBuckets of them
    this.distinct = new Window(HyperLogLog.bySize({ precision: HLL_PRECISION }), {
      everyMs: this.bucketMs,
      keep: this.windowBuckets,
      clock: this.clock,
    })
  }

  /** Report on a policy's sketch (its shape and memory). */
  addSketch(levels: number, cellsPerLevel: number, sizeBytes: () => number): void {
    this.shapes.push({ levels, cellsPerLevel, sizeBytes })
  }

  private current(now: number = this.clock.now()): Bucket {
    this.nowMs = now
    const start = Math.floor(now / this.bucketMs) * this.bucketMs
    const last = this.buckets[this.buckets.length - 1]
    if (last !== undefined && last.startMs === start) return last
    const oldest = start - (this.windowBuckets - 1) * this.bucketMs
    while (this.buckets.length > 0 && this.buckets[0].startMs < oldest) this.buckets.shift()
    const bucket: Bucket = {
      startMs: start,
      requests: 0,
      admitted: 0,
      rejected: 0,
      counts: emptyCounts(),
    }
    if (this.buckets.length > 0) this.rolled = true
    this.buckets.push(bucket)
    return bucket
  }

  /** Count a request for `key` (called once per request, before the policies; it also picks the bucket the request's later counts go to, so the clock is read once per request). */
  request(key: string): void {
    this.requestAt(key, this.clock.now())
  }

  /**
   * {@link Telemetry.request} at a time already read from this telemetry's clock (ms), so a
   * caller that has just read it (a limiter pinning the same clock) saves the second read.
   * @internal
   */
  requestAt(key: string, nowMs: number): void {
    const b = this.current(nowMs)
    this.cur = b
    b.requests++
    this.distinct.addAt(this.nowMs, key)
    // the health check merges the HLL slots (~0.25 ms): once per 65 536 requests, not per request
    if (++this.sinceCheck >= 65_536 || this.rolled) {
      this.rolled = false
      this.sinceCheck = 0
      this.checkHealth()
    }
  }

  /** Count a policy's verdict. */
  policy(policy: PolicyName, admitted: boolean): void {
    const c = (this.cur ?? this.current()).counts[policy]
    if (admitted) c.admitted++
    else c.rejected++
  }

  /** Count the request's final outcome. */
  outcome(admitted: boolean): void {
    const b = this.cur ?? this.current()
    if (admitted) b.admitted++
    else b.rejected++
  }

  /** Estimated distinct keys in the window (rounded). */
  distinctKeys(): number {
    this.current()
    return Math.round(this.distinct.estimateAt(this.nowMs))
  }

  /** Memory of the telemetry itself in bytes (the HyperLogLog slots held). */
  sizeBytes(): number {
    return this.distinct.sizeBytes()
  }

  /** The windowed statistics. */
  stats(): LimiterStats {
    this.current()
    const policies = emptyCounts()
    let requests = 0
    let admitted = 0
    let rejected = 0
    for (const b of this.buckets) {
      requests += b.requests
      admitted += b.admitted
      rejected += b.rejected
      for (const p of POLICIES) {
        policies[p].admitted += b.counts[p].admitted
        policies[p].rejected += b.counts[p].rejected
      }
    }
    const distinct = this.distinctKeys()
    let memory = this.sizeBytes()
    for (const s of this.shapes) memory += s.sizeBytes()
    const shape = this.shapes[0] ?? { levels: 4, cellsPerLevel: 2048 }
    const fpr = sketchFalsePositiveRate(shape.levels, shape.cellsPerLevel, distinct)
    return {
      windowMs: this.bucketMs * this.windowBuckets,
      requests,
      admitted,
      rejected,
      policies,
      distinctKeys: distinct,
      memoryBytes: memory,
      falsePositiveRate: fpr,
      targetFalsePositiveRate: this.targetFalsePositiveRate,
      suggested: suggestSize(shape.levels, distinct, this.targetFalsePositiveRate),
    }
  }

  /** Log one warning (once per Telemetry) when the estimated false-positive rate passes the target. */
  checkHealth(): LimiterStats {
    const s = this.stats()
    if (!this.warned && s.falsePositiveRate > this.targetFalsePositiveRate && this.warnFn !== undefined) {
      this.warned = true
      this.warnFn(
        `grudge: estimated false-positive rate ${s.falsePositiveRate.toPrecision(3)} exceeds the target ${this.targetFalsePositiveRate} ` +
          `with ~${s.distinctKeys} distinct keys; suggested cellsPerLevel: ${s.suggested.cellsPerLevel} (levels ${s.suggested.levels})`,
      )
    }
    return s
  }
}

/**
 * The cells per level M that keep sketchFalsePositiveRate(L, M, H) ≤ p at L levels: per level
 * q = p^(1/L) and (1 − 1/M)^H = 1 − q, so M = ⌈1 / (1 − (1 − q)^(1/H))⌉.
 * @param levels L ≥ 1
 * @param distinctKeys H ≥ 0
 * @param target p in (0, 1)
 * @returns `{ levels, cellsPerLevel }`; for `distinctKeys` ≤ 0 (or NaN) the minimum M = 16
 */
export function suggestSize(
  levels: number,
  distinctKeys: number,
  target: number,
): {
  /** L, the levels passed in (unchanged). */
  levels: number
  /** M, cells per level reaching the target at L levels; at least 16 (the sketch's minimum). */
  cellsPerLevel: number
} {
  if (!(distinctKeys > 0)) return { levels, cellsPerLevel: 16 }
  const q = Math.pow(target, 1 / levels)
  const m = Math.ceil(1 / -Math.expm1(Math.log1p(-q) / distinctKeys))
  return { levels, cellsPerLevel: Math.max(16, m) }
}
