/**
 * The exact per-key reference the replay compares the sketch with: a `Map` from key to its
 * own token bucket and abuse score, no sharing of cells between keys, so no collisions. Its
 * decisions are what the sketch's policies would decide with unlimited memory; the
 * difference between the two on the same input is the sketch's error on that traffic.
 *
 * Semantics (the same as the sketch policies of the replay, one key at a time):
 * - rate: a debt in [0, burst] that drains linearly at `ratePerSecond` (a token bucket seen
 *   as GCRA debt); a request of cost 1 is admitted iff `debt + 1 ≤ burst`, then adds 1.
 * - abuse: a score in [0, hi] that decays exponentially with `halfLifeMs`; a request is
 *   refused iff the score is ≥ `threshold` before it; an admitted request adds its weight
 *   (which may be negative), clamped to [0, hi].
 * The abuse check comes first: a request refused for abuse consumes no rate.
 */
export class ExactReference {
  private readonly entries = new Map<string, ReferenceEntry>()
  private readonly ratePerMs: number
  private readonly lambdaPerMs: number

  /**
   * @param ratePerSecond drain of the rate debt per second, or 0 for no rate policy
   * @param burst the most debt (requests) a key may hold, > 0 when a rate is given
   * @param halfLifeMs half-life of the abuse score in ms, or 0 for no abuse policy
   * @param threshold abuse score at which requests are refused
   * @param hi upper clamp of the abuse score
   */
  constructor(
    ratePerSecond: number,
    private readonly burst: number,
    halfLifeMs: number,
    private readonly threshold: number,
    private readonly hi: number,
  ) {
    this.ratePerMs = ratePerSecond / 1000
    this.lambdaPerMs = halfLifeMs > 0 ? Math.LN2 / halfLifeMs : 0
  }

  /**
   * Decide one request of `key` at `nowMs` (non-decreasing across calls).
   * @param weight the abuse weight of the request's outcome (ignored without an abuse policy)
   * @returns whether the request is admitted
   */
  decide(key: string, weight: number, nowMs: number): boolean {
    let e = this.entries.get(key)
    if (e === undefined) {
      e = { debt: 0, debtMs: nowMs, score: 0, scoreMs: nowMs, requests: 0, rejected: 0 }
      this.entries.set(key, e)
    }
    e.requests++
    let admitted = true
    if (this.lambdaPerMs > 0) {
      if (e.score !== 0) e.score *= Math.exp(-this.lambdaPerMs * (nowMs - e.scoreMs))
      e.scoreMs = nowMs
      if (e.score >= this.threshold) admitted = false
    }
    if (admitted && this.ratePerMs > 0) {
      const drained = e.debt - this.ratePerMs * (nowMs - e.debtMs)
      e.debt = drained > 0 ? drained : 0
      e.debtMs = nowMs
      if (e.debt + 1 > this.burst) admitted = false
      else e.debt += 1
    }
    if (admitted && this.lambdaPerMs > 0 && weight !== 0) {
      const s = e.score + weight
      e.score = s < 0 ? 0 : s > this.hi ? this.hi : s
    }
    if (!admitted) e.rejected++
    return admitted
  }

  /** Requests seen for `key` (0 when never seen). */
  requests(key: string): number {
    return this.entries.get(key)?.requests ?? 0
  }

  /** The keys this reference refused at least once. */
  throttledKeys(): Set<string> {
    const out = new Set<string>()
    for (const [k, e] of this.entries) if (e.rejected > 0) out.add(k)
    return out
  }

  /** Number of distinct keys seen. */
  get size(): number {
    return this.entries.size
  }
}

interface ReferenceEntry {
  debt: number
  debtMs: number
  score: number
  scoreMs: number
  requests: number
  rejected: number
}
