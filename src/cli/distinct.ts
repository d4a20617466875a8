import { HyperLogLog } from '../window/hyperloglog.js'

/**
 * Counts distinct keys for the replay report: a {@link HyperLogLog} by default (constant
 * memory, as a limiter in production would count), or an exact Set.
 */
export interface DistinctCounter {
  /** Record one occurrence of `key`. */
  add(key: string): void
  /** The number of distinct keys added (an estimate for a sketch). */
  estimate(): number
  /** How the count was made, for the report: `'exact'` or `'hyperloglog'`. */
  readonly method: 'exact' | 'hyperloglog'
  /** Relative standard error of {@link DistinctCounter.estimate}: 0 for exact counting. */
  readonly relativeStandardError: number
}

/** Exact distinct counting with a `Set` (memory grows with the number of keys). */
export class ExactDistinct implements DistinctCounter {
  private readonly seen = new Set<string>()
  readonly method = 'exact' as const
  readonly relativeStandardError = 0
  /** Record `key`. */
  add(key: string): void {
    this.seen.add(key)
  }
  /** The exact number of distinct keys added. */
  estimate(): number {
    return this.seen.size
  }
}

/**
 * Distinct keys by {@link HyperLogLog} (Flajolet et al. 2007, Ertl's improved estimator):
 * 2^precision bytes, relative standard error 1.04/√(2^precision).
 */
export class HyperLogLogDistinct implements DistinctCounter {
  private readonly hll: HyperLogLog
  readonly method = 'hyperloglog' as const
  readonly relativeStandardError: number
  /**
   * @param precision p in [4, 18], default 14 (16 KiB, ±0.81 %)
   * @param seed hashing seed; default random
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for p outside [4, 18]
   */
  constructor(precision = 14, seed?: number) {
    this.hll = HyperLogLog.bySize({ precision, seed })
    this.relativeStandardError = this.hll.relativeStandardError
  }
  /** Record `key`. */
  add(key: string): void {
    this.hll.add(key)
  }
  /** The estimated number of distinct keys. */
  estimate(): number {
    return this.hll.estimate()
  }
}
