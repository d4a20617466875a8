import t from 'tap'
import { DEFAULT_POLICY_MEMORY_BYTES, resolveSketchOptions } from '../../src/limit/options.js'
import { Limiter } from '../../src/limit/limiter.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const ticker = new FakeTicker()

t.test('memory picks L × M, M the largest power of two with L × M × 16 B × generations ≤ budget', async (t) => {
  const d = resolveSketchOptions({ ticker })
  t.equal(DEFAULT_POLICY_MEMORY_BYTES, 8 * 1024 * 1024)
  t.same([d.levels, d.cellsPerLevel, d.memoryBytes, d.fixedShape], [4, 65536, 8 * 1024 * 1024, false], 'the default')
  // 64 MiB / (4 × 16 × 2) = 524,288 = 2^19
  t.equal(resolveSketchOptions({ ticker, memory: '64MB' }).cellsPerLevel, 1 << 19)
  // 1,000,000 B / (4 × 16 × 2) = 7,812.5 → 4,096
  t.equal(resolveSketchOptions({ ticker, memory: 1_000_000 }).cellsPerLevel, 4096)
  // 3 generations, 2 levels: 1 MiB / (2 × 16 × 3) = 10,922.7 → 8,192
  const g = resolveSketchOptions({ ticker, memory: '1MB', levels: 2, generations: 3 })
  t.same([g.levels, g.cellsPerLevel], [2, 8192])
  t.equal(resolveSketchOptions({ ticker, memory: '1GB', levels: 1 }).cellsPerLevel, 1 << 24, 'at most 2^24 cells')
  t.ok(g.levels * g.cellsPerLevel * 16 * 3 <= 1024 * 1024, 'never above the budget')
})

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
  // 4 levels × 16 cells × 16 B × 2 generations = 2,048 B
  t.equal(resolveSketchOptions({ ticker, memory: 2048 }).cellsPerLevel, 16)
  t.throws(() => resolveSketchOptions({ ticker, memory: 2047 }), {
    code: 'ERR_GRUDGE_SIZING_BUDGET',
    message: /expected ≥ 2048 bytes/,
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
    memory: '1MB',
    limit: { rate: 1, burst: 10 },
    abuse: {},
  })
  t.equal(l.limit!.store.sizeBytes(), 1024 * 1024)
  t.equal(l.abuse!.store.sizeBytes(), 1024 * 1024)
  await l.close()
})
