import type { Clock, Ticker, TickerHandle } from '../clock.js'
import { invalidOption } from '../errors.js'

/**
 * A clock that moves only when told to, for tests and replays (`grudge/testing`).
 * Time is in milliseconds; it may be set backwards to test how structures cope.
 */
export class FakeClock implements Clock {
  private t: number
  /**
   * A clock standing at `startMs`.
   * @param startMs initial time in ms (default 0, any finite number)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a non-finite startMs
   */
  constructor(startMs = 0) {
    if (!Number.isFinite(startMs)) invalidOption('startMs', 'a finite number', startMs)
    this.t = startMs
  }
  /** Current time in ms. */
  now(): number {
    return this.t
  }
  /**
   * Move time by `ms` (may be negative).
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a non-finite ms
   */
  advance(ms: number): void {
    if (!Number.isFinite(ms)) invalidOption('ms', 'a finite number', ms)
    this.t += ms
  }
  /**
   * Set the time to `ms`.
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a non-finite ms
   */
  set(ms: number): void {
    if (!Number.isFinite(ms)) invalidOption('ms', 'a finite number', ms)
    this.t = ms
  }
}

/**
 * A ticker whose tasks run only on {@link FakeTicker.tick}, synchronously, so tests of
 * rotation and checkpoints never poll or sleep (`grudge/testing`).
 */
export class FakeTicker implements Ticker {
  private readonly tasks = new Set<{ periodMs: number; fn: () => void }>()
  /** Register a task; `periodMs` is recorded (see {@link FakeTicker.periods}) but not used. */
  every(periodMs: number, fn: () => void): TickerHandle {
    const task = { periodMs, fn }
    this.tasks.add(task)
    return { cancel: () => void this.tasks.delete(task) }
  }
  /** Run every live task once, in registration order. */
  tick(): void {
    for (const task of [...this.tasks]) task.fn()
  }
  /** Number of live (not cancelled) tasks. */
  get size(): number {
    return this.tasks.size
  }
  /** The periods in ms of the live tasks. */
  periods(): number[] {
    return [...this.tasks].map((t) => t.periodMs)
  }
}
