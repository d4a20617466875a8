import t from 'tap'
import { suggestShape } from '../../src/cli/suggest.js'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'
import { sketchBudget } from '../../src/limit/options.js'
import { telemetryMaxBytes } from '../../src/limit/telemetry.js'

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
        {
          levels: fewer,
          cellsPerLevel: sketchBudget({ memory: 8 * 1048576 }, fewer, 2, '', telemetryMaxBytes()).cellsPerLevel,
        },
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

t.test(
  'with a budget too small: the levels with the lowest Bloom rate among the shapes a Limiter builds',
  async (t) => {
    // Each level count L gets the M a Limiter builds from the budget; the hot keys alone fill a
    // level's cells as a partitioned Bloom filter, (1 − e^(−H/M))^L (Bloom 1970; Broder &
    // Mitzenmacher 2004, §2.1), and the L with the lowest rate wins.
    const H = 1000
    const memory = 200_000
    const s = suggestShape({ hotKeys: H, targetFalsePositive: 0.0001, memoryBytes: memory })
    t.notOk(s.meetsTarget, 'the budget is too small for 1e-4')
    let best = { L: 0, fp: Infinity }
    for (let L = 1; L <= 8; L++) {
      const M = sketchBudget({ memory }, L, 2, '', telemetryMaxBytes()).cellsPerLevel
      const fp = Math.pow(1 - Math.exp(-H / M), L)
      if (fp < best.fp) best = { L, fp }
    }
    t.equal(s.levels, best.L)
    t.ok(Math.abs(s.falsePositiveRate - best.fp) / best.fp < 0.01, `fp ${s.falsePositiveRate} vs ${best.fp}`)
    t.ok(s.bytes <= memory)
  },
)

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
