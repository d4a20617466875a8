import type { Clock, Ticker, TickerHandle } from '../clock.js'

/**
 * The replay's ticker: each task runs when its period has passed on the replay's clock (log
 * time), as an interval timer would fire, once per {@link LogTimeTicker.advance} however many
 * periods a gap in the log skipped (a stalled timer fires once), keeping its phase.
 *
 * A ticker that ran every task at every step of log time (a FakeTicker) woke the policies'
 * tasks more often than a timer does: `longPeriodTicker`, which lets a wake-up half a step
 * early count as due, then rotated a Rotator after half its period, and a fixed-shape rotation
 * came at 50 s, 150 s, … of a 100 s period.
 */
export class LogTimeTicker implements Ticker {
  private readonly tasks = new Set<{ periodMs: number; fn: () => void; dueMs: number }>()

  /** @param clock the replay's clock: a task is first due one period after it is registered */
  constructor(private readonly clock: Clock) {}

  /** Register a task of period `periodMs` (a positive finite number of ms). */
  every(periodMs: number, fn: () => void): TickerHandle {
    const task = { periodMs, fn, dueMs: this.clock.now() + periodMs }
    this.tasks.add(task)
    return { cancel: () => void this.tasks.delete(task) }
  }

  /** Run, once each, the tasks due at the clock's time, in registration order. */
  advance(): void {
    const now = this.clock.now()
    for (const task of [...this.tasks]) {
      if (now < task.dueMs) continue
      task.dueMs += Math.max(1, Math.floor((now - task.dueMs) / task.periodMs) + 1) * task.periodMs
      task.fn()
    }
  }
}
