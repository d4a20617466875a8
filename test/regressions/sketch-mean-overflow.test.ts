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
