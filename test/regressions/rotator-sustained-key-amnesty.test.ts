import t from 'tap'
import { DebtMeter } from '../../src/limit/debt-meter.js'
import { resolveSketchOptions } from '../../src/limit/options.js'
import { sipHash } from '../../src/hash/hasher.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

// Found by `grudge replay` (issue 7): a key held at its limit across rotations is given back
// about one burst per rotation. A fresh generation sees only the deltas of admitted requests;
// for a key that keeps sending above its rate, admitted requests arrive at exactly the drain
// rate, so the fresh generation's debt stays near 0 while the true debt stays near the burst.
// When that generation becomes the oldest it admits a burst the exact meter refuses. The
// amnesty guard ((N − 1) · periodMs ≥ maxDebt / rate) assumes the missed debt drains, which
// it does not while the key keeps sending. Marked todo until the rotator issue decides a fix
// (e.g. younger generations also counting refused attempts, clamped at maxDebt).
t.test(
  'a key sending 1.5 requests/s for 30 min against 1/s, burst 20, is admitted 1,818 times',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const meter = new DebtMeter(
      { rate: 1, burst: 20 },
      resolveSketchOptions({ clock, ticker, generations: 2, hasher: sipHash(1) }),
      'regression',
    )
    // period = maxDebt (10 × 20) / rate 1 / (N − 1) = 200 s: 8 rotations in 1,798 s
    t.equal(meter.periodMs, 200_000)
    let admitted = 0
    for (let ms = 0; ms < 1_800_000; ms += 2000) {
      clock.set(ms)
      ticker.tick()
      for (let j = 0; j < 3; j++) if ((meter.consume('k') as { admitted: boolean }).admitted) admitted++
    }
    await meter.close()
    // exact meter: the debt never drains to 0 and is full (20) after the last step, so
    // admitted = final debt + drained = 20 + 1 × 1798
    t.equal(admitted, 1818, `admitted ${admitted}`)
  },
)
