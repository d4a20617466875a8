/** Where the {@link ReorderBuffer} sends the lines it replays, in time order. */
export interface ReorderSink {
  /** Log time moved forward to `timeMs` (called once per new time, before the lines at it). */
  advance(timeMs: number): void
  /** One request of `key` with outcome `outcome` (a status, an event code), at the time last advanced to. */
  decide(key: string, outcome: number): void
}

interface Pending {
  t: number
  seq: number
  key: string
  outcome: number
  count: number
}

/**
 * The replay's reorder buffer (spec/replay.md, Time): parsed lines wait in a min-heap keyed by
 * (time, input order) and are replayed once the log has moved `maxDisorderMs` past them, so
 * a log written slightly out of order is replayed in order. A line older than the time already
 * replayed is replayed at that time and counted as late. It also keeps the span and the
 * disorder figures of the report.
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
  private seq = 0
  private readonly heap: Pending[] = []

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
   */
  add(t: number, key: string, outcome: number, count: number): void {
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
    if (count > 0 || this.heap.length > 0) this.push({ t, seq: this.seq++, key, outcome, count })
    this.drain(this.maxSeenMs - this.maxDisorderMs)
    if (this.heap.length === 0 && count === 0) this.advance(t)
  }

  /** Replay every buffered line (the end of input). */
  flush(): void {
    this.drain(Infinity)
  }

  /** Replay the buffered lines with time ≤ `untilMs`, oldest first (ties in input order). */
  private drain(untilMs: number): void {
    const heap = this.heap
    while (heap.length > 0 && heap[0].t <= untilMs) {
      const e = this.pop()
      this.advance(e.t)
      for (let i = 0; i < e.count; i++) this.sink.decide(e.key, e.outcome)
    }
  }

  private advance(t: number): void {
    if (t <= this.replayedMs) return
    this.replayedMs = t
    this.sink.advance(t)
  }

  private push(p: Pending): void {
    const a = this.heap
    let i = a.length
    a.push(p)
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!less(p, a[parent])) break
      a[i] = a[parent]
      i = parent
    }
    a[i] = p
  }

  private pop(): Pending {
    const a = this.heap
    const top = a[0]
    const last = a.pop()!
    if (a.length > 0) {
      let i = 0
      const n = a.length
      for (;;) {
        const l = 2 * i + 1
        if (l >= n) break
        const r = l + 1
        const c = r < n && less(a[r], a[l]) ? r : l
        if (!less(a[c], last)) break
        a[i] = a[c]
        i = c
      }
      a[i] = last
    }
    return top
  }
}

function less(a: Pending, b: Pending): boolean {
  return a.t < b.t || (a.t === b.t && a.seq < b.seq)
}
