import { invalidOption } from './errors.js'

/**
 * Time source of every grudge structure: milliseconds as a float64. Nothing else in grudge
 * reads time; tests inject a FakeClock from `grudge/testing`.
 */
export interface Clock {
  /** Current time in milliseconds. */
  now(): number
}

// read once: a getter with a brand check per read, and constant for the process
const TIME_ORIGIN = performance.timeOrigin

/** The monotonic clock in ms on an arbitrary origin (`process.hrtime()`: seconds and nanoseconds). */
function hrtimeMs(): number {
  // the pair is read at once and never escapes: V8 removes the array when it inlines
  // hrtime, so this allocates nothing (performance.now() boxes its result: 16 B a call on
  // Node 20, measured by counting scavenges)
  const t = process.hrtime()
  return t[0] * 1e3 + t[1] / 1e6
}

/**
 * hrtime's origin moved onto the Unix epoch scale of performance.timeOrigin +
 * performance.now(), and how far off that shift may be. performance.now() is read between
 * two hrtime readings, so the shift taken at their midpoint is off by at most half their
 * gap; of a few tries the tightest gap wins (a process preempted between two readings, as
 * on a loaded machine, would otherwise be off by the whole preemption).
 */
function calibrate(): { offsetMs: number; uncertaintyMs: number } {
  let offsetMs = 0
  let gap = Infinity
  for (let i = 0; i < 5; i++) {
    const h0 = hrtimeMs()
    const p = TIME_ORIGIN + performance.now()
    const h1 = hrtimeMs()
    if (h1 - h0 < gap) {
      gap = h1 - h0
      offsetMs = p - (h0 + h1) / 2
    }
  }
  return { offsetMs, uncertaintyMs: gap / 2 }
}
const CALIBRATION = calibrate()
const HRTIME_TO_EPOCH_MS = CALIBRATION.offsetMs

/**
 * The most, in ms, by which {@link systemClock} may differ from performance.timeOrigin +
 * performance.now() (both tick with the same monotonic source; they differ by this constant
 * shift error only): half the tightest gap seen while calibrating at load.
 * @internal
 */
export const CLOCK_CALIBRATION_UNCERTAINTY_MS = CALIBRATION.uncertaintyMs

/**
 * The default clock: monotonic milliseconds on the Unix epoch scale, `process.hrtime()`
 * shifted once onto `performance.timeOrigin + performance.now()`. It never goes backwards
 * inside a process (unlike `Date.now()` under NTP steps) and stays close to wall-clock time,
 * so values written to a frame can be compared with another process's clock. Reading it
 * allocates nothing (`performance.now()` would box its result).
 */
export const systemClock: Clock = {
  now: systemNowMs,
}

/**
 * `systemClock.now()` as a plain function: the structures' hot paths call it directly when
 * their clock is {@link systemClock}, so the call stays monomorphic (and inlined, allocating
 * nothing) even in a process whose other structures use other clocks.
 * @returns monotonic milliseconds on the Unix epoch scale
 */
export function systemNowMs(): number {
  return HRTIME_TO_EPOCH_MS + hrtimeMs()
}

/** Wall-clock milliseconds (`Date.now()`), used only to stamp serialized frames. */
export function wallClockMs(): number {
  return Date.now()
}

/** Handle of a periodic task started by a {@link Ticker}. */
export interface TickerHandle {
  /** Stop the task; idempotent. */
  cancel(): void
}

/**
 * Runs periodic work (Rotator rotation, Bloom checkpoints). The default uses
 * `setInterval` with `unref()`, so a ticker never keeps a process alive; tests inject a
 * FakeTicker from `grudge/testing` that fires only when told to.
 */
export interface Ticker {
  /**
   * Call `fn` every `periodMs` milliseconds until the handle is cancelled.
   * @param periodMs period in ms, a positive finite number
   */
  every(periodMs: number, fn: () => void): TickerHandle
}

/** The longest delay `setInterval` supports, ms (2^31 − 1); a longer one fires at once in Node. */
export const MAX_TIMER_MS = 0x7fffffff

/** The default ticker: unref'd `setInterval` (the period is clamped to 2^31 − 1 ms). */
export const systemTicker: Ticker = {
  every(periodMs, fn) {
    const timer = setInterval(fn, Math.min(periodMs, MAX_TIMER_MS))
    timer.unref()
    return { cancel: () => clearInterval(timer) }
  },
}

/** Longest step handed to the inner ticker by {@link longPeriodTicker}: one hour, ms. */
const LONG_PERIOD_STEP_MS = 3_600_000

/** Most runs of a task one wake-up of {@link longPeriodTicker} catches up on. */
const MAX_CATCH_UP_RUNS = 64

/**
 * A ticker whose periods may exceed what a timer can wait (2^31 − 1 ms, about 24.8
 * days: a 365-day limit would rotate far too early and forgive debt). This is the one home of
 * that rule; every periodic task of grudge goes through it.
 *
 * The inner ticker wakes every `step` ms, where `step` is `periodMs` itself up to one hour and
 * otherwise `periodMs / ⌈periodMs / 1 h⌉` (so a whole number of steps makes a period). The task
 * runs when the clock says a period has passed since it last ran, less half a step of slack:
 * a timer can fire a little before the clock shows a whole period (libuv reads its loop time
 * once per iteration), and without the slack such a wake-up would be skipped and the period
 * doubled. Several periods passed at once (a sleeping laptop, a manual clock's jump) run the
 * task once each, at most 64 times per wake-up. So the schedule follows the clock, not the count
 * of timer callbacks, and a `ManualClock` with a `ManualTicker` drives it in tests.
 * @param inner the ticker that wakes us ({@link systemTicker} or a `ManualTicker`)
 * @param clock the time source, ms
 * @returns a ticker taking any positive finite period in ms
 */
export function longPeriodTicker(inner: Ticker, clock: Clock): Ticker {
  return {
    every(periodMs: number, fn: () => void): TickerHandle {
      const stepMs = periodMs <= LONG_PERIOD_STEP_MS ? periodMs : periodMs / Math.ceil(periodMs / LONG_PERIOD_STEP_MS)
      const dueMs = periodMs - stepMs / 2
      let last = clock.now()
      return inner.every(stepMs, () => {
        const now = clock.now()
        let runs = 0
        while (now - last >= dueMs && runs < MAX_CATCH_UP_RUNS) {
          last += periodMs
          runs++
          fn()
        }
        if (now - last >= dueMs) last = now
      })
    },
  }
}

/**
 * A clock that moves only when told to: the replay CLI drives time with it, and tests use it
 * as `FakeClock` from `grudge/testing`. Time is in milliseconds; it may be set backwards to
 * test how structures cope.
 */
export class ManualClock implements Clock {
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
 * A ticker whose tasks run only on `tick()`, synchronously, so replays and
 * tests of rotation and checkpoints never poll or sleep (`FakeTicker` in `grudge/testing`).
 */
export class ManualTicker implements Ticker {
  private readonly tasks = new Set<{ periodMs: number; fn: () => void }>()
  /** Register a task; `periodMs` is recorded (see `periods()`) but not used. */
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
