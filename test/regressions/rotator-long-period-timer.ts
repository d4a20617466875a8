// The default ticker clamps its setInterval period to 2^31 − 1 ms (about 24.8 days), the
// timer limit. A Rotator whose periodMs is longer (what the amnesty guard demands for a
// slow drain: linear(1/86400), hi 100 needs 100 days) therefore rotated every 24.8 days,
// promoting a fresh generation long before the debts it missed had drained: exactly the
// early amnesty the guard exists to prevent. With the default ticker and such a period the
// Rotator goes through longPeriodTicker (src/clock.ts): it wakes at a fraction of the period
// and rotates only once periodMs has passed on the clock.
import t from 'tap'
import { systemTicker } from '../../src/clock.js'
import { Rotator, linear } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'

t.test('a period above the timer limit is honoured with the default ticker', async (t) => {
  const calls: { periodMs: number; fn: () => void; cancelled: boolean }[] = []
  const real = systemTicker.every.bind(systemTicker)
  systemTicker.every = (periodMs, fn) => {
    const call = { periodMs, fn, cancelled: false }
    calls.push(call)
    return { cancel: () => void (call.cancelled = true) }
  }
  t.teardown(() => void (systemTicker.every = real))

  const day = 86_400_000
  const clock = new FakeClock()
  const periodMs = 100 * day // linear(1/86400) with hi 100: 100 days to drain
  const r = new Rotator({
    sketch: { decay: linear(1 / 86_400), hi: 100, levels: 2, cellsPerLevel: 64, seed: 1 },
    periodMs,
    clock,
  })
  t.equal(calls.length, 1)
  const { periodMs: timerMs, fn } = calls[0]
  t.ok(timerMs <= 0x7fffffff, `timer period ${timerMs} within the setInterval limit`)
  r.update('k', 100)
  // fire the timer as setInterval would, every timerMs, for 99 days: no rotation
  while (clock.now() + timerMs < periodMs - 1) {
    clock.advance(timerMs)
    fn()
  }
  t.equal(r.rotations, 0, 'no rotation before periodMs has passed')
  clock.set(periodMs)
  fn()
  t.equal(r.rotations, 1, 'rotates once periodMs has passed')
  r.close()
  t.equal(calls[0].cancelled, true, 'close cancels the timer')

  const short = new Rotator({ sketch: { levels: 1, cellsPerLevel: 8 }, periodMs: 1000, clock })
  t.equal(calls[1].periodMs, 1000, 'short periods use the timer as before')
  calls[1].fn()
  t.equal(short.rotations, 0, 'a wake-up before the clock has moved rotates nothing: rotation follows the clock')
  clock.advance(999)
  calls[1].fn()
  t.equal(short.rotations, 1, 'a wake-up a little early (libuv loop time) still rotates')
  short.close()
})
