/**
 * Counts distinct keys for the replay report. The interface is what a HyperLogLog offers
 * (add, estimate, memory), so the exact Set below can be swapped for the window area's
 * HyperLogLog without touching the replay.
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
