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
  /** A key's row in the columns below. */
  private readonly rows = new Map<string, number>()
  /** Row + 1 of each caller's key id (0: not looked up yet), so that a key with an id is looked up in `rows` once. */
  private rowOfId = new Int32Array(1024)
  // One column per field, a row per key: no object per key (a Map of 50,000 small objects was
  // an eighth of `grudge replay`'s CPU time, issue #18). Grown by doubling.
  private debt = new Float64Array(1024)
  private debtMs = new Float64Array(1024)
  private score = new Float64Array(1024)
  private scoreMs = new Float64Array(1024)
  private requestCount = new Float64Array(1024)
  private rejectedCount = new Float64Array(1024)
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
   * @param id the caller's integer id of `key` (one id per key, ≥ 0), or −1 (default): with an
   *   id the key's row is found by the id after its first request, without hashing the key
   * @returns whether the request is admitted
   */
  decide(key: string, weight: number, nowMs: number, id = -1): boolean {
    let e: number
    if (id >= 0 && id < this.rowOfId.length && this.rowOfId[id] > 0) e = this.rowOfId[id] - 1
    else {
      e = this.rowOf(key, nowMs)
      if (id >= 0) {
        if (id >= this.rowOfId.length) {
          const wider = new Int32Array(Math.max(2 * this.rowOfId.length, id + 1))
          wider.set(this.rowOfId)
          this.rowOfId = wider
        }
        this.rowOfId[id] = e + 1
      }
    }
    this.requestCount[e]++
    let admitted = true
    if (this.lambdaPerMs > 0) {
      let score = this.score[e]
      if (score !== 0) this.score[e] = score *= Math.exp(-this.lambdaPerMs * (nowMs - this.scoreMs[e]))
      this.scoreMs[e] = nowMs
      if (score >= this.threshold) admitted = false
    }
    if (admitted && this.ratePerMs > 0) {
      const drained = this.debt[e] - this.ratePerMs * (nowMs - this.debtMs[e])
      const debt = drained > 0 ? drained : 0
      this.debtMs[e] = nowMs
      if (debt + 1 > this.burst) {
        admitted = false
        this.debt[e] = debt
      } else this.debt[e] = debt + 1
    }
    if (admitted && this.lambdaPerMs > 0 && weight !== 0) {
      const s = this.score[e] + weight
      this.score[e] = s < 0 ? 0 : s > this.hi ? this.hi : s
    }
    if (!admitted) this.rejectedCount[e]++
    return admitted
  }

  /** The row of `key`, added (its times set to `nowMs`) when new. */
  private rowOf(key: string, nowMs: number): number {
    let e = this.rows.get(key)
    if (e === undefined) {
      e = this.rows.size
      if (e === this.debt.length) this.grow()
      this.rows.set(key, e)
      this.debtMs[e] = nowMs
      this.scoreMs[e] = nowMs
    }
    return e
  }

  private grow(): void {
    const n = this.debt.length * 2
    const wider = (a: Float64Array) => {
      const b = new Float64Array(n)
      b.set(a)
      return b
    }
    this.debt = wider(this.debt)
    this.debtMs = wider(this.debtMs)
    this.score = wider(this.score)
    this.scoreMs = wider(this.scoreMs)
    this.requestCount = wider(this.requestCount)
    this.rejectedCount = wider(this.rejectedCount)
  }

  /** Requests seen for `key` (0 when never seen). */
  requests(key: string): number {
    const e = this.rows.get(key)
    return e === undefined ? 0 : this.requestCount[e]
  }

  /** The keys this reference refused at least once. */
  throttledKeys(): Set<string> {
    const out = new Set<string>()
    for (const [k, e] of this.rows) if (this.rejectedCount[e] > 0) out.add(k)
    return out
  }

  /** Number of distinct keys seen. */
  get size(): number {
    return this.rows.size
  }
}
