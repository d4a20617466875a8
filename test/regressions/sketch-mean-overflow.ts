// With the 'mean' aggregator the L cell scores were summed before dividing by L, so cells
// near hi = Number.MAX_VALUE (the default hi) summed to Infinity and query,
// updateAndEstimate and estimateDetailed returned Infinity although every cell is ≤ hi; a mean of
// values in [lo, hi] must itself be in [lo, hi].
//
// With 8-byte cells (spec/sketch.md §2) a cell holds a Float32 and the clamp's hi is rounded
// down to one, so at the default hi every score saturates at the largest Float32,
// F32 = 2^128 − 2^104: a mean at the largest score a cell holds must be that score, never
// Infinity, never above hi. (The float64 sum of at most 2^20 such cells no longer
// overflows; what these tests now catch is a cell that stores hi = MAX_VALUE as a Float32,
// which is Infinity.)
import t from 'tap'
import { Sketch } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'
import { f32Up } from '../sketch/fixtures/f32.js'

const MAX = Number.MAX_VALUE
/** The largest finite Float32, (2^24 − 1) · 2^104: IEEE 754 binary32. */
const F32 = (2 ** 24 - 1) * 2 ** 104

t.test('mean of cells at hi = MAX_VALUE is the largest Float32, not Infinity', async (t) => {
  t.equal(F32, 3.4028234663852886e38, 'the largest Float32')
  t.equal(Math.fround(F32), F32, 'a Float32')
  t.equal(Math.fround(F32 + 2 ** 103), Infinity, 'half an ulp above rounds to Infinity')
  const s = new Sketch({ levels: 4, cellsPerLevel: 64, aggregator: 'mean', seed: 3, clock: new FakeClock() })
  s.update('k', MAX)
  t.same(s.estimateDetailed('k').scores, [F32, F32, F32, F32], 'every cell saturates')
  t.equal(s.estimate('k'), F32)
  t.equal(s.updateAndEstimate('k', 0), F32)
  t.equal(s.estimateDetailed('k').value, F32)
  t.equal(s.tryUpdate('k', 0, F32), true, 'mean + 0 ≤ the largest Float32')
})

t.test('mean near the top is the exact mean, within [lo, hi]', async (t) => {
  const s = new Sketch({ levels: 2, cellsPerLevel: 64, aggregator: 'mean', lo: -MAX, seed: 3, clock: new FakeClock() })
  s.update('a', MAX)
  const { cells } = s.estimateDetailed('a')
  t.not(cells[0], cells[1], 'two distinct cells')
  // both cells F32/2 (mean F32/2, a Float32), then both 0.75·F32 = 3 · (2^24 − 1) · 2^102,
  // 26 significant bits: stored as the Float32 above it
  t.equal(s.updateAndEstimate('a', -F32 / 2), F32 / 2)
  s.update('a', F32 / 4)
  t.ok(f32Up(0.75 * F32) > 0.75 * F32, '0.75·F32 is not a Float32')
  t.equal(s.estimate('a'), f32Up(0.75 * F32))
  t.ok(s.estimate('a') <= F32, 'within hi')
  t.equal(s.updateAndEstimate('a', -MAX), -F32, 'lo = −MAX_VALUE saturates at −F32')
  t.equal(s.updateAndEstimate('b', 0) <= F32, true)
})

// With L = 3 the fallback sum of s / L rounded up: 3 × fl(MAX_VALUE / 3) is Infinity, so a
// 3-level mean sketch at the default hi still answered Infinity (issue 14, item 6).
t.test('3 levels at hi = MAX_VALUE: every read is the largest Float32, never Infinity', async (t) => {
  t.equal(Number.MAX_VALUE / 3 + Number.MAX_VALUE / 3 + Number.MAX_VALUE / 3, Infinity, 'the rounding that bit')
  for (const levels of [3, 5, 6, 7]) {
    const s = new Sketch({ levels, cellsPerLevel: 64, aggregator: 'mean', seed: 3, clock: new FakeClock() })
    s.update('k', MAX)
    t.equal(s.estimate('k'), F32, `estimate, L = ${levels}`)
    t.equal(s.updateAndEstimate('k', 0), F32, `updateAndEstimate, L = ${levels}`)
    t.equal(s.estimateDetailed('k').value, F32, `estimateDetailed, L = ${levels}`)
    t.equal(s.tryUpdate('k', 0, F32), true, `tryUpdate, L = ${levels}`)
  }
})

t.test('a mean of cells all at hi is hi, not one ulp above', async (t) => {
  // fl(fl(3 × 0.1) / 3) = 0.10000000000000002 > 0.1
  t.ok((0.1 + 0.1 + 0.1) / 3 > 0.1, 'the rounding that bit')
  // A cell holds hi rounded down to a Float32 (spec/sketch.md §2): h, the largest Float32
  // ≤ 0.1, 0.09999999403953552. (3h is exact in float64 and so is 3h / 3: the float64
  // rounding above cannot bite a mean of equal Float32 cells; the clamp stays for others.)
  const h = -f32Up(-0.1)
  t.ok(h < 0.1 && Math.fround(h) === h, `h = ${h}`)
  const s = new Sketch({ levels: 3, cellsPerLevel: 64, aggregator: 'mean', hi: 0.1, seed: 3, clock: new FakeClock() })
  s.update('k', 1)
  const { scores } = s.estimateDetailed('k')
  t.same(scores, [h, h, h], 'every cell at hi as a cell holds it, never above 0.1')
  t.equal(s.estimate('k'), h)
})
