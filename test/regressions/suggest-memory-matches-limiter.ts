// `grudge suggest --memory 8MB` promised 65,536 cells per level at 4 levels (8 MiB / (4 × 16 B
// × 2 generations)), but `new Limiter({ memory: '8MB' })` builds 32,768: the library keeps its
// load meter (and now its telemetry) inside the budget and rounds down to a power of two. The
// CLI now asks the library's rule for every level count it weighs.
import t from 'tap'
import { suggestShape } from '../../src/cli/suggest.js'
import { Limiter } from '../../src/limit/limiter.js'
import { SHRINK_LOAD_MARGIN } from '../../src/sketch/rotator-sizing.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const MiB = 1024 * 1024

function built(memory: number, levels: number): number {
  const l = new Limiter({
    memory,
    levels,
    limit: { rate: 1, burst: 10 },
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
  })
  const m = l.sketch.cellsPerLevel
  void l.close()
  return m
}

t.test('8 MiB at 4 levels: the 32,768 cells per level a Limiter builds, not 65,536', async (t) => {
  // an unreachable target: the lowest rate among 1..4 levels wins, which is 4 levels here
  const s = suggestShape({ hotKeys: 1000, targetFalsePositive: 1e-30, memoryBytes: 8 * MiB, maxLevels: 4 })
  t.equal(s.levels, 4)
  t.equal(s.cellsPerLevel, 32_768)
  t.equal(s.cellsPerLevel, built(8 * MiB, 4))
})

t.test('every suggestion under a budget is the shape a Limiter builds from it', async (t) => {
  for (const memory of [64 * 1024, 1_000_000, 8 * MiB, 8 * MiB + 2048 + 36 * 1024, 64 * MiB]) {
    for (const [hotKeys, fp] of [
      [1000, 0.001],
      [100, 1e-6],
      [100_000, 1e-9],
    ] as const) {
      const s = suggestShape({ hotKeys, targetFalsePositive: fp, memoryBytes: memory, maxLevels: 8 })
      t.equal(s.cellsPerLevel, built(memory, s.levels), `${memory} B, H ${hotKeys}, p ${fp}: L ${s.levels}`)
      t.ok(s.bytes <= memory, 'the cells fit the budget')
    }
  }
  t.throws(() => suggestShape({ hotKeys: 10, targetFalsePositive: 0.01, memoryBytes: 4096, maxLevels: 8 }), {
    code: 'ERR_GRUDGE_SIZING_BUDGET',
    message: /"memory": expected ≥ 39552 bytes/,
  })
})

// `grudge suggest` with a load promised the smallest M for the target, but a self-sized
// policy asks its sizer (the debt meter also caps ρ at 0.05 for its heavy hitters) and clamps
// the answer to its budget: the suggestion and the Limiter disagreed. Both now call the
// policy's own sizer. A Limiter is driven for one period at a steady load on a fake clock;
// the generation it appends at the rotation must have the cells suggest names. The first
// generation is the budget's largest, so that rotation is a shrink, which the Rotator's
// hysteresis (spec/rotator.md) takes only to what the sizer names at SHRINK_LOAD_MARGIN × the
// load (the events are evenly spaced, so the busiest check window is the mean): suggest is
// asked at that load for the settled size, and at the load itself for the sizer's own answer.
function settled(
  options: Omit<ConstructorParameters<typeof Limiter>[0], 'clock' | 'ticker'>,
  perSecond: number,
  act: (l: Limiter, key: string) => void,
  periodOf: (l: Limiter) => number,
): { cells: readonly number[]; first: number } {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const l = new Limiter({ ...options, clock, ticker })
  const periodMs = periodOf(l)
  const store = (l.limit ?? l.abuse ?? l.fairness)!.store
  const first = store.generationShapes!().generationCellsPerLevel[1]
  let n = 0
  // events evenly spaced, ticks every second, until the first rotation (a period and a check
  // later: the promotion-age guard); a load that asks for the first shape fails below
  const stepMs = 1000 / perSecond
  let cells = store.generationShapes!().generationCellsPerLevel
  for (let t = 0; t < 2 * periodMs && cells[1] === first; t += stepMs) {
    clock.set(t)
    act(l, `k${n++}`)
    if (Math.floor((t + stepMs) / 1000) > Math.floor(t / 1000)) {
      ticker.tick()
      cells = store.generationShapes!().generationCellsPerLevel
    }
  }
  void l.close()
  return { cells, first }
}

t.test('with a load: the cells a self-sized policy settles at are the ones suggest names', async (t) => {
  const memory = MiB
  const limit = settled(
    { memory, levels: 4, limit: { rate: 1, burst: 10 } },
    80,
    (l, key) => void l.decide(key),
    (l) => l.limit!.periodMs,
  )
  const sLimit = suggestShape({
    requestsPerSecond: 80,
    rate: 1,
    burst: 10,
    targetFalsePositive: 1e-5,
    memoryBytes: memory,
    levels: 4,
  })
  const sLimitSettled = suggestShape({
    requestsPerSecond: 80 * SHRINK_LOAD_MARGIN,
    rate: 1,
    burst: 10,
    targetFalsePositive: 1e-5,
    memoryBytes: memory,
    levels: 4,
  })
  t.same(limit.cells, [limit.first, sLimitSettled.cellsPerLevel], `limit: ${limit.cells.join(', ')}`)
  t.equal(sLimit.maxCellsPerLevel, limit.first, 'the first generation is the budget’s largest')
  t.ok(sLimit.cellsPerLevel < limit.first && sLimit.cellsPerLevel > 64, 'the load resized it (neither end)')
  // ρ ≤ 0.05 for heavy hitters (spec/sizing.md §2.6): 80 requests/s at rate 1 need M ≥ 1,600
  t.equal(sLimit.cellsPerLevel, 2048)

  const abuse = settled(
    { memory, levels: 4, abuse: { weights: { '401': 2 }, threshold: 4, halfLifeMs: 10_000 } },
    20,
    (l, key) => void l.record(key, { failed: false, abuseDelta: 2 }),
    (l) => l.abuse!.periodMs,
  )
  const sAbuse = suggestShape({
    policy: 'abuse',
    eventsPerSecond: 20,
    weight: 2,
    threshold: 4,
    halfLifeMs: 10_000,
    targetFalsePositive: 1e-5,
    memoryBytes: memory,
    levels: 4,
  })
  const sAbuseSettled = suggestShape({
    policy: 'abuse',
    eventsPerSecond: 20 * SHRINK_LOAD_MARGIN,
    weight: 2,
    threshold: 4,
    halfLifeMs: 10_000,
    targetFalsePositive: 1e-5,
    memoryBytes: memory,
    levels: 4,
  })
  t.same(abuse.cells, [abuse.first, sAbuseSettled.cellsPerLevel], `abuse: ${abuse.cells.join(', ')}`)
  t.ok(sAbuse.cellsPerLevel < abuse.first && sAbuse.cellsPerLevel > 64, 'the load resized it (neither end)')

  const fairness = settled(
    { memory, levels: 4, fairness: { failureDelta: 0.2 } },
    1.5,
    (l, key) => void l.record(key, { failed: true, abuseDelta: 0 }),
    (l) => l.fairness!.periodMs,
  )
  const sFair = suggestShape({
    policy: 'fairness',
    eventsPerSecond: 1.5,
    failureDelta: 0.2,
    targetFalsePositive: 1e-5,
    memoryBytes: memory,
    levels: 4,
  })
  const sFairSettled = suggestShape({
    policy: 'fairness',
    eventsPerSecond: 1.5 * SHRINK_LOAD_MARGIN,
    failureDelta: 0.2,
    targetFalsePositive: 1e-5,
    memoryBytes: memory,
    levels: 4,
  })
  // the margin is twice the larger of the mean and the busiest check window's rate; at 1.5
  // events/s one check window can hold more than its mean share (events do not divide evenly
  // into windows), so the settled size is at least suggest's at twice the mean, and a shrink
  t.equal(fairness.cells[0], fairness.first)
  t.ok(
    fairness.cells[1] >= sFairSettled.cellsPerLevel && fairness.cells[1] < fairness.first,
    `fairness: ${fairness.cells.join(', ')} (suggest at the margin load: ${sFairSettled.cellsPerLevel})`,
  )
  t.ok(sFair.cellsPerLevel < fairness.first && sFair.cellsPerLevel > 64, 'the load resized it (neither end)')
})
