// Issue 14 item 5 with early growth (spec/rotator.md §1 "Self-sizing", spec/sizing.md §7): the
// telemetry shows a generation started early on a load jump — its shape, that it was started
// early, from when it decides — its memory in the bytes, and the growth in the resizes. Before,
// `generationShapes()` gave the cells of each generation and the resizes only: nothing said
// which one was started early or when it would decide.
import t from 'tap'
import { Rotator } from '../../src/sketch/rotator.js'
import { linear } from '../../src/sketch/decay.js'
import { Limiter } from '../../src/limit/limiter.js'
import { prometheusText } from '../../src/http/prometheus.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { SKETCH_BYTES_PER_CELL } from '../../src/sketch/shape.js'
import { METER_BYTES } from '../../src/sketch/rotator-sizing.js'
import { parsePrometheusText, promSample } from '../fixtures/prometheus-text.js'

const RATE = 1
const HI = 10 // A = hi / rate = 10 s, the promotion-age guard
const A = (HI / RATE) * 1000

function sized(generations: number, periodMs: number, grow: () => boolean) {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 4, decay: linear(RATE), hi: HI },
    generations,
    periodMs,
    clock,
    ticker,
    seed: 9,
    sizing: { sizeNextGeneration: () => (grow() ? 1024 : 64), maxCellsPerLevel: 1024, growEarlyWhen: grow },
  })
  return { r, clock, ticker }
}

t.test('Rotator, N = 2: an early generation pending, then deciding, then retired', async (t) => {
  let big = false
  const { r, clock, ticker } = sized(2, 10_000, () => big)
  r.rotate() // [1024, 64]: sized while `big` is false → 64 appended
  r.rotate() // [64, 64], last rotation at t = 0
  t.same(r.earlyGenerations(), [], 'none before a jump')
  const resizes = r.resizes
  big = true
  clock.set(7000)
  ticker.tick() // the youngest is replaced by a 1,024-cell generation at 7 s
  big = false
  // the schedule of spec/rotator.md: with N = 2 it is promoted at the first check at which it is
  // A = 10 s old (the period due at 10 s waits for it): from 17 s
  const pending = { generation: 1, cellsPerLevel: 1024, twin: false, decidesAtMs: 7000 + A, deciding: false }
  t.same(r.earlyGenerations(), [pending], 'pending at the youngest, deciding from created + A')
  t.equal(r.earlyGrowths, 1)
  t.equal(r.resizes, resizes + 1, 'the early growth is a resize')
  t.equal(r.sizeBytes(), METER_BYTES + 4 * (64 + 1024) * SKETCH_BYTES_PER_CELL, 'its cells are in the bytes')
  for (const now of [10_000, 16_000]) {
    clock.set(now)
    ticker.tick()
    t.same(r.earlyGenerations(), [pending], `t = ${now}: still pending`)
  }
  clock.set(17_000)
  ticker.tick()
  t.same(r.generationCellsPerLevel, [1024, 64], 'promoted at 17 s')
  t.same(
    r.earlyGenerations(),
    [{ generation: 0, cellsPerLevel: 1024, twin: false, decidesAtMs: 17_000, deciding: true }],
    'deciding since the rotation that promoted it',
  )
  clock.set(27_000)
  ticker.tick()
  t.equal(r.rotations, 4)
  t.same(r.earlyGenerations(), [], 'retired at the next rotation')
  t.equal(r.earlyGrowths, 1, 'the count stays')
  r.close()
})

t.test('Rotator, N = 3: the rotation before it must be due first', async (t) => {
  // N = 3, periodMs = A / 2 = 5 s (the amnesty guard's least); all three created at 0
  let big = false
  const { r, clock, ticker } = sized(3, 5000, () => big)
  for (let i = 0; i < 3; i++) r.rotate() // [64, 64, 64], all created at 0 (the first were at the budget)
  t.same(r.generationCellsPerLevel, [64, 64, 64])
  clock.set(5000)
  ticker.tick()
  t.equal(r.rotations, 3, 'due at 5 s, but G1 is not A = 10 s old')
  big = true
  clock.set(6000)
  ticker.tick() // the youngest (k = 2) replaced at 6 s
  big = false
  // first the promotion of G1 (due by the period since 5 s, A old at 10 s), then its own, at
  // once after that one but only when it is A old: 6 s + 10 s = 16 s
  t.same(r.earlyGenerations(), [
    { generation: 2, cellsPerLevel: 1024, twin: false, decidesAtMs: 16_000, deciding: false },
  ])
  clock.set(9000)
  ticker.tick()
  t.equal(r.rotations, 3, 'not at 9 s')
  clock.set(10_000)
  ticker.tick()
  t.equal(r.rotations, 4, 'G1 promoted at 10 s')
  t.same(r.earlyGenerations(), [
    { generation: 1, cellsPerLevel: 1024, twin: false, decidesAtMs: 16_000, deciding: false },
  ])
  clock.set(15_000)
  ticker.tick()
  t.equal(r.rotations, 4, 'not yet A old at 15 s')
  clock.set(16_000)
  ticker.tick()
  t.equal(r.rotations, 5, 'promoted at 16 s, as stated')
  t.same(r.earlyGenerations(), [
    { generation: 0, cellsPerLevel: 1024, twin: false, decidesAtMs: 16_000, deciding: true },
  ])
  r.close()
})

t.test('a fixed shape reports no early generations', async (t) => {
  const r = new Rotator({ sketch: { levels: 2, cellsPerLevel: 64 }, periodMs: 1000, ticker: new FakeTicker() })
  t.same(r.earlyGenerations(), [])
  t.equal(r.earlyGrowths, 0)
  r.close()
})

t.test('Limiter: stats() and the Prometheus text show the early generation, its bytes and resizes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  // the default budget and period: burst 10, maxDebt 100 → A = 100 s = periodMs
  const l = new Limiter({ clock, ticker, limit: { rate: 1, burst: 10 } })
  const policyA = 100_000
  let key = 0
  const second = (perSecond: number) => {
    const t0 = clock.now()
    for (let i = 0; i < perSecond; i++) {
      clock.set(t0 + (i * 1000) / perSecond)
      l.decide(`k${key++}`)
    }
    clock.set(t0 + 1000)
    ticker.tick()
  }
  // 250 s at 100 fresh keys/s: sized down below the budget
  for (let s = 0; s < 250; s++) second(100)
  const before = l.telemetry.stats().perPolicy.limit!
  t.same(before.early, [], 'no early generation at a steady load')
  // a 20× jump: a check grows the youngest early
  let grownAt = NaN
  for (let s = 0; s < 20 && Number.isNaN(grownAt); s++) {
    second(2000)
    if (l.telemetry.stats().perPolicy.limit!.early.length > 0) grownAt = clock.now()
  }
  t.ok(grownAt <= 252_000, `grown early ${grownAt - 250_000} ms after the jump`)
  const s = l.telemetry.stats()
  const m = s.perPolicy.limit!
  t.equal(m.early.length, 1)
  const e = m.early[0]
  t.equal(e.twin, false, 'in process: the youngest replaced, not a twin')
  t.equal(e.generation, 1, 'at the youngest (N = 2)')
  t.equal(e.cellsPerLevel, m.cellsPerLevel[1], 'its cells are the youngest shape')
  t.ok(e.cellsPerLevel > m.cellsPerLevel[0], `larger than the deciding one: ${e.cellsPerLevel} > ${m.cellsPerLevel[0]}`)
  t.equal(e.deciding, false)
  // the last rotation was at or before the growth, so only the promotion-age guard remains
  t.equal(e.decidesAtMs, grownAt + policyA, 'decides once it is A = maxDebt / rate old')
  t.equal(m.earlyGrowths - before.earlyGrowths, 1, 'one early growth')
  t.ok(m.resizes >= before.resizes + 1, `resizes ${before.resizes} → ${m.resizes}`)
  const cellsBytes = m.cellsPerLevel.reduce((a, c) => a + 4 * c * SKETCH_BYTES_PER_CELL, 0)
  t.equal(m.sizeBytes, METER_BYTES + cellsBytes, 'the bytes hold the early generation')
  t.same(s.generations?.limit?.early, m.early, 'stats().generations says the same')

  const text = await prometheusText(s)
  const fam = parsePrometheusText(text) // throws on invalid text: names, HELP/TYPE once, labels, values
  const labels = { policy: 'limit', generation: '1', twin: 'false' }
  t.equal(promSample(fam, 'grudge_generation_early_cells_per_level', labels), e.cellsPerLevel)
  t.equal(promSample(fam, 'grudge_generation_early_decides_at_seconds', labels), e.decidesAtMs / 1000)
  t.equal(promSample(fam, 'grudge_generation_early_deciding', labels), 0)
  t.equal(promSample(fam, 'grudge_early_growths', { policy: 'limit' }), m.earlyGrowths)
  t.equal(promSample(fam, 'grudge_resizes', { policy: 'limit' }), m.resizes)
  t.equal(promSample(fam, 'grudge_policy_memory_bytes', { policy: 'limit' }), m.sizeBytes)
  t.equal(fam.get('grudge_generation_early_cells_per_level')?.type, 'gauge')

  // it decides from the stated time: the check at that second promotes it
  while (clock.now() < e.decidesAtMs) second(200)
  const after = l.telemetry.stats().perPolicy.limit!
  t.equal(after.cellsPerLevel[0], e.cellsPerLevel, 'it decides')
  t.same(after.early, [{ ...e, generation: 0, decidesAtMs: e.decidesAtMs, deciding: true }], 'marked as deciding')
  const text2 = parsePrometheusText(await prometheusText(l.telemetry.stats()))
  t.equal(promSample(text2, 'grudge_generation_early_deciding', { policy: 'limit', generation: '0', twin: 'false' }), 1)
  await l.close()
})
