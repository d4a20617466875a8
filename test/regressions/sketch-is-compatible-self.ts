// Sketch.isCompatible documents "whether merge would accept other", but returned true for
// the sketch itself, which merge refuses (ERR_GRUDGE_MERGE_SELF); Rotator.isCompatible
// already returned false for itself.
import t from 'tap'
import { Sketch } from '../../src/index.js'

t.test('isCompatible(self) is false, as merge(self) throws', async (t) => {
  const s = new Sketch({ levels: 2, cellsPerLevel: 8, seed: 1 })
  t.throws(() => s.merge(s), { code: 'ERR_GRUDGE_MERGE_SELF' })
  t.equal(s.isCompatible(s), false)
  t.equal(s.isCompatible(new Sketch({ levels: 2, cellsPerLevel: 8, seed: 1 })), true)
})
