// Under an overload of a small budget (`memory: '64KB'`, 3,000 fresh requests/s at rate 1 on
// 256 cells per level) `stats().loadFactor` read 0: the keys the debt meter refused (innocents,
// ~100,000 over the window) counted as hot keys, each taking `rate` of the drain out of the
// background, more than the whole admitted load, so ρ = max(0, λc − H·r) / (M·r) was clamped
// to 0 exactly when the level could not drain what it was fed. ρ is now the admitted cost over
// the level's drain, as the self-sizing measures it. Since issue 14's telemetry-honesty fix it is
// the offered cost (admitted plus refused requests, these at most what keys within their limit
// can send) of the latest check window over the drain: the admitted figure saturates near 1 in an
// overload, and the model it feeds (spec/sizing.md §2.3) takes the offered load.
import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import { Telemetry } from '../../src/limit/telemetry.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('a Limiter of 4 × 256 cells (78 KiB) under 3,000 fresh requests/s reads ρ > 1', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const l = new Limiter({
    limit: { rate: 1, burst: 10 },
    // (78 KiB − the 2 KiB meter − the telemetry's 36 KiB) / (4 × 16 B × 2.5: two generations and the
    // half of one a growth holds while it folds) = 256 (64 KiB before the telemetry held its 6 KiB
    // of refused-key summaries, 70 KiB before the budget held that half generation)
    memory: '78KB',
    clock,
    ticker,
    telemetry: new Telemetry({ clock, warn: () => {} }),
  })
  let admitted = 0
  for (let s = 0; s < 20; s++) {
    for (let i = 0; i < 3000; i++) if ((l.decide(`c${s}:${i}`) as { admitted: boolean }).admitted) admitted++
    clock.advance(1000)
    ticker.tick()
  }
  const st = l.telemetry.stats()
  t.ok(st.hotKeys > 10_000, `many refused keys (${st.hotKeys})`)
  const M = st.generations?.limit?.cellsPerLevel[0] ?? 0
  t.equal(M, 256, 'the budget holds 256 cells per level')
  // ρ = offered per second / (M × rate): every request a fresh key's, refused at most once, so all
  // 3,000 of the last second count
  t.ok(Math.abs(st.loadFactor - 3000 / M) < 0.01 * (3000 / M), `ρ ${st.loadFactor} vs ${3000 / M}`)
  t.ok(st.loadFactor > admitted / 20 / M, `above the admitted ρ ${admitted / 20 / M}`)
  t.ok(st.loadFactor > 1, 'over 1: the level cannot drain its load')
  await l.close()
})

t.test('the Telemetry alone: refused keys do not take ρ to 0', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 1000 })
  tel.addSketch({
    policy: 'limit',
    levels: 4,
    cellsPerLevel: 256,
    sizeBytes: () => 0,
    debt: { rate: 1, burst: 10, cost: 1, maxDebt: 100 },
  })
  for (let s = 0; s < 4; s++) {
    for (let i = 0; i < 512; i++) {
      tel.request(`a${s}:${i}`)
      tel.policy('limit', true)
    }
    for (let i = 0; i < 2000; i++) {
      tel.request(`r${s}:${i}`)
      tel.policy('limit', false)
    }
    clock.advance(1000)
  }
  const st = tel.stats()
  // 512 admitted and 2,000 refused (each a key refused once) per second on 256 cells per level at rate 1
  t.ok(Math.abs(st.loadFactor - 2512 / 256) < 1e-9, `ρ ${st.loadFactor}`)
})
