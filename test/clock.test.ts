import t from 'tap'
import { systemClock, systemTicker, wallClockMs } from '../src/clock.js'

// No sleeping: the system clock is only read back to back, and the ticker's timer is started
// and cancelled without waiting for it.

t.test('systemClock is monotonic and on the Unix epoch scale', async (t) => {
  let prev = systemClock.now()
  for (let i = 0; i < 1000; i++) {
    const now = systemClock.now()
    if (now < prev) t.fail(`went backwards: ${prev} → ${now}`)
    prev = now
  }
  t.pass('1000 readings never went backwards')
  // Same scale as Date.now(): within a minute of it (the two drift apart only by NTP steps).
  t.ok(Math.abs(systemClock.now() - Date.now()) < 60_000, 'close to Date.now()')
  t.ok(Math.abs(wallClockMs() - Date.now()) < 60_000, 'wallClockMs is Date.now()')
})

t.test(
  'systemClock reads as performance.timeOrigin + performance.now() (process.hrtime() on that scale)',
  async (t) => {
    for (let i = 0; i < 100; i++) {
      const before = performance.timeOrigin + performance.now()
      const now = systemClock.now()
      const after = performance.timeOrigin + performance.now()
      // the two clocks are tied once at load, within microseconds; 1 ms leaves room for that
      if (!(now >= before - 1 && now <= after + 1)) t.fail(`${now} outside [${before}, ${after}] ± 1 ms`)
    }
    t.pass('100 readings between two performance readings, ± 1 ms')
  },
)

t.test('systemTicker returns a cancellable handle', async (t) => {
  let runs = 0
  const handle = systemTicker.every(2 ** 40, () => runs++)
  handle.cancel()
  handle.cancel()
  t.equal(runs, 0, 'nothing runs synchronously; cancel is idempotent')
})
