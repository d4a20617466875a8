// With the 'mean' aggregator the L cell scores were summed before dividing by L, so cells
// near hi = Number.MAX_VALUE (the default hi) summed to Infinity and query,
// updateAndEstimate and estimateDetailed returned Infinity although every cell is ≤ hi; a mean of
// values in [lo, hi] must itself be in [lo, hi].
import t from 'tap'
import { Sketch } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'

const MAX = Number.MAX_VALUE

t.test('mean of cells at hi = MAX_VALUE is MAX_VALUE, not Infinity', async (t) => {
  const s = new Sketch({ levels: 4, cellsPerLevel: 64, aggregator: 'mean', seed: 3, clock: new FakeClock() })
  s.update('k', MAX)
  t.equal(s.estimate('k'), MAX)
  t.equal(s.updateAndEstimate('k', 0), MAX)
  t.equal(s.estimateDetailed('k').value, MAX)
  t.equal(s.tryUpdate('k', 0, MAX), true, 'mean + 0 ≤ MAX_VALUE')
})

t.test('mean near the top is the exact mean, within [lo, hi]', async (t) => {
  const s = new Sketch({ levels: 2, cellsPerLevel: 64, aggregator: 'mean', lo: -MAX, seed: 3, clock: new FakeClock() })
  s.update('a', MAX)
  const { cells } = s.estimateDetailed('a')
  t.not(cells[0], cells[1], 'two distinct cells')
  // both cells MAX/2 (mean MAX/2), then both 0.75·MAX: their sum 1.5·MAX overflows
  t.equal(s.updateAndEstimate('a', -MAX / 2), MAX / 2)
  s.update('a', MAX / 4)
  t.equal(s.estimate('a'), 0.75 * MAX)
  t.equal(s.updateAndEstimate('b', 0) <= MAX, true)
})

// With L = 3 the fallback sum of s / L rounded up: 3 × fl(MAX_VALUE / 3) is Infinity, so a
// 3-level mean sketch at the default hi still answered Infinity (issue 14, item 6).
t.test('3 levels at hi = MAX_VALUE: every read is MAX_VALUE, never Infinity', async (t) => {
  t.equal(Number.MAX_VALUE / 3 + Number.MAX_VALUE / 3 + Number.MAX_VALUE / 3, Infinity, 'the rounding that bit')
  for (const levels of [3, 5, 6, 7]) {
    const s = new Sketch({ levels, cellsPerLevel: 64, aggregator: 'mean', seed: 3, clock: new FakeClock() })
    s.update('k', MAX)
    t.equal(s.estimate('k'), MAX, `estimate, L = ${levels}`)
    t.equal(s.updateAndEstimate('k', 0), MAX, `updateAndEstimate, L = ${levels}`)
    t.equal(s.estimateDetailed('k').value, MAX, `estimateDetailed, L = ${levels}`)
    t.equal(s.tryUpdate('k', 0, MAX), true, `tryUpdate, L = ${levels}`)
  }
})

t.test('a mean of cells all at hi is hi, not one ulp above', async (t) => {
  // fl(fl(3 × 0.1) / 3) = 0.10000000000000002 > 0.1
  t.ok((0.1 + 0.1 + 0.1) / 3 > 0.1, 'the rounding that bit')
  const s = new Sketch({ levels: 3, cellsPerLevel: 64, aggregator: 'mean', hi: 0.1, seed: 3, clock: new FakeClock() })
  s.update('k', 1)
  const { scores } = s.estimateDetailed('k')
  t.same(scores, [0.1, 0.1, 0.1])
  t.equal(s.estimate('k'), 0.1)
})
