import type { Clock } from '../clock.js'
import { invalidOption } from '../errors.js'
import { Murmur3Hasher } from '../hash/hasher.js'
import { keyBytes, keyLength, keyView } from '../hash/key-bytes.js'
import { falsePositiveRate } from '../sketch/sizing.js'
import type { PolicyName } from './decision.js'

/** Counts of one policy. */
export interface PolicyCounts {
  admitted: number
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
  /** Estimated distinct keys in the window (linear counting over a bitmap per bucket). */
  distinctKeys: number
  /** Memory of the sketches (all generations) and of the telemetry, in bytes. */
  memoryBytes: number
  /** Estimated false-positive rate of one sketch: falsePositiveRate(levels, cellsPerLevel, distinctKeys). */
  falsePositiveRate: number
  /** The target that triggers the one-time warning. */
  targetFalsePositiveRate: number
  /** Sizes that would bring the estimate to the target at the current distinct keys. */
  suggested: { levels: number; cellsPerLevel: number }
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

const POLICIES: PolicyName[] = ['limit', 'fairness', 'abuse', 'bloom', 'store']
/** Bits of the distinct-key bitmap per bucket (2^16 bits = 8 KiB): linear counting stays within a few percent up to ~ 4·10^5 keys per bucket. */
const BITMAP_BITS = 1 << 16

interface Bucket {
  startMs: number
  requests: number
  admitted: number
  rejected: number
  counts: Record<PolicyName, PolicyCounts>
  bits: Uint32Array
}

function emptyCounts(): Record<PolicyName, PolicyCounts> {
  const c = {} as Record<PolicyName, PolicyCounts>
  for (const p of POLICIES) c[p] = { admitted: 0, rejected: 0 }
  return c
}

/**
 * Windowed counters of a limiter: requests, admitted/rejected per policy and distinct keys
 * over the last few minutes, in a ring of per-minute buckets (no timers: buckets roll over
 * when the clock says so). Distinct keys use linear counting (Whang, Vander-Zanden &
 * Taylor, "A linear-time probabilistic counting algorithm for database applications",
 * ACM TODS 1990): n ≈ −m·ln(V), V the fraction of zero bits in the union of the buckets'
 * bitmaps.
 */
export class Telemetry {
  readonly bucketMs: number
  readonly windowBuckets: number
  readonly targetFalsePositiveRate: number
  private readonly clock: Clock
  private readonly warnFn: ((message: string) => void) | undefined
  private readonly buckets: Bucket[] = []
  private readonly hasher = new Murmur3Hasher(0x9e3779b9)
  private warned = false
  /** The bucket of the request being decided. */
  private cur: Bucket | undefined
  private sinceCheck = 0
  /** Sketch shapes to report on: levels and cellsPerLevel of the policies' sketches, and their memory. */
  private readonly shapes: { levels: number; cellsPerLevel: number; sizeBytes: () => number }[] = []

  /**
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option
   */
  constructor(options: TelemetryOptions) {
    this.clock = options.clock
    const b = options.bucketMs ?? 60_000
    if (typeof b !== 'number' || !Number.isFinite(b) || b <= 0)
      invalidOption('telemetry.bucketMs', 'a finite number > 0 (ms)', b)
    this.bucketMs = b
    const n = options.windowBuckets ?? 5
    if (!Number.isInteger(n) || n < 1 || n > 60) invalidOption('telemetry.windowBuckets', 'an integer in [1, 60]', n)
    this.windowBuckets = n
    const t = options.targetFalsePositiveRate ?? 0.01
    if (typeof t !== 'number' || !(t > 0 && t < 1)) invalidOption('targetFalsePositiveRate', 'a number in (0, 1)', t)
    this.targetFalsePositiveRate = t
    this.warnFn = options.warn
  }

  /** Report on a policy's sketch (its shape and memory). */
  addSketch(levels: number, cellsPerLevel: number, sizeBytes: () => number): void {
    this.shapes.push({ levels, cellsPerLevel, sizeBytes })
  }

  private current(): Bucket {
    const now = this.clock.now()
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
      bits: new Uint32Array(BITMAP_BITS / 32),
    }
    this.buckets.push(bucket)
    return bucket
  }

  /** Count a request for `key` (called once per request, before the policies; it also picks the bucket the request's later counts go to, so the clock is read once per request). */
  request(key: string): void {
    const b = this.current()
    this.cur = b
    b.requests++
    keyBytes(key)
    this.hasher.hashInto(keyView, keyLength)
    const h = (this.hasher.hashLo >>> 0) & (BITMAP_BITS - 1)
    b.bits[h >>> 5] |= 1 << (h & 31)
    if (++this.sinceCheck >= 4096) {
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

  /** Estimated distinct keys in the window. */
  distinctKeys(): number {
    this.current()
    const words = BITMAP_BITS / 32
    let zeros = 0
    for (let w = 0; w < words; w++) {
      let u = 0
      for (const b of this.buckets) u |= b.bits[w]
      zeros += 32 - popcount(u)
    }
    if (zeros === 0) return BITMAP_BITS * Math.log(BITMAP_BITS) // saturated: report the counter's ceiling
    return Math.round(-BITMAP_BITS * Math.log(zeros / BITMAP_BITS))
  }

  /** Memory of the telemetry itself in bytes (bitmaps). */
  sizeBytes(): number {
    return this.buckets.length * (BITMAP_BITS / 8)
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
    const fpr = falsePositiveRate(shape.levels, shape.cellsPerLevel, distinct)
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
 * The cells per level M that keep falsePositiveRate(L, M, H) ≤ p at L levels: per level
 * q = p^(1/L) and (1 − 1/M)^H = 1 − q, so M = ⌈1 / (1 − (1 − q)^(1/H))⌉.
 * @param levels L ≥ 1
 * @param distinctKeys H ≥ 0
 * @param target p in (0, 1)
 */
export function suggestSize(
  levels: number,
  distinctKeys: number,
  target: number,
): { levels: number; cellsPerLevel: number } {
  if (!(distinctKeys > 0)) return { levels, cellsPerLevel: 16 }
  const q = Math.pow(target, 1 / levels)
  const m = Math.ceil(1 / -Math.expm1(Math.log1p(-q) / distinctKeys))
  return { levels, cellsPerLevel: Math.max(16, m) }
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  x = (x + (x >>> 4)) & 0x0f0f0f0f
  return Math.imul(x, 0x01010101) >>> 24
}
