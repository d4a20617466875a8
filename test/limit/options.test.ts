import t from 'tap'
import { DEFAULT_POLICY_MEMORY_BYTES, resolveSketchOptions } from '../../src/limit/options.js'
import { Limiter } from '../../src/limit/limiter.js'
import { telemetryMaxBytes } from '../../src/limit/telemetry.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const ticker = new FakeTicker()

t.test(
  'memory picks L × M, M the largest power of two with 2 KiB + L × M × 16 B × (generations + ½) ≤ budget',
  async (t) => {
    const d = resolveSketchOptions({ ticker })
    t.equal(
      DEFAULT_POLICY_MEMORY_BYTES,
      4 * 65536 * 16 * 2.5 + 2048 + 6 * (4096 + 1024) + 2 * 3072,
      "10 MiB of cells (the largest shape's 2 generations and the half of one a growth holds while it folds), the 2 KiB meter and a default telemetry's 36 KiB",
    )
    t.same(
      [d.levels, d.cellsPerLevel, d.memoryBytes, d.fixedShape],
      [4, 65536, DEFAULT_POLICY_MEMORY_BYTES, false],
      'the default',
    )
    // (80 MiB − 2 KiB) / (4 × 16 × 2.5) = 524,275 → 2^18: the meter is inside the budget
    t.equal(resolveSketchOptions({ ticker, memory: '80MB' }).cellsPerLevel, 1 << 18)
    t.equal(resolveSketchOptions({ ticker, memory: 80 * 1024 * 1024 + 2048 }).cellsPerLevel, 1 << 19)
    // (64 MiB − 2 KiB) / (4 × 16 × 2.5) = 419,418 → 2^18: without the half generation, 2 generations of 2^19 would not fit either
    t.equal(resolveSketchOptions({ ticker, memory: 64 * 1024 * 1024 + 2048 }).cellsPerLevel, 1 << 18)
    // (1,000,000 − 2,048) / (4 × 16 × 2.5) = 6,237.2 → 4,096
    t.equal(resolveSketchOptions({ ticker, memory: 1_000_000 }).cellsPerLevel, 4096)
    // 3 generations, 2 levels: (1 MiB − 2 KiB) / (2 × 16 × 3.5) = 9,343.8 → 8,192
    const g = resolveSketchOptions({ ticker, memory: '1MB', levels: 2, generations: 3 })
    t.same([g.levels, g.cellsPerLevel], [2, 8192])
    t.equal(resolveSketchOptions({ ticker, memory: '1GB', levels: 1 }).cellsPerLevel, 1 << 24, 'at most 2^24 cells')
    t.ok(2048 + g.levels * g.cellsPerLevel * 16 * 3.5 <= 1024 * 1024, 'never above the budget, a growth included')
  },
)

t.test('an explicit cellsPerLevel keeps a fixed shape; with memory it must fit', async (t) => {
  const f = resolveSketchOptions({ ticker, levels: 2, cellsPerLevel: 1000 })
  t.same([f.levels, f.cellsPerLevel, f.memoryBytes, f.fixedShape], [2, 1000, undefined, true])
  const ok = resolveSketchOptions({ ticker, memory: 4 * 1024 * 16 * 2, levels: 4, cellsPerLevel: 1024 })
  t.same([ok.cellsPerLevel, ok.fixedShape], [1024, true], 'a shape that fits exactly')
  t.throws(() => resolveSketchOptions({ ticker, memory: '64KB', levels: 4, cellsPerLevel: 1024 }), {
    code: 'ERR_GRUDGE_SIZING_CONFLICT',
    message: /"memory": expected ≥ 131072 bytes .*received 65536/,
  })
})

t.test('a budget below one generation of 16 cells per level is a coded error; bad sizes too', async (t) => {
  // 2,048 B of meter + 4 levels × 16 cells × 16 B × (2 generations + ½) = 4,608 B
  t.equal(resolveSketchOptions({ ticker, memory: 4608 }).cellsPerLevel, 16)
  t.throws(() => resolveSketchOptions({ ticker, memory: 4607 }), {
    code: 'ERR_GRUDGE_SIZING_BUDGET',
    message: /expected ≥ 4608 bytes \(2048 for the load meter/,
  })
  for (const bad of [-1, 0, NaN, '12XB', 'lots', {}])
    t.throws(() => resolveSketchOptions({ ticker, memory: bad as number }), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.throws(() => new Limiter({ ticker, memory: '1KB', limit: { rate: 1, burst: 1 } }), {
    code: 'ERR_GRUDGE_SIZING_BUDGET',
  })
})

t.test("a Limiter's policies each get the budget", async (t) => {
  const l = new Limiter({
    clock: new FakeClock(0),
    ticker,
    memory: 1.25 * 1024 * 1024 + 2048 + telemetryMaxBytes(),
    limit: { rate: 1, burst: 10 },
    abuse: {},
  })
  // at the start every generation has the largest shape: the budget is used to the byte but the
  // half generation a growth holds while it folds (2 × 4 × 8,192 × 16 B = 1 MiB of 1.25), the
  // meter included and the limiter's telemetry (at its largest) kept out of each store's share
  t.equal(l.limit!.store.sizeBytes(), 1024 * 1024 + 2048)
  t.equal(l.abuse!.store.sizeBytes(), 1024 * 1024 + 2048)
  t.ok(l.telemetry.maxSizeBytes() + l.limit!.store.sizeBytes() <= 1.25 * 1024 * 1024 + 2048 + telemetryMaxBytes())
  await l.close()
})
