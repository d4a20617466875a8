// Issue 14 item 5 with early growth (spec/rotator.md §1 "Self-sizing", spec/sizing.md §7): the
// telemetry shows the generations grown early on a load jump (folded in place) — their shape,
// that they were grown early, from when each decides — their memory in the bytes, and the
// growth in the resizes. Before,
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
import { telemetryMaxBytes } from '../../src/limit/telemetry.js'
import { parsePrometheusText, promSample } from '../fixtures/prometheus-text.js'

const RATE = 1
const HI = 10 // A = hi / rate = 10 s, the promotion-age guard

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

t.test(
  'Rotator, N = 2: an early growth folds both generations; each keeps its age, deciding and schedule',
  async (t) => {
    let big = false
    const { r, clock, ticker } = sized(2, 10_000, () => big)
    r.rotate() // [1024, 64]: sized while `big` is false → 64 appended
    r.rotate() // [64, 64], last rotation at t = 0
    t.same(r.earlyGenerations(), [], 'none before a jump')
    const resizes = r.resizes
    big = true
    clock.set(7000)
    ticker.tick() // both generations folded into 1,024 cells per level at 7 s
    big = false
    // the deciding one keeps deciding (since the last rotation, 0 s); the youngest, created at the
    // rotation at 0 s, is promoted when the period is due at 10 s, when it is also A = 10 s old
    t.same(
      r.earlyGenerations(),
      [
        { generation: 0, cellsPerLevel: 1024, twin: false, decidesAtMs: 0, deciding: true },
        { generation: 1, cellsPerLevel: 1024, twin: false, decidesAtMs: 10_000, deciding: false },
      ],
      'both folded: the deciding one decides on, the youngest keeps its schedule',
    )
    t.equal(r.earlyGrowths, 1)
    t.equal(r.resizes, resizes + 1, 'the early growth is a resize')
    t.equal(r.sizeBytes(), METER_BYTES + 4 * (1024 + 1024) * SKETCH_BYTES_PER_CELL, 'the folded cells are in the bytes')
    clock.set(9000)
    ticker.tick()
    t.equal(r.rotations, 2, 'not before the period')
    clock.set(10_000)
    ticker.tick()
    t.same(r.generationCellsPerLevel, [1024, 64], 'promoted at 10 s, on schedule')
    t.same(
      r.earlyGenerations(),
      [{ generation: 0, cellsPerLevel: 1024, twin: false, decidesAtMs: 10_000, deciding: true }],
      'deciding since the rotation that promoted it',
    )
    clock.set(20_000)
    ticker.tick()
    t.equal(r.rotations, 4)
    t.same(r.earlyGenerations(), [], 'retired at the next rotation')
    t.equal(r.earlyGrowths, 1, 'the count stays')
    r.close()
  },
)

t.test('Rotator, N = 3: folded generations are promoted by the schedule and the promotion-age guard', async (t) => {
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
  ticker.tick() // all three folded at 6 s
  big = false
  // G1 promoted when A old (10 s), G2 a period after that (15 s), both ages kept from 0 s
  t.same(r.earlyGenerations(), [
    { generation: 0, cellsPerLevel: 1024, twin: false, decidesAtMs: 0, deciding: true },
    { generation: 1, cellsPerLevel: 1024, twin: false, decidesAtMs: 10_000, deciding: false },
    { generation: 2, cellsPerLevel: 1024, twin: false, decidesAtMs: 15_000, deciding: false },
  ])
  clock.set(9000)
  ticker.tick()
  t.equal(r.rotations, 3, 'not at 9 s')
  clock.set(10_000)
  ticker.tick()
  t.equal(r.rotations, 4, 'G1 promoted at 10 s')
  t.same(r.generationCellsPerLevel, [1024, 1024, 64])
  clock.set(14_000)
  ticker.tick()
  t.equal(r.rotations, 4, 'not at 14 s')
  clock.set(15_000)
  ticker.tick()
  t.equal(r.rotations, 5, 'promoted at 15 s, as stated')
  t.same(r.earlyGenerations(), [
    { generation: 0, cellsPerLevel: 1024, twin: false, decidesAtMs: 15_000, deciding: true },
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
  t.equal(m.early.length, 1, 'both generations were below the new size: the deciding one folds first')
  const [e0] = m.early
  t.same(
    [e0.generation, e0.deciding, e0.twin, e0.cellsPerLevel],
    [0, true, false, m.cellsPerLevel[0]],
    'the deciding one grew, in place (not a twin)',
  )
  t.equal(m.cellsPerLevel[1], before.cellsPerLevel[1], 'the youngest waits its turn at its size (one fold at a time)')
  t.equal(m.earlyGrowths - before.earlyGrowths, 1, 'one early growth')
  t.ok(m.resizes >= before.resizes + 1, `resizes ${before.resizes} → ${m.resizes}`)
  const bytesOf = (cells: readonly number[]) => cells.reduce((a, c) => a + 4 * c * SKETCH_BYTES_PER_CELL, 0)
  // the fold is lazy (4 levels × ≥ 4,096 cells > the 8,192-cell slice) and still in progress (no
  // turn of the event loop yet): the smaller generation it replaces is held until it ends
  t.ok(
    m.cellsPerLevel[0] * 4 > 8192,
    `a lazy fold: ${m.cellsPerLevel.join(', ')} cells per level, from ${before.cellsPerLevel.join(', ')}`,
  )
  t.equal(
    m.sizeBytes,
    METER_BYTES + bytesOf(m.cellsPerLevel) + bytesOf([before.cellsPerLevel[0]]),
    'the bytes hold the live generations and the smaller one the fold replaces',
  )
  // the policy's budget less the limiter's telemetry: what its store may hold
  const storeBudget = l.sketch.memoryBytes! - telemetryMaxBytes()
  t.ok(m.sizeBytes <= storeBudget, `within the budget (${m.sizeBytes} ≤ ${storeBudget})`)
  t.same(s.generations?.limit?.early, m.early, 'stats().generations says the same')
  const fam = parsePrometheusText(await prometheusText(s)) // throws on invalid text: names, HELP/TYPE once, labels, values
  const labels0 = { policy: 'limit', generation: '0', twin: 'false' }
  t.equal(promSample(fam, 'grudge_generation_early_cells_per_level', labels0), e0.cellsPerLevel)
  t.equal(promSample(fam, 'grudge_generation_early_deciding', labels0), 1)
  t.equal(promSample(fam, 'grudge_early_growths', { policy: 'limit' }), m.earlyGrowths)
  t.equal(promSample(fam, 'grudge_resizes', { policy: 'limit' }), m.resizes)
  t.equal(promSample(fam, 'grudge_policy_memory_bytes', { policy: 'limit' }), m.sizeBytes)
  t.equal(fam.get('grudge_generation_early_cells_per_level')?.type, 'gauge')

  // the folds go on a slice per turn of the event loop, the youngest's after the deciding one's:
  // then the folded generations alone
  const folded = METER_BYTES + 2 * 4 * e0.cellsPerLevel * SKETCH_BYTES_PER_CELL
  let peak = m.sizeBytes
  for (let turn = 0; turn < 1000 && l.telemetry.stats().perPolicy.limit!.sizeBytes !== folded; turn++) {
    await new Promise((resolve) => setImmediate(resolve))
    peak = Math.max(peak, l.telemetry.stats().perPolicy.limit!.sizeBytes)
  }
  t.ok(peak <= storeBudget, `within the budget at every turn (peak ${peak} ≤ ${storeBudget})`)
  const f = l.telemetry.stats()
  const n = f.perPolicy.limit!
  t.equal(n.sizeBytes, folded, 'the folds ended: the folded generations')
  t.equal(n.early.length, 2, 'both grown early')
  const e1 = n.early[1]
  t.equal(e1.twin, false, 'in process: folded in place, not a twin')
  t.equal(e1.generation, 1, 'the youngest (N = 2)')
  t.equal(e1.cellsPerLevel, n.cellsPerLevel[1], 'its cells are the youngest shape')
  t.equal(e1.cellsPerLevel, e0.cellsPerLevel, 'the size of the growth')
  t.equal(e1.deciding, false)
  // the youngest was created at the last rotation and keeps its age: promoted a period after it
  const lastRotationMs = Math.floor(grownAt / policyA) * policyA
  t.equal(e1.decidesAtMs, lastRotationMs + policyA, 'decides when the period is due, as before the growth')
  const text = await prometheusText(f)
  const fam1 = parsePrometheusText(text)
  const labels = { policy: 'limit', generation: '1', twin: 'false' }
  t.equal(promSample(fam1, 'grudge_generation_early_cells_per_level', labels), e1.cellsPerLevel)
  t.equal(promSample(fam1, 'grudge_generation_early_decides_at_seconds', labels), e1.decidesAtMs / 1000)
  t.equal(promSample(fam1, 'grudge_generation_early_deciding', labels), 0)
  t.equal(promSample(fam1, 'grudge_policy_memory_bytes', { policy: 'limit' }), folded)

  // it decides from the stated time: the check at that second promotes it
  while (clock.now() < e1.decidesAtMs) second(200)
  const after = l.telemetry.stats().perPolicy.limit!
  t.equal(after.cellsPerLevel[0], e1.cellsPerLevel, 'it decides')
  t.same(after.early, [{ ...e1, generation: 0, decidesAtMs: e1.decidesAtMs, deciding: true }], 'marked as deciding')
  const text2 = parsePrometheusText(await prometheusText(l.telemetry.stats()))
  t.equal(promSample(text2, 'grudge_generation_early_deciding', { policy: 'limit', generation: '0', twin: 'false' }), 1)
  await l.close()
})
