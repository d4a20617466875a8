import t from 'tap'
import { suggestShape } from '../../src/cli/suggest.js'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'

t.test('without a budget: the target is met, and one cell fewer per level misses it', async (t) => {
  for (const [H, p] of [
    [1000, 0.001],
    [10, 0.01],
    [100_000, 1e-6],
  ] as const) {
    const s = suggestShape({ hotKeys: H, targetFalsePositive: p })
    t.ok(s.meetsTarget && s.falsePositiveRate <= p, `H=${H} p=${p}: ${s.levels} × ${s.cellsPerLevel}`)
    t.ok(
      sketchFalsePositiveRate({ levels: s.levels, cellsPerLevel: s.cellsPerLevel - 1 }, { hotKeys: H }) > p,
      'M is the fewest for these levels',
    )
    t.equal(s.bytesPerSketch, s.levels * s.cellsPerLevel * 16)
    t.equal(s.bytes, 2 * s.bytesPerSketch)
  }
})

t.test('with a budget: the fewest levels that reach the target', async (t) => {
  const s = suggestShape({ hotKeys: 1000, targetFalsePositive: 0.01, memoryBytes: 8 * 1048576 })
  t.ok(s.meetsTarget && s.bytes <= 8 * 1048576)
  const fewer = s.levels - 1
  if (fewer >= 1)
    t.ok(
      sketchFalsePositiveRate(
        { levels: fewer, cellsPerLevel: Math.floor((8 * 1048576) / (16 * 2 * fewer)) },
        { hotKeys: 1000 },
      ) > 0.01,
      'one level fewer misses it',
    )
  t.equal(
    suggestShape({ hotKeys: 1000, targetFalsePositive: 1e-30, memoryBytes: 8 * 1048576, maxLevels: 3 }).levels,
    3,
    'capped at maxLevels',
  )
})

t.test('with a budget too small: the classic Bloom optimum k = (m/n) ln 2', async (t) => {
  // A partitioned Bloom filter with m = 10 n cells: optimal k = 10 ln 2 ≈ 6.93 → 7, and a
  // false-positive rate ≈ 0.0082 (Bloom 1970; the m/n = 10, k = 7 entry of the usual tables is 0.00819).
  const H = 1000
  const s = suggestShape({ hotKeys: H, targetFalsePositive: 0.0001, memoryBytes: 10 * H * 16, generations: 1 })
  t.equal(s.levels, 7)
  t.equal(s.cellsPerLevel, Math.floor((10 * H) / 7))
  t.ok(Math.abs(s.falsePositiveRate - 0.00819) < 0.0002, `fp ${s.falsePositiveRate}`)
  t.notOk(s.meetsTarget, 'the budget is too small for 1e-4')
  t.ok(s.bytes <= 10 * H * 16)
})

t.test('bad arguments throw a coded error naming the option', async (t) => {
  t.throws(() => suggestShape({ hotKeys: 0, targetFalsePositive: 0.01 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"hot-keys"/,
  })
  t.throws(() => suggestShape({ hotKeys: 10, targetFalsePositive: 1 }), { message: /"fp"/ })
  t.throws(() => suggestShape({ hotKeys: 10, targetFalsePositive: 0.01, memoryBytes: 10 }), { message: /"memory"/ })
})

t.test('with a request load: the power of two that meets the target, by the load model', async (t) => {
  const load = { requestsPerSecond: 3000, rate: 1, burst: 10 }
  const s = suggestShape({ ...load, targetFalsePositive: 1e-5 })
  t.ok(s.meetsTarget && s.falsePositiveRate <= 1e-5, `${s.levels} × ${s.cellsPerLevel}`)
  t.equal(s.cellsPerLevel & (s.cellsPerLevel - 1), 0, 'a power of two')
  t.ok(
    sketchFalsePositiveRate({ levels: s.levels, cellsPerLevel: s.cellsPerLevel / 2 }, load) > 1e-5,
    'half the cells miss it',
  )
  // a level drains at most M × rate: 3,000 requests/s need M well above 3,000
  t.ok(s.cellsPerLevel > 3000)
  t.throws(() => suggestShape({ requestsPerSecond: -1, rate: 1, burst: 10, targetFalsePositive: 0.01 }), {
    message: /"rps"/,
  })
  t.throws(() => suggestShape({ requestsPerSecond: 10, targetFalsePositive: 0.01 }), {
    code: 'ERR_GRUDGE_SIZING_INVALID',
  })
})
