import { HyperLogLog } from '../window/hyperloglog.js'

/**
 * Counts distinct keys for the replay report: a {@link HyperLogLog} by default (constant
 * memory, as a limiter in production would count), or an exact Set.
 */
export interface DistinctCounter {
  /**
   * Record one occurrence of `key`. Adding a key already added changes nothing (the replay
   * adds the key of an address once, when it is first seen).
   */
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

/** z of a two-sided 95 % normal interval. */
const Z95 = 1.959964

/**
 * The report's text for a distinct-key count: exact, or a HyperLogLog estimate with its 95 %
 * interval (estimate × (1 ± 1.96 σ), σ the relative standard error: the estimate is close to
 * normal at these sizes, and `test/cli/distinct.test.ts` measures the coverage) beside the
 * exact count. `±σ` alone would read as a bound, and a bound it is not: in the test's trials
 * 23 % of the estimates fell outside ±σ, and 2 % outside the 95 % interval.
 * @param dk the count, how it was made, σ (0 when exact) and the exact count
 * @param num how numbers are written (thousands separators)
 * @returns e.g. `1,766 (HyperLogLog: 95% interval 1,738–1,794, σ 0.81%; exact 1,753)`
 */
export function distinctKeysText(
  dk: { count: number; method: 'exact' | 'hyperloglog'; relativeStandardError: number; exact: number },
  num: (n: number) => string,
): string {
  if (dk.method === 'exact') return `${num(dk.count)} (exact)`
  const half = Z95 * dk.relativeStandardError * dk.count
  const sigma = (dk.relativeStandardError * 100).toFixed(2)
  return `${num(Math.round(dk.count))} (HyperLogLog: 95% interval ${num(Math.floor(dk.count - half))}–${num(Math.ceil(dk.count + half))}, σ ${sigma}%; exact ${num(dk.exact)})`
}
