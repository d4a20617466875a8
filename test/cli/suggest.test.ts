import t from 'tap'
import { suggestShape } from '../../src/cli/suggest.js'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'

t.test('without a budget: the target is met, and one cell fewer per level misses it', async (t) => {
  for (const [H, p] of [
    [1000, 0.001],
    [10, 0.01],
    [100_000, 1e-6],
  ] as const) {
    const s = suggestShape(H, p)
    t.ok(s.meetsTarget && s.falsePositiveRate <= p, `H=${H} p=${p}: ${s.levels} × ${s.cellsPerLevel}`)
    t.ok(sketchFalsePositiveRate(s.levels, s.cellsPerLevel - 1, H) > p, 'M is the fewest for these levels')
    t.equal(s.bytesPerSketch, s.levels * s.cellsPerLevel * 16)
    t.equal(s.bytes, 2 * s.bytesPerSketch)
  }
})

t.test('with a budget: the fewest levels that reach the target', async (t) => {
  const s = suggestShape(1000, 0.01, 8 * 1048576)
  t.ok(s.meetsTarget && s.bytes <= 8 * 1048576)
  const fewer = s.levels - 1
  if (fewer >= 1)
    t.ok(
      sketchFalsePositiveRate(fewer, Math.floor((8 * 1048576) / (16 * 2 * fewer)), 1000) > 0.01,
      'one level fewer misses it',
    )
  t.equal(suggestShape(1000, 1e-30, 8 * 1048576, 2, 3).levels, 3, 'capped at maxLevels')
})

t.test('with a budget too small: the classic Bloom optimum k = (m/n) ln 2', async (t) => {
  // A partitioned Bloom filter with m = 10 n cells: optimal k = 10 ln 2 ≈ 6.93 → 7, and a
  // false-positive rate ≈ 0.0082 (Bloom 1970; the m/n = 10, k = 7 entry of the usual tables is 0.00819).
  const H = 1000
  const s = suggestShape(H, 0.0001, 10 * H * 16, 1)
  t.equal(s.levels, 7)
  t.equal(s.cellsPerLevel, Math.floor((10 * H) / 7))
  t.ok(Math.abs(s.falsePositiveRate - 0.00819) < 0.0002, `fp ${s.falsePositiveRate}`)
  t.notOk(s.meetsTarget, 'the budget is too small for 1e-4')
  t.ok(s.bytes <= 10 * H * 16)
})

t.test('bad arguments throw a coded error naming the option', async (t) => {
  t.throws(() => suggestShape(0, 0.01), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"hot-keys"/ })
  t.throws(() => suggestShape(10, 1), { message: /"fp"/ })
  t.throws(() => suggestShape(10, 0.01, 10), { message: /"memory"/ })
})
