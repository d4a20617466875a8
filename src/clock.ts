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

// hrtime's origin moved onto the Unix epoch scale of performance.timeOrigin + performance.now()
const HRTIME_TO_EPOCH_MS = TIME_ORIGIN + performance.now() - hrtimeMs()

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

/** The default ticker: unref'd `setInterval` (the period is clamped to 2^31 − 1 ms). */
export const systemTicker: Ticker = {
  every(periodMs, fn) {
    const timer = setInterval(fn, Math.min(periodMs, 0x7fffffff))
    timer.unref()
    return { cancel: () => clearInterval(timer) }
  },
}
