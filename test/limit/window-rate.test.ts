import t from 'tap'
import { windowRate } from '../../src/limit/window-rate.js'
import { DebtMeter, type DebtMeterOptions } from '../../src/limit/debt-meter.js'
import { resolveSketchOptions } from '../../src/limit/options.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('the anchors documented windows map to rate = max / window per second, burst = max', async (t) => {
  // FRL README: `max: 100, timeWindow: 60000` (one minute); ERL README: `windowMs: 15 * 60 * 1000, limit: 100`
  t.same(windowRate({ max: 100, timeWindow: 60_000 }), { rate: 100 / 60, burst: 100 })
  t.same(windowRate({ limit: 100, windowMs: 15 * 60 * 1000 }), { rate: 100 / 900, burst: 100 })
  // FRL's defaults: max 1000 per 60 000 ms; ERL's defaults: limit 5 per 60 000 ms
  t.same(windowRate({ max: 1000, timeWindow: 60_000 }), { rate: 1000 / 60, burst: 1000 })
  t.same(windowRate({ limit: 5, windowMs: 60_000 }), { rate: 5 / 60, burst: 5 })
})

t.test(
  'a debt meter on the result admits max at once and max per window in the long run, like the window',
  async (t) => {
    const clock = new FakeClock(0)
    const sketch = resolveSketchOptions({ clock, ticker: new FakeTicker() }, '')
    const m = new DebtMeter(windowRate({ limit: 10, windowMs: 1000 }) satisfies DebtMeterOptions, sketch, 'w')
    let admitted = 0
    for (let i = 0; i < 20; i++) if ((m.consume('k') as { admitted: boolean }).admitted) admitted++
    t.equal(admitted, 10, 'a burst of max from a fresh key')
    // 10 s more at 100 requests per second: the window admits 10 per window, 100 in all
    for (let ms = 1; ms <= 10_000; ms += 10) {
      clock.set(ms)
      if ((m.consume('k') as { admitted: boolean }).admitted) admitted++
    }
    t.ok(admitted >= 10 + 99 && admitted <= 10 + 101, `the long-run rate is max / window: ${admitted - 10} in 10 s`)
    await m.close()
  },
)

t.test('bad shapes and values are coded errors', async (t) => {
  const bad: unknown[] = [
    null,
    {},
    { max: 1, timeWindow: 1000, limit: 1 },
    { max: 0, timeWindow: 1000 },
    { max: 1, timeWindow: '1 minute' },
    { limit: 1, windowMs: -1 },
    { limit: NaN, windowMs: 1 },
    { max: 1 },
  ]
  for (const w of bad) t.throws(() => windowRate(w as never), { code: 'ERR_GRUDGE_OPTION_INVALID' }, JSON.stringify(w))
})
