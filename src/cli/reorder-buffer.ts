/** Where the {@link ReorderBuffer} sends the lines it replays, in time order. */
export interface ReorderSink {
  /** Log time moved forward to `timeMs` (called once per new time, before the lines at it). */
  advance(timeMs: number): void
  /**
   * One request of `key` with outcome `outcome` (a status, an event code), at the time last
   * advanced to; `id` is the key's id as given to {@link ReorderBuffer.add} (−1: none).
   */
  decide(key: string, outcome: number, id: number): void
}

/** The buffered lines of one time, in input order (reused once replayed). */
interface Bucket {
  t: number
  n: number
  readonly keys: string[]
  readonly outcomes: number[]
  readonly counts: number[]
  readonly ids: number[]
}

/**
 * The replay's reorder buffer (spec/replay.md, Time): parsed lines wait in a min-heap keyed by
 * (time, input order) and are replayed once the log has moved `maxDisorderMs` past them, so
 * a log written slightly out of order is replayed in order. A line older than the time already
 * replayed is replayed at that time and counted as late. It also keeps the span and the
 * disorder figures of the report.
 *
 * Lines wait in one bucket per distinct time (log times are whole seconds: a minute of
 * disorder is about 60 buckets however many lines it holds), each in input order, and the
 * times in a small min-heap of numbers: replaying in (time, input order) is then replaying the
 * buckets by time. No object per line: a binary heap of one object per line (60,000 lines
 * buffered at 1,000 lines/s) took a fifth of `grudge replay`'s CPU time (issue #18).
 */
export class ReorderBuffer {
  /** Whether a line was read. */
  started = false
  /** Earliest time read, ms since the epoch (0 before the first line). */
  startMs = 0
  /** Latest time read, ms since the epoch (0 before the first line). */
  maxSeenMs = 0
  /** Lines whose time was before a time already read. */
  outOfOrder = 0
  /** Of those, lines older than the time already replayed (replayed at that time). */
  late = 0
  /** The largest step back in time, ms. */
  maxBackwardsMs = 0
  private replayedMs = -Infinity
  /** Lines buffered. */
  private pending = 0
  private readonly buckets = new Map<number, Bucket>()
  /** The times of the buckets, a binary min-heap. */
  private readonly times: number[] = []
  private readonly free: Bucket[] = []
  /** The bucket the last line went to (consecutive lines nearly always share a time). */
  private last: Bucket | undefined

  /**
   * @param maxDisorderMs disorder tolerated in ms of log time, ≥ 0 (validated by `replayConfig`)
   * @param sink receives the replayed lines
   */
  constructor(
    private readonly maxDisorderMs: number,
    private readonly sink: ReorderSink,
  ) {}

  /**
   * Buffer one parsed line and replay what is now old enough.
   * @param t the line's time, ms since the epoch
   * @param key the key of its requests
   * @param outcome the outcome of its requests (opaque here: a status, an event code)
   * @param count its requests (0: a line that only moves time)
   * @param id the key's id, handed back to the sink's `decide` (opaque here; default −1)
   */
  add(t: number, key: string, outcome: number, count: number, id = -1): void {
    if (!this.started) {
      this.started = true
      this.startMs = t
      this.maxSeenMs = t
    }
    if (t < this.startMs) this.startMs = t
    if (t < this.maxSeenMs) {
      this.outOfOrder++
      if (this.maxSeenMs - t > this.maxBackwardsMs) this.maxBackwardsMs = this.maxSeenMs - t
      if (t < this.replayedMs) {
        this.late++
        t = this.replayedMs
      }
    } else {
      this.maxSeenMs = t
    }
    if (count > 0 || this.pending > 0) this.push(t, key, outcome, count, id)
    this.drain(this.maxSeenMs - this.maxDisorderMs)
    if (this.pending === 0 && count === 0) this.advance(t)
  }

  /** Replay every buffered line (the end of input). */
  flush(): void {
    this.drain(Infinity)
  }

  /** Replay the buffered lines with time ≤ `untilMs`, oldest first (ties in input order). */
  private drain(untilMs: number): void {
    const times = this.times
    while (times.length > 0 && times[0] <= untilMs) {
      const t = this.popTime()
      const b = this.buckets.get(t)!
      this.buckets.delete(t)
      if (this.last === b) this.last = undefined
      this.advance(t)
      const { keys, outcomes, counts, ids } = b
      for (let i = 0; i < b.n; i++) {
        const key = keys[i]
        keys[i] = ''
        for (let c = counts[i]; c > 0; c--) this.sink.decide(key, outcomes[i], ids[i])
      }
      this.pending -= b.n
      b.n = 0
      this.free.push(b)
    }
  }

  private advance(t: number): void {
    if (t <= this.replayedMs) return
    this.replayedMs = t
    this.sink.advance(t)
  }

  private push(t: number, key: string, outcome: number, count: number, id: number): void {
    let b = this.last
    if (b === undefined || b.t !== t) {
      b = this.buckets.get(t)
      if (b === undefined) {
        b = this.free.pop() ?? { t, n: 0, keys: [], outcomes: [], counts: [], ids: [] }
        b.t = t
        this.buckets.set(t, b)
        this.pushTime(t)
      }
      this.last = b
    }
    const i = b.n++
    if (i < b.keys.length) {
      b.keys[i] = key
      b.outcomes[i] = outcome
      b.counts[i] = count
      b.ids[i] = id
    } else {
      b.keys.push(key)
      b.outcomes.push(outcome)
      b.counts.push(count)
      b.ids.push(id)
    }
    this.pending++
  }

  private pushTime(t: number): void {
    const a = this.times
    let i = a.length
    a.push(t)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (a[parent] <= t) break
      a[i] = a[parent]
      i = parent
    }
    a[i] = t
  }

  private popTime(): number {
    const a = this.times
    const top = a[0]
    const last = a.pop()!
    if (a.length > 0) {
      let i = 0
      const n = a.length
      for (;;) {
        const l = 2 * i + 1
        if (l >= n) break
        const r = l + 1
        const c = r < n && a[r] < a[l] ? r : l
        if (a[c] >= last) break
        a[i] = a[c]
        i = c
      }
      a[i] = last
    }
    return top
  }
}
