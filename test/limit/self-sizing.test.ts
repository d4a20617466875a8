// A policy sized by its memory budget sizes each generation from the measured load (issue #14):
// it shrinks under light traffic, grows back under heavy traffic, never exceeds the budget,
// reports its shapes in stats() and Prometheus, and says once when the budget is too small.
import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import { DEFAULT_POLICY_MEMORY_BYTES } from '../../src/limit/options.js'
import { Telemetry } from '../../src/limit/telemetry.js'
import { localRotatorOf } from '../../src/limit/store.js'
import { prometheusText } from '../../src/http/prometheus.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

/** Drive `perSecond` fresh keys a second for `seconds`, ticking once a second (the rotator's checks). */
function drive(l: Limiter, clock: FakeClock, ticker: FakeTicker, perSecond: number, seconds: number, tag: string) {
  let refused = 0
  for (let s = 0; s < seconds; s++) {
    const t0 = clock.now()
    for (let i = 0; i < perSecond; i++) {
      clock.set(t0 + (i * 1000) / perSecond)
      if (!(l.decide(`${tag}:${s}:${i}`) as { admitted: boolean }).admitted) refused++
    }
    clock.set(t0 + 1000)
    ticker.tick()
  }
  return refused
}

t.test('light traffic shrinks the generations below the budget; heavy traffic grows them back', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const l = new Limiter({ clock, ticker, limit: { rate: 1, burst: 10 } })
  const budget = DEFAULT_POLICY_MEMORY_BYTES
  t.same(l.telemetry.stats().generations?.limit?.cellsPerLevel, [65536, 65536], 'starts at the budget')
  // 200 fresh keys/s at rate 1: ρ ≤ 0.05 needs 4,000 cells, so 4,096
  drive(l, clock, ticker, 200, 400, 'a')
  const small = l.telemetry.stats().generations!.limit!
  t.ok(Math.max(...small.cellsPerLevel) <= 8192, `shrunk to ${small.cellsPerLevel.join(', ')}`)
  t.ok(small.resizes >= 1)
  t.ok(l.limit!.store.sizeBytes() <= budget / 8, 'uses a small part of the budget')
  // a 10× jump, 2,000 fresh keys/s: ρ ≤ 0.05 needs 40,000 cells; early growth starts a larger
  // generation, and the smaller one decides (at ρ ≈ 0.5) until it may be promoted
  const refused = drive(l, clock, ticker, 2000, 300, 'b')
  const big = l.telemetry.stats().generations!.limit!
  t.ok(Math.min(...big.cellsPerLevel) >= 32768, `grew back to ${big.cellsPerLevel.join(', ')}`)
  t.ok(l.limit!.store.sizeBytes() <= budget, 'never above the budget (the 2 KiB load meter inside it)')
  t.ok(refused / (2000 * 300) < 1e-3, `fresh keys refused while growing: ${refused}`)
  const text = await prometheusText(l.telemetry.stats())
  t.match(text, /grudge_generation_cells_per_level\{policy="limit",generation="0"\} \d+/)
  t.match(text, /grudge_resizes\{policy="limit"\} [1-9]/)
  t.match(text, /grudge_load_factor /)
  await l.close()
})

t.test('an explicit cellsPerLevel keeps a fixed shape: no resizes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const l = new Limiter({ clock, ticker, levels: 4, cellsPerLevel: 4096, limit: { rate: 1, burst: 10 } })
  drive(l, clock, ticker, 5, 60, 'a')
  t.same(l.telemetry.stats().generations?.limit, {
    cellsPerLevel: [4096, 4096],
    resizes: 0,
    earlyGrowths: 0,
    early: [],
  })
  await l.close()
})

t.test("the budget notice waits for a whole period and names its figures, not a ramp's first second", async (t) => {
  // a ramp: 50 fresh keys in the first second, then 100/s (ρ 0.39 on the budget's 256 cells:
  // (78 KiB − 2 KiB − the telemetry's 36 KiB) / (4 × 16 B × 2.5: two generations and the half of
  // one a growth holds while it folds) = 256;
  // the sizer's ρ ≤ 0.05 misses at every check from the first); the period is maxDebt / rate = 100 s
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const warned: string[] = []
  const telemetry = new Telemetry({ clock, warn: (m) => warned.push(m) })
  const l = new Limiter({ clock, ticker, telemetry, memory: '78KB', limit: { rate: 1, burst: 10 } })
  t.equal(l.limit!.periodMs, 100_000)
  const notices = () => warned.filter((m) => /asks for \d+ cells per level/.test(m))
  drive(l, clock, ticker, 50, 1, 'ramp')
  drive(l, clock, ticker, 100, 98, 'steady')
  t.equal(notices().length, 0, 'no notice from the check windows before the first rotation')
  const counted = localRotatorOf(l.limit!.store)!.sizingLimitCount
  t.ok(counted >= 99, `the checks' misses are counted (${counted})`)
  drive(l, clock, ticker, 100, 20, 'steady2')
  t.equal(notices().length, 1, 'one notice, at the first rotation')
  const cost = Number(/for ([\d.]+) admitted cost\/s/.exec(notices()[0])?.[1])
  // the life's mean (50 + 99 × 100) / 100 s: the steady load's, not the first second's 50
  t.ok(cost >= 95 && cost <= 100.5, `the period's admitted cost/s: ${cost}`)
  t.match(notices()[0], /in the last 100\.0 s \(busiest check window 100\.0 cost\/s\)/)
  t.match(notices()[0], `at 256: load factor ${(cost / 256).toFixed(3)} > 0.05`)
  drive(l, clock, ticker, 1000, 110, 'more')
  t.equal(notices().length, 1, 'still once: a later, larger shortfall is counted, not logged again')
  await l.close()
})

t.test('a budget that cannot meet the load is kept, and said once through warn with the figures', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const warned: string[] = []
  const telemetry = new Telemetry({ clock, warn: (m) => warned.push(m) })
  const l = new Limiter({ clock, ticker, telemetry, memory: '78KB', limit: { rate: 1, burst: 10 } })
  drive(l, clock, ticker, 500, 250, 'a')
  const notices = warned.filter((m) => /asks for \d+ cells per level/.test(m))
  t.equal(notices.length, 1, 'once')
  t.match(
    notices[0],
    /policy limit:default's sizer asks for \d+ cells per level .* budget of 79872 bytes holds 256; kept 256/,
  )
  // the figures at the size kept say which target it misses: ρ of the admitted cost it names
  const cost = Number(/for ([\d.]+) admitted cost\/s/.exec(notices[0])?.[1])
  const rho = cost / 256
  t.ok(rho > 0.05, `ρ ${rho} over the sizer's 0.05`)
  // both figures are printed rounded (cost to 0.1, ρ to 0.001): ρ within their roundings
  const printed = Number(/at 256: load factor ([\d.]+) > 0\.05/.exec(notices[0])?.[1])
  t.ok(Math.abs(printed - rho) <= 0.05 / 256 + 0.0005, `at 256: load factor ${printed}, ${rho} from the cost`)
  t.match(notices[0], /predicted false-reject rate \S+ [>≤] 0\.00001/)
  t.equal(l.limit!.store.sizeBytes(), 2048 + 2 * 4 * 256 * 16, 'the meter and the largest shape that fits beside it')
  t.ok(l.limit!.store.sizeBytes() <= 79872, 'never above the budget')
  await l.close()
})
