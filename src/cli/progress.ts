/** Where a {@link ProgressBar} draws: a terminal stream (`process.stderr`). */
export interface ProgressTarget {
  /** True when the stream is a terminal; the bar draws nothing otherwise. */
  isTTY?: boolean
  /** Terminal width in columns (default 80). */
  columns?: number
  write(text: string): unknown
}

/**
 * A one-line progress bar for long replays: silent for the first `delayMs` (a replay that
 * ends sooner never shows it), redrawn at most every `intervalMs`, and off entirely when the
 * target is not a TTY (a pipe or a CI log gets no control characters). Time comes from
 * `now` (ms), so it is testable without sleeping.
 */
export class ProgressBar {
  private readonly startMs: number
  private lastDrawMs = -Infinity
  private drawn = false

  /**
   * @param target the stream to draw on
   * @param totalBytes the input size in bytes when known (a file), else undefined (stdin)
   * @param now time source in ms
   * @param delayMs quiet time before the first draw, default 1000
   * @param intervalMs least time between draws, default 100
   */
  constructor(
    private readonly target: ProgressTarget,
    private readonly totalBytes: number | undefined,
    private readonly now: () => number,
    private readonly delayMs = 1000,
    private readonly intervalMs = 100,
  ) {
    this.startMs = now()
  }

  /** Whether the bar has drawn anything. */
  get visible(): boolean {
    return this.drawn
  }

  /**
   * Report progress; draws when due.
   * @param bytes raw input bytes read so far
   * @param lines lines replayed so far
   */
  update(bytes: number, lines: number): void {
    if (this.target.isTTY !== true) return
    const t = this.now()
    if (t - this.startMs < this.delayMs || t - this.lastDrawMs < this.intervalMs) return
    this.lastDrawMs = t
    this.drawn = true
    const secs = (t - this.startMs) / 1000
    const rate = `${Math.round(lines / secs).toLocaleString('en-US')} lines/s`
    const width = Math.max(20, (this.target.columns || 80) - 1) // 0: a pty that reports no size
    let text: string
    if (this.totalBytes !== undefined && this.totalBytes > 0) {
      const f = Math.min(1, bytes / this.totalBytes)
      const tail = ` ${(f * 100).toFixed(0).padStart(3)}% ${lines.toLocaleString('en-US')} lines ${rate}`
      const barW = Math.max(10, width - tail.length - 2)
      const full = Math.round(f * barW)
      text = `[${'#'.repeat(full)}${'-'.repeat(barW - full)}]${tail}`
    } else {
      text = `${(bytes / 1048576).toFixed(1)} MiB, ${lines.toLocaleString('en-US')} lines, ${rate}`
    }
    this.target.write(`\r${text.slice(0, width)}\x1b[K`)
  }

  /** Erase the bar if it was drawn. */
  done(): void {
    if (this.drawn) this.target.write('\r\x1b[K')
    this.drawn = false
  }
}
