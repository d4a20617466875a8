// `grudge suggest --memory 8MB` promised 65,536 cells per level at 4 levels (8 MiB / (4 × 16 B
// × 2 generations)), but `new Limiter({ memory: '8MB' })` builds 32,768: the library keeps its
// load meter (and now its telemetry) inside the budget and rounds down to a power of two. The
// CLI now asks the library's rule for every level count it weighs.
import t from 'tap'
import { suggestShape } from '../../src/cli/suggest.js'
import { Limiter } from '../../src/limit/limiter.js'
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
  for (const memory of [64 * 1024, 1_000_000, 8 * MiB, 8 * MiB + 2048 + 30 * 1024, 64 * MiB]) {
    for (const [hotKeys, fp] of [
      [1000, 0.001],
      [100, 1e-6],
      [100_000, 1e-9],
    ] as const) {
      const s = suggestShape({ hotKeys, targetFalsePositive: fp, memoryBytes: memory })
      t.equal(s.cellsPerLevel, built(memory, s.levels), `${memory} B, H ${hotKeys}, p ${fp}: L ${s.levels}`)
      t.ok(s.bytes <= memory, 'the cells fit the budget')
    }
  }
  t.throws(() => suggestShape({ hotKeys: 10, targetFalsePositive: 0.01, memoryBytes: 4096 }), {
    code: 'ERR_GRUDGE_SIZING_BUDGET',
    message: /"memory": expected ≥ 33280 bytes/,
  })
})
