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

/**
 * The default clock: monotonic milliseconds on the Unix epoch scale,
 * `performance.timeOrigin + performance.now()`. It never goes backwards inside a process
 * (unlike `Date.now()` under NTP steps) and stays close to wall-clock time, so values
 * written to a frame can be compared with another process's clock.
 */
export const systemClock: Clock = {
  now: () => TIME_ORIGIN + performance.now(),
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

/** The default ticker: unref'd `setInterval` (the period is clamped to 2^31 − 1 ms). */
export const systemTicker: Ticker = {
  every(periodMs, fn) {
    const timer = setInterval(fn, Math.min(periodMs, 0x7fffffff))
    timer.unref()
    return { cancel: () => clearInterval(timer) }
  },
}
