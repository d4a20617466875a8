import type { Clock } from '../clock.js'
import { invalidOption } from '../errors.js'
import { HyperLogLog } from '../window/hyperloglog.js'
import { Window } from '../window/window.js'
import { SpaceSaving, spaceSavingBytes } from '../window/space-saving.js'
import { resolveHasher, type Hasher } from '../hash/hasher.js'
import {
  DEBT_METER_MAX_LOAD_FACTOR,
  abuseFalseBlockRate,
  debtMeterCellsForLoad,
  debtMeterLoadFactor,
  fairnessFalseThrottleRate,
  measuredClustering,
  requestsPerKeyOf,
  scoreBackground,
  sketchFalsePositiveRate,
  type ScoreLoad,
} from '../sketch/sizing.js'
import type { PolicyName } from './decision.js'
import type { GenerationShapes } from './store.js'
import type { EarlyGeneration } from '../sketch/rotator-sizing.js'
import { DEFAULT_LEVELS } from '../sketch/shape.js'
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
  /** Estimated distinct keys in the window (a Window of HyperLogLog sketches, precision 12: 1.04/√4096 ≈ 1.6 % standard error; 4 KiB a bucket, so the telemetry fits inside small `memory` budgets). */
  distinctKeys: number
  /**
   * Memory in bytes of every policy store that reports to this telemetry (all generations) and
   * of the telemetry itself, once: the sum of {@link LimiterStats.memory}'s `stores[].bytes`
   * and `telemetryBytes`. A Limiter alone, or an Express middleware, has one telemetry of its
   * own: its policies' stores. A Fastify registration shares one telemetry among all its
   * limiters: the plugin's own, every route's own `config.grudge` and every
   * `fastify.grudge.hook(overrides)`, so four limiters at the default budget's largest shape read about
   * 4 × 8 MiB (each budget of 10 MiB holds, besides, the half generation a growth's fold keeps). Bloom filters of a registry are not counted (they are the registry's).
   */
  memoryBytes: number
  /** What {@link LimiterStats.memoryBytes} sums, store by store ({@link MemoryStats}). */
  memory: MemoryStats
  /**
   * The predicted rate at which a fresh key's request is refused by others' scores in its
   * cells, per request, at the current load. With a debt meter, the debt meter's:
   * {@link sketchFalsePositiveRate} of its deciding shape at {@link LimiterStats.requestsPerSecond}
   * (offered, latest check window; spec/sizing.md §2, §7), without hot keys, as `perPolicy.limit`.
   * It is the rate that load leads to: right after a jump up, while the cells fill (seconds in an
   * overload, a minute or more near ρ = 1), the measured rate climbs to it. Without a debt meter,
   * that of the scores at their measured load (spec/sizing.md §3–4):
   * 1 − (1 − p_abuse)(1 − p_fairness), the false-block rate of `perPolicy.abuse` and the
   * false-throttle rate of `perPolicy.fairness` (a request passes both; their sketches hash
   * independently), or the one of them the limiter has. With no policy model at all, the
   * hot-key formula `(1 − (1 − 1/M)^H)^L` of the first sketch, H = {@link LimiterStats.hotKeys}.
   */
  falsePositiveRate: number
  /** The target that triggers the one-time warning. */
  targetFalsePositiveRate: number
  /**
   * Estimated keys the debt meter refused in the window (a HyperLogLog at precision 10, ≈ 3 %
   * (1σ)): keys over their limit and, under an overload, innocent ones refused by full cells; the
   * telemetry cannot tell them apart, so the debt meter's prediction does not take them as hot
   * keys (spec/sizing.md §7). It caps what refused requests count as load.
   */
  hotKeys: number
  /**
   * The debt meter's offered requests per second, the load of its model (spec/sizing.md §7): the
   * larger of the latest check window's (the last finished second, or the current one so far)
   * and the mean decayed over a cell's longest memory (maxDebt / rate s, at most the window). A
   * second's load is its admitted requests plus its refused ones, these counted at most
   * (burst + rate × span) / cost per refused key of the window, and a key's refusals in the second
   * at most max(B, rate × 1 s / cost), or rate × 1 s / cost when the second before refused it more
   * than that too (heavy hitters inside an overload: a Space-Saving summary of the second's refused
   * keys finds them). 0 without a debt meter.
   */
  requestsPerSecond: number
  /**
   * B, the requests per distinct key of the model's load (spec/sizing.md §2.6, §7): the debt
   * meter's admitted requests in the window over the window's distinct keys, at least 1 (one
   * request per key; also without a debt meter). A key's requests feed the same cells, so the
   * model takes them as one jump of B × cost (lumped: an upper bound, their spacing is not measured).
   */
  requestsPerKey: number
  /**
   * ρ, the debt meter's load factor: {@link LimiterStats.requestsPerSecond} × cost / (M × rate),
   * M of the deciding generation. Above 1 a level cannot drain what it is offered (its admitted
   * share then stays near 1, the self-sizing's `growAtLoadFactor` compares that admitted figure);
   * with few hot keys fresh keys start to be refused above about 0.8. 0 without a debt meter.
   */
  loadFactor: number
  /**
   * Per policy whose store reports its shapes (in process, and a Redis sync or exact store): the cells
   * per level of each generation, oldest (the one that decides) first, the resizes and early
   * growths so far, and the live generations grown early ({@link GenerationStats}).
   */
  generations?: Partial<Record<PolicyName, GenerationStats>>
  /**
   * Per policy with a capacity model (`limit`, `abuse`, `fairness`): its shape, memory and
   * predicted rate at the window's load ({@link PolicyModelStats}). For a tiered limit,
   * `limit` is the first tier's meter (the window's counts do not split by tier).
   */
  perPolicy: Partial<Record<PolicyName, PolicyModelStats>>
  /**
   * Present only when the debt meter misses one of its sizer's two targets at this load and
   * more cells per level would meet both: the predicted rate is above
   * {@link LimiterStats.targetFalsePositiveRate}, or ρ ({@link LimiterStats.loadFactor}) is above
   * 0.05 (`DEBT_METER_MAX_LOAD_FACTOR`, where heavy hitters start to lose more than 5 % of their
   * rate in aggregate, a few keys more, spec/sizing.md §2.6, and where a self-sized Rotator grows). The power-of-two
   * `cellsPerLevel` (at the same levels, ≤ 2^24) that meets both at this load, the size to set
   * (or the `memory` that holds it). Absent when the sketch is large enough, so it never reads
   * as advice to shrink.
   */
  suggested?: {
    /** L, levels: the configured levels of the sketch (kept as is; only M is resized). */
    levels: number
    /** M, cells per level that meet both targets at `levels` levels: a power of two, larger than the current M. */
    cellsPerLevel: number
    /** Which target the current M misses: `'false-reject'` (the predicted rate; ρ may be over as well) or `'load-factor'` (ρ only: fresh keys pass, heavy hitters lose about ρ of their rate). */
    reason: 'false-reject' | 'load-factor'
  }
}

/** What {@link LimiterStats.memoryBytes} sums: each store that reports to the telemetry, and the telemetry once. */
export interface MemoryStats {
  /** The telemetry's own HyperLogLog windows and refused-key summaries, bytes ({@link Telemetry.sizeBytes}; at most {@link Telemetry.maxSizeBytes}), counted once however many limiters share it. */
  telemetryBytes: number
  /**
   * Each policy store of each limiter reporting to this telemetry, in the order they were
   * built: `store` its store name (`<policy>:<limiter name>`, a tier's `limit:<name>:<tier>`;
   * the Fastify plugin's own limiter is `default`, a route's its methods and URL, `'GET /a'`, a
   * hook's `hook:<n>`), `policy`, and `bytes` (all generations, the load meter and a fleet's
   * pending twin included, as the store's `sizeBytes()`).
   */
  stores: readonly StoreMemory[]
}

/** One store's bytes in {@link MemoryStats.stores}. */
export interface StoreMemory {
  /** The store name of the policy instance, e.g. `limit:GET /a`. */
  store: string
  /** Its policy. */
  policy: PolicyName
  /** Its memory in bytes. */
  bytes: number
}

/**
 * One policy's capacity figures in {@link LimiterStats.perPolicy}: what its sketch holds, the
 * load the window measured and the rate its model (spec/sizing.md §2–4) predicts there.
 */
export interface PolicyModelStats {
  /**
   * What `predictedRate` counts for a fresh key (score 0 of its own): `'false-reject'` (the
   * debt meter refuses it, 429), `'false-block'` (the abuse score is at the threshold in all
   * its cells, 403) or `'false-throttle'` (the feedback score throttles it: the mean of the
   * minimum of its cells).
   */
  predicts: 'false-reject' | 'false-block' | 'false-throttle'
  /**
   * The predicted rate per request, in [0, 1], for the deciding generation's shape at the
   * model's load: `limit` {@link sketchFalsePositiveRate} (at the offered load of the latest check
   * window, no hot keys, the Rotator's carry-forward), `abuse` {@link abuseFalseBlockRate} at the threshold, `fairness`
   * {@link fairnessFalseThrottleRate}; the scores without hot keys, as their sizers (spec/sizing.md §8).
   */
  predictedRate: number
  /**
   * The model's load per second: `limit` offered requests, as {@link LimiterStats.requestsPerSecond};
   * over the window so far (at least 1 s) `abuse` and `fairness` scored events ν = (positive score added per second, all
   * keys) / w, w the abuse model weight (the heaviest positive weight) or `failureDelta`.
   */
  eventsPerSecond: number
  /**
   * `limit`: ρ, offered cost per second / (M × rate), as {@link LimiterStats.loadFactor}.
   * `abuse`, `fairness`: a = ν / (M × λ), events per decay time constant per cell, the shape
   * parameter of spec/sizing.md §3.
   */
  loadFactor: number
  /** `abuse`, `fairness`: a cell's mean background score ν × w / (M × λ) (Campbell's theorem; compare the threshold, or 1); absent for `limit`. */
  background?: number
  /** L, levels. */
  levels: number
  /** M of each generation as it decides now, oldest (the one that decides, and that the prediction is for) first; a fleet's pending twin is in `early`, not here. */
  cellsPerLevel: readonly number[]
  /** Generations created with another size than the one before (0 for a fixed shape), early growths included. */
  resizes: number
  /** Early growths on a load jump so far (in process each folds every smaller live generation; in a fleet: twins started or adopted here); 0 for a fixed shape or a store that does not count them. */
  earlyGrowths: number
  /**
   * The live generations grown early ({@link EarlyGeneration}: position, cells per level,
   * whether a fleet's twin, from when it decides, whether it does now); empty when none is live
   * or the store does not report them.
   */
  early: readonly EarlyGeneration[]
  /** Memory of the policy's store in bytes (all generations, a pending twin included; its share of the telemetry not included). */
  sizeBytes: number
}

/**
 * What the telemetry knows of a policy's sketch to predict its false-reject rate.
 * @internal
 */
export interface SketchReport {
  /** Which policy the sketch belongs to. */
  policy: PolicyName
  /** The store name of the policy instance (`limit:GET /a`), as {@link MemoryStats.stores} names it; default the policy's name. */
  store?: string
  /** L. */
  levels: number
  /** M. */
  cellsPerLevel: number
  /** Memory of the policy's store in bytes (all generations). */
  sizeBytes: () => number
  /** The debt meter's figures (for `limit`): rate per second, burst, cost, maxDebt, and its Rotator's generations and period in ms (the carry-forward model, spec/sizing.md §2.5). */
  debt?: { rate: number; burst: number; cost: number; maxDebt: number; generations?: number; periodMs?: number }
  /** The store's generation shapes (oldest, deciding, first), resizes and early generations, when it has them. */
  shape?: () => GenerationShapes
  /** Generations of a store without `shape` (a fixed shape: each one M); default 1. */
  generations?: number
  /**
   * The score's model (for `abuse` and `fairness`): its load at a positive score per second
   * (`abuseScoreLoad` / `feedbackScoreLoad`, the mapping the policy's sizer uses) and, for the
   * abuse score, the threshold of a block (without it the fairness throttle is predicted).
   */
  score?: { load: (scorePerSecond: number) => ScoreLoad; threshold?: number }
}

/** The generations of one self-sized policy, in {@link LimiterStats.generations}. */
export interface GenerationStats {
  /** Cells per level of each generation as it decides now, oldest (the one that decides) first. */
  cellsPerLevel: readonly number[]
  /** Generations created with another size than the one before, early growths included. */
  resizes: number
  /** Early growths on a load jump so far (0 when the store does not count them). */
  earlyGrowths: number
  /** The live generations grown early, as {@link PolicyModelStats.early}. */
  early: readonly EarlyGeneration[]
}

/** A store's {@link GenerationShapes} as {@link GenerationStats} (counts a store does not keep read 0, early generations none). */
function generationStats(g: GenerationShapes): GenerationStats {
  return {
    cellsPerLevel: g.generationCellsPerLevel,
    resizes: g.resizes,
    earlyGrowths: g.earlyGrowths ?? 0,
    early: g.early ?? [],
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
/** HyperLogLog precision of the distinct-key window: 2^12 one-byte registers (4 KiB) per slot, ≈ 1.6 % (1σ); counted inside each policy's budget, so kept small. */
const HLL_PRECISION = 12
/** HyperLogLog precision of the refused-key window: 2^10 registers (1 KiB) per slot, ≈ 3.3 % (1σ). */
const HOT_PRECISION = 10

/**
 * Counters of the refused-key summary of a second (Space-Saving): every key with more than 1/128
 * of the second's refusals is in it, so the 50 heavy hitters of issue 14 inside an overload are
 * (spec/sizing.md §7). 3 KiB each (`spaceSavingBytes`); two are held, the second being
 * counted and the last finished one.
 */
const TOP_REFUSED_COUNTERS = 128
/** The refused-key summaries' bytes: the second being counted and the one before, 6,144. */
const TOP_REFUSED_BYTES = 2 * spaceSavingBytes(TOP_REFUSED_COUNTERS)

/** Buckets a Telemetry keeps by default. */
const DEFAULT_WINDOW_BUCKETS = 5

/**
 * The most bytes a Telemetry holds: its HyperLogLog windows, each a template and at most
 * `windowBuckets` slots ({@link Window.sizeBytes}) of 2^12 registers (distinct keys) and 2^10
 * (refused keys), one byte each, and two refused-key summaries of 3,072 B (Space-Saving of 128
 * counters: the second being counted and the last one): 30,720 + 6,144 = 36,864 bytes (36 KiB)
 * at the default 5 buckets. A Limiter counts it inside each policy's `memory` budget.
 * @param windowBuckets the buckets kept (default 5)
 * @internal
 */
export function telemetryMaxBytes(windowBuckets = DEFAULT_WINDOW_BUCKETS): number {
  return (windowBuckets + 1) * ((1 << HLL_PRECISION) + (1 << HOT_PRECISION)) + TOP_REFUSED_BYTES
}

interface Bucket {
  startMs: number
  requests: number
  admitted: number
  rejected: number
  counts: Record<PolicyName, PolicyCounts>
  /** Positive score added per policy (the scores' model load), all keys. */
  scored: { abuse: number; fairness: number }
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
  /** Keys the debt meter refused, per bucket. */
  private readonly refusedKeys: Window<HyperLogLog>
  /** The key of the request being decided. */
  private curKey = ''
  /**
   * The key last added to the distinct-key window, and the bucket it was added in: adding
   * the same key again in the same bucket (the same window slot) leaves a HyperLogLog's
   * registers as they are, so it is skipped (a client's run of requests hashes its key once).
   */
  private distinctKey: string | undefined = undefined
  private distinctBucket: Bucket | undefined = undefined
  /** The same for the refused-key window. */
  private refusedKey: string | undefined = undefined
  private refusedBucket: Bucket | undefined = undefined
  private warned = false
  private readonly notices = new Set<string>()
  /** The time of the last bucket lookup (ms). */
  private nowMs = 0
  /** The bucket of the request being decided. */
  private cur: Bucket | undefined
  private sinceCheck = 0
  /** A new bucket started since the last health check (checked once per bucket at least). */
  private rolled = false
  /** The policies' sketches to report on: shapes, memory, and the debt meter's figures. */
  private readonly shapes: SketchReport[] = []
  /**
   * The debt meter's load per check window (one second, the self-sized Rotator's default check,
   * spec/sizing.md §7): the second being counted (floor(ms / 1000)), its admitted and refused
   * requests, the last finished second's (and its index), and the means of both decayed with the
   * time constant `loadTauS` (a cell's longest memory, maxDebt / rate), folded once per second.
   */
  private secIndex = -1
  private secAdmitted = 0
  private secRefused = 0
  private lastSecIndex = -2
  private lastAdmitted = 0
  private lastRefused = 0
  private meanAdmitted = 0
  private meanRefused = 0
  private loadTauS = 1
  /**
   * The debt meter's refused keys of the second being counted: a Space-Saving summary of their
   * 64-bit hashes (no strings kept), so a key refused more than its cap in the second is found
   * and its refusals above the cap are taken out of the offered load (spec/sizing.md §7). At each
   * fold it becomes `prevRefused` (the two swap, and the new current one is cleared).
   */
  private topRefused = new SpaceSaving(TOP_REFUSED_COUNTERS)
  /** The summary of the last folded second (`lastSecIndex`): a key refused above its rate there too is over its limit. */
  private prevRefused = new SpaceSaving(TOP_REFUSED_COUNTERS)
  /** The summary's hash (murmur3 under a random seed), and the last key it hashed. */
  private readonly topHasher: Hasher = resolveHasher(undefined, undefined)
  private topKey: string | undefined = undefined
  private topHi = 0
  private topLo = 0
  /** Refusals above the per-key cap: the last finished second's and their decayed mean (as `lastRefused`, `meanRefused`). */
  private lastExcess = 0
  private meanExcess = 0
  /**
   * The per-key cap of a second's refusals, max(B, rate × 1 s / cost) (what a key within its limit
   * sends in a second: its B requests lumped, or its rate), and rate × 1 s / cost alone for a key
   * refused above its rate in the second before as well: rate / cost of the first debt meter, B
   * of the latest {@link Telemetry.stats} (the window's figure moves slowly; the fold on the
   * request path does not merge the HyperLogLog slots to read it).
   */
  private perKeyRate = 1
  private lastRequestsPerKey = 1

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
    const n = options.windowBuckets ?? DEFAULT_WINDOW_BUCKETS
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
    this.refusedKeys = new Window(HyperLogLog.bySize({ precision: HOT_PRECISION }), {
      everyMs: this.bucketMs,
      keep: this.windowBuckets,
      clock: this.clock,
    })
  }

  /**
   * Report on a policy's sketch: its shape, memory and, for the debt meter, the figures its
   * false-reject model needs.
   * @internal
   */
  addSketch(report: SketchReport): void {
    this.shapes.push(report)
    const d = report.debt
    // the first debt meter's (the one predicted): a cell at the ceiling drains in maxDebt / rate s
    if (d !== undefined && this.shapes.filter((r) => r.debt !== undefined).length === 1) {
      this.loadTauS = Math.min(Math.max(1, d.maxDebt / d.rate), (this.bucketMs * this.windowBuckets) / 1000)
      this.perKeyRate = d.rate / d.cost
    }
  }

  /** Fold the finished second `secIndex` into the last-second figures and the decayed means (once per second at most). */
  private foldSecond(): void {
    const gap = this.secIndex - this.lastSecIndex
    // seconds without a request between the two folded ones decay the means as zero load
    const keep = Math.exp(-Math.max(0, gap - 1) / this.loadTauS)
    const w = -Math.expm1(-1 / this.loadTauS)
    const excess = this.refusedExcess(this.perKeyCap(this.lastRequestsPerKey), this.lastSecIndex === this.secIndex - 1)
    this.meanAdmitted = this.meanAdmitted * keep * (1 - w) + this.secAdmitted * w
    this.meanRefused = this.meanRefused * keep * (1 - w) + this.secRefused * w
    this.meanExcess = this.meanExcess * keep * (1 - w) + excess * w
    this.lastSecIndex = this.secIndex
    this.lastAdmitted = this.secAdmitted
    this.lastRefused = this.secRefused
    this.lastExcess = excess
    this.secAdmitted = 0
    this.secRefused = 0
    const top = this.prevRefused
    this.prevRefused = this.topRefused
    top.clear()
    this.topRefused = top
  }

  /** The per-key cap of a second's refusals at B requests per key: max(B, rate × 1 s / cost). */
  private perKeyCap(requestsPerKey: number): number {
    return Math.max(requestsPerKey, this.perKeyRate)
  }

  /**
   * The refusals of the second being counted above each key's cap, summed over the keys of its
   * refused-key summary: each key's guaranteed refusals (count − ε, never more than it had) above
   * `cap`, or above rate × 1 s / cost when the second before (`prevRefused`, when `consecutive`)
   * refused it more than that as well: a key sending above its rate second after second is over
   * its limit, while an innocent's B lumped requests fall in one second. A key with more than
   * 1/128 of the second's refusals is always in the summary (Metwally et al. 2005).
   * @param cap max(B, rate × 1 s / cost)
   * @param consecutive whether `prevRefused` is the second just before
   */
  private refusedExcess(cap: number, consecutive: boolean): number {
    const top = this.topRefused
    const prev = this.prevRefused
    const rate = this.perKeyRate
    let excess = 0
    for (let i = 0; i < top.size; i++) {
      const g = top.guaranteedAt(i)
      if (g <= rate) continue
      const c = consecutive && prev.guaranteed(top.hiAt(i), top.loAt(i)) > rate ? rate : cap
      if (g > c) excess += g - c
    }
    return excess
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
      scored: { abuse: 0, fairness: 0 },
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
    const sec = Math.floor(nowMs / 1000)
    if (sec !== this.secIndex) {
      if (this.secIndex >= 0) this.foldSecond()
      this.secIndex = sec
    }
    this.curKey = key
    // the buckets and the window's slots are both floor(t / bucketMs): one bucket, one slot
    if (key !== this.distinctKey || b !== this.distinctBucket) {
      this.distinct.addAt(this.nowMs, key)
      this.distinctKey = key
      this.distinctBucket = b
    }
    // the health check merges the HLL slots (~0.25 ms): once per 65 536 requests, not per request
    if (++this.sinceCheck >= 65_536 || this.rolled) {
      this.rolled = false
      this.sinceCheck = 0
      this.checkHealth()
    }
  }

  /** Count a policy's verdict. */
  policy(policy: PolicyName, admitted: boolean): void {
    const b = this.cur ?? this.current()
    const c = b.counts[policy]
    if (admitted) {
      c.admitted++
      if (policy === 'limit') this.secAdmitted++
    } else {
      c.rejected++
      if (policy !== 'limit') return
      this.secRefused++
      if (this.curKey !== this.refusedKey || b !== this.refusedBucket) {
        this.refusedKeys.addAt(this.nowMs, this.curKey)
        this.refusedKey = this.curKey
        this.refusedBucket = b
      }
      // a run of one key's refusals hashes it once
      if (this.curKey !== this.topKey) {
        const h = this.topHasher
        h.hashKey(this.curKey)
        this.topHi = h.hashHi
        this.topLo = h.hashLo
        this.topKey = this.curKey
      }
      this.topRefused.add(this.topHi, this.topLo)
    }
  }

  /**
   * Count a score's positive delta (a failure's `failureDelta`, an abuse weight or refusal
   * weight above 0), the load of the score's model; deltas ≤ 0 (forgiveness) are left out, as
   * the model leaves them out (spec/sizing.md §3). Bucketed by the telemetry's clock now.
   * @internal
   */
  scored(policy: 'abuse' | 'fairness', delta: number): void {
    if (delta > 0) this.current().scored[policy] += delta
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

  /** Memory of the telemetry itself in bytes (the HyperLogLog slots held and the two 3 KiB refused-key summaries). */
  sizeBytes(): number {
    return (
      this.distinct.sizeBytes() +
      this.refusedKeys.sizeBytes() +
      this.topRefused.sizeBytes() +
      this.prevRefused.sizeBytes()
    )
  }

  /**
   * The most bytes this telemetry holds, whatever the traffic: its HyperLogLog windows,
   * (windowBuckets + 1) × (2^12 + 2^10), and the two refused-key summaries' 6,144; 36,864
   * (36 KiB) at the default 5 buckets. A Limiter counts it inside each policy's `memory` budget.
   */
  maxSizeBytes(): number {
    return telemetryMaxBytes(this.windowBuckets)
  }

  /** The windowed statistics. */
  stats(): LimiterStats {
    this.current()
    const policies = emptyCounts()
    let requests = 0
    let admitted = 0
    let rejected = 0
    const scored = { abuse: 0, fairness: 0 }
    for (const b of this.buckets) {
      requests += b.requests
      admitted += b.admitted
      rejected += b.rejected
      for (const p of POLICIES) {
        policies[p].admitted += b.counts[p].admitted
        policies[p].rejected += b.counts[p].rejected
      }
      scored.abuse += b.scored.abuse
      scored.fairness += b.scored.fairness
    }
    const distinct = this.distinctKeys()
    const telemetryBytes = this.sizeBytes()
    const stores = this.shapes.map((sk) => ({ store: sk.store ?? sk.policy, policy: sk.policy, bytes: sk.sizeBytes() }))
    let memory = telemetryBytes
    for (const st of stores) memory += st.bytes
    const hotKeys = policies.limit.rejected === 0 ? 0 : Math.round(this.refusedKeys.estimateAt(this.nowMs))
    const windowMs = this.bucketMs * this.windowBuckets
    // the window's counts over the span it covers so far (the current bucket is partial)
    const first = this.buckets[0]
    const spanS = first === undefined ? 0 : Math.max(1000, this.nowMs - first.startMs) / 1000
    const perSecond = (n: number): number => (spanS === 0 ? 0 : n / spanS)
    let fpr: number | undefined
    let loadFactor = 0
    let requestsPerSecond = 0
    let requestsPerKey = 1
    let suggested: LimiterStats['suggested']
    let generations: LimiterStats['generations']
    const perPolicy: LimiterStats['perPolicy'] = {}
    for (const sk of this.shapes) {
      const g = sk.shape?.()
      if (g !== undefined) {
        generations ??= {}
        generations[sk.policy] = generationStats(g)
      }
      // the first report of a policy is its figure (a tiered limit's first meter)
      if (perPolicy[sk.policy] !== undefined || (sk.debt === undefined && sk.score === undefined)) continue
      const cells = g?.generationCellsPerLevel ?? new Array<number>(sk.generations ?? 1).fill(sk.cellsPerLevel)
      // a self-sized store decides with its oldest generation: predict for that shape
      const shape = { levels: sk.levels, cellsPerLevel: cells[0] }
      const common = {
        levels: sk.levels,
        ...(g === undefined ? { cellsPerLevel: cells, resizes: 0, earlyGrowths: 0, early: [] } : generationStats(g)),
        sizeBytes: sk.sizeBytes(),
      }
      if (sk.debt !== undefined) {
        // B, the requests a key sends (spec/sizing.md §2.6, §7): the window's admitted requests
        // over its distinct keys, lumped (spacing 0: an upper bound, the spacing is not measured)
        const b = requestsPerKeyOf(policies.limit.admitted * sk.debt.cost, distinct, sk.debt.cost)
        // the first debt meter's B sets the per-key cap of the seconds folded from now on
        if (requestsPerSecond === 0 && fpr === undefined) this.lastRequestsPerKey = b
        const load = {
          ...sk.debt,
          requestsPerSecond: this.debtLoadPerSecond(sk.debt, policies.limit.rejected, hotKeys, spanS, b),
          hotKeys: 0,
          // the first request's figure standing in for all requests, B lumped (measuredClustering says why)
          ...measuredClustering(b),
        }
        const rate = sketchFalsePositiveRate(shape, load)
        // ρ of the model's load over the level's drain, without §2.1's hot-key correction: the
        // telemetry cannot tell a hot key from an innocent one refused under an overload
        // (spec/sizing.md §7)
        const rho = debtMeterLoadFactor(shape.cellsPerLevel, load.requestsPerSecond, load.rate, load.cost, 0)
        perPolicy.limit = {
          predicts: 'false-reject',
          predictedRate: rate,
          eventsPerSecond: load.requestsPerSecond,
          loadFactor: rho,
          ...common,
        }
        fpr = rate
        requestsPerSecond = load.requestsPerSecond
        requestsPerKey = load.requestsPerKey
        loadFactor = rho
        // the sizer's two targets (spec/sizing.md §7): the false-reject rate (here the telemetry's
        // target) and ρ ≤ DEBT_METER_MAX_LOAD_FACTOR, past which the self-sized Rotator grows
        const overRate = rate > this.targetFalsePositiveRate
        if (overRate || rho > DEBT_METER_MAX_LOAD_FACTOR) {
          const maxCells = 1 << 24
          const m = debtMeterCellsForLoad(load, {
            levels: shape.levels,
            targetFalseReject: this.targetFalsePositiveRate,
            minCells: 16,
            maxCells,
            maxLoadFactor: DEBT_METER_MAX_LOAD_FACTOR,
          })
          // below maxCells the search's answer met both targets when it was evaluated; maxCells
          // itself is its answer when nothing smaller does, met or not, so only it is checked
          const meets = (cells: number): boolean =>
            debtMeterLoadFactor(cells, load.requestsPerSecond, load.rate, load.cost, 0) <= DEBT_METER_MAX_LOAD_FACTOR &&
            sketchFalsePositiveRate({ ...shape, cellsPerLevel: cells }, load) <= this.targetFalsePositiveRate
          if (m > shape.cellsPerLevel && (m < maxCells || meets(m)))
            suggested = { levels: shape.levels, cellsPerLevel: m, reason: overRate ? 'false-reject' : 'load-factor' }
        }
      } else if (sk.score !== undefined && (sk.policy === 'abuse' || sk.policy === 'fairness')) {
        const load = sk.score.load(perSecond(scored[sk.policy]))
        const threshold = sk.score.threshold
        perPolicy[sk.policy] = {
          predicts: threshold === undefined ? 'false-throttle' : 'false-block',
          predictedRate:
            threshold === undefined
              ? fairnessFalseThrottleRate(shape, load)
              : abuseFalseBlockRate(shape, load, threshold),
          eventsPerSecond: load.eventsPerSecond,
          loadFactor: load.eventsPerSecond / (shape.cellsPerLevel * load.lambdaPerSecond),
          background: scoreBackground(shape.cellsPerLevel, load),
          ...common,
        }
      }
    }
    if (fpr === undefined) {
      const a = perPolicy.abuse?.predictedRate
      const f = perPolicy.fairness?.predictedRate
      if (a !== undefined && f !== undefined) fpr = 1 - (1 - a) * (1 - f)
      else if (a !== undefined) fpr = a
      else if (f !== undefined) fpr = f
      else fpr = sketchFalsePositiveRate(this.shapes[0] ?? { levels: DEFAULT_LEVELS, cellsPerLevel: 2048 }, { hotKeys })
    }
    const out: LimiterStats = {
      windowMs,
      requests,
      admitted,
      rejected,
      policies,
      distinctKeys: distinct,
      memoryBytes: memory,
      memory: { telemetryBytes, stores },
      falsePositiveRate: fpr,
      targetFalsePositiveRate: this.targetFalsePositiveRate,
      hotKeys,
      requestsPerSecond,
      requestsPerKey,
      loadFactor,
      perPolicy,
    }
    if (generations !== undefined) out.generations = generations
    if (suggested !== undefined) out.suggested = suggested
    return out
  }

  /**
   * The debt meter's load for its model (spec/sizing.md §7): requests per second offered to the
   * cells, the larger of the latest check window's (the last finished second, or the current one
   * so far) and the mean decayed over a cell's longest memory (maxDebt / rate, at most the
   * window). Offered: admitted plus refused requests, since a refused innocent request is load
   * the model's feedback (§2.3) already refuses; but a key over its own limit is refused without
   * end, so refused requests count at most (burst + rate × span) / cost per refused key of the
   * window (what a key within its limit can send), scaled down together when they are more; and
   * per second, a key's refusals above max(B, rate × 1 s / cost) (what a key within its limit
   * sends in a second) are taken out, for every key of the second's refused-key summary (each
   * with more than 1/128 of the second's refusals is in it): the smaller of the two counts. The
   * aggregate cap alone cannot take out heavy hitters' refusals inside an overload, where the
   * innocent keys' refusals raise it past theirs.
   * @param debt the meter's figures
   * @param refused the meter's refused requests in the window
   * @param refusedKeys the distinct keys it refused in the window (HyperLogLog estimate)
   * @param spanS the span the window's counts cover, s (≥ 1)
   * @param requestsPerKey B, the window's requests per key (≥ 1)
   */
  private debtLoadPerSecond(
    debt: NonNullable<SketchReport['debt']>,
    refused: number,
    refusedKeys: number,
    spanS: number,
    requestsPerKey: number,
  ): number {
    const ratio =
      refused === 0 ? 1 : Math.min(1, (refusedKeys * (debt.burst + debt.rate * spanS)) / debt.cost / refused)
    const offered = (a: number, r: number, x: number): number => a + Math.min(ratio * r, r - x)
    const nowSec = Math.floor(this.nowMs / 1000)
    let lastIdx = this.lastSecIndex
    let lastA = this.lastAdmitted
    let lastR = this.lastRefused
    let lastX = this.lastExcess
    let meanA = this.meanAdmitted
    let meanR = this.meanRefused
    let meanX = this.meanExcess
    let curA = 0
    let curR = 0
    let curX = 0
    // the second being counted, its summary not folded yet: its excess at this B
    const secX =
      this.secIndex >= 0
        ? this.refusedExcess(this.perKeyCap(requestsPerKey), this.lastSecIndex === this.secIndex - 1)
        : 0
    if (this.secIndex === nowSec) {
      curA = this.secAdmitted
      curR = this.secRefused
      curX = secX
    } else if (this.secIndex >= 0) {
      // a finished second not folded yet (no request since): fold it here, without keeping it
      const keep = Math.exp(-Math.max(0, this.secIndex - lastIdx - 1) / this.loadTauS)
      const w = -Math.expm1(-1 / this.loadTauS)
      meanA = meanA * keep * (1 - w) + this.secAdmitted * w
      meanR = meanR * keep * (1 - w) + this.secRefused * w
      meanX = meanX * keep * (1 - w) + secX * w
      lastIdx = this.secIndex
      lastA = this.secAdmitted
      lastR = this.secRefused
      lastX = secX
    }
    if (lastIdx !== nowSec - 1) {
      lastA = 0
      lastR = 0
      lastX = 0
    }
    const decay = Math.exp(-Math.max(0, nowSec - 1 - lastIdx) / this.loadTauS)
    return Math.max(offered(lastA, lastR, lastX), offered(curA, curR, curX), offered(meanA, meanR, meanX) * decay)
  }

  /**
   * Pass a one-time notice (a policy's sizing limit) to `warn` (else `console.warn`); each distinct message once.
   * @internal
   */
  notice(message: string): void {
    if (this.notices.has(message)) return
    this.notices.add(message)
    // without an adapter's logger, the console: a notice is never dropped
    ;(this.warnFn ?? ((m: string) => console.warn(m)))(message)
  }

  /** Log one warning (once per Telemetry) when the estimated false-positive rate passes the target. */
  checkHealth(): LimiterStats {
    const s = this.stats()
    if (!this.warned && s.falsePositiveRate > this.targetFalsePositiveRate && this.warnFn !== undefined) {
      this.warned = true
      const head = `grudge: predicted false-reject rate ${s.falsePositiveRate.toPrecision(3)} exceeds the target ${this.targetFalsePositiveRate} `
      if (s.perPolicy.limit !== undefined || (s.perPolicy.abuse === undefined && s.perPolicy.fairness === undefined))
        this.warnFn(
          head +
            `at load factor ${s.loadFactor.toFixed(2)} with ~${s.hotKeys} refused keys` +
            (s.suggested === undefined
              ? '; no larger sketch at these levels reaches the target'
              : `; suggested cellsPerLevel: ${s.suggested.cellsPerLevel} (levels ${s.suggested.levels}), or a memory budget that holds it`),
        )
      else {
        // no debt meter: the scores' figures (spec/sizing.md §3–4)
        const parts: string[] = []
        for (const p of ['abuse', 'fairness'] as const) {
          const m = s.perPolicy[p]
          if (m !== undefined)
            parts.push(
              `${p} ${m.predicts} ${m.predictedRate.toPrecision(3)} at ${m.eventsPerSecond.toPrecision(3)} scored events/s, ` +
                `a cell's background ${(m.background ?? 0).toPrecision(3)} on ${m.cellsPerLevel[0]} cells per level`,
            )
        }
        this.warnFn(head + `(${parts.join('; ')}); more cells per level (a larger memory budget) lower it`)
      }
    }
    return s
  }
}
