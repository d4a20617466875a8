import type { Clock, Ticker, TickerHandle } from '../clock.js'

/** Longest period handed to the inner ticker: one hour. */
const MAX_STEP_MS = 3_600_000

/**
 * A ticker whose periods may exceed what a timer can wait (setInterval clamps to
 * 2^31 − 1 ms ≈ 24.8 days, which would rotate a 365-day limit far too early and forgive
 * debt). The inner ticker wakes at most every hour; the task runs when the clock says a
 * whole period has passed since it last ran. So rotation follows the clock, not the count
 * of timer callbacks, and a FakeClock + FakeTicker drive it in tests.
 * @param inner the ticker that wakes us (systemTicker or a FakeTicker)
 * @param clock the time source in ms
 */
export function clockTicker(inner: Ticker, clock: Clock): Ticker {
  return {
    every(periodMs: number, fn: () => void): TickerHandle {
      let last = clock.now()
      return inner.every(Math.min(periodMs, MAX_STEP_MS), () => {
        const now = clock.now()
        // several periods may have passed (a sleeping laptop, a FakeClock jump): run once per period
        let runs = 0
        while (now - last >= periodMs && runs < 64) {
          last += periodMs
          runs++
          fn()
        }
        if (now - last >= periodMs) last = now
      })
    },
  }
}
