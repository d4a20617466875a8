import t from 'tap'
import { BloomFilter } from '../../src/index.js'
import { Window } from '../../src/window/window.js'
import { checkMergeableFamily } from '../../src/window/mergeable.js'
import { FakeClock } from '../../src/testing/index.js'

// The Bloom filter is a mergeable family (merge ORs the bits) without emptyLike, so its
// slots open from the template's frame.
t.test('a Window over Bloom filters', async (t) => {
  const BF = BloomFilter
  t.doesNotThrow(() => checkMergeableFamily(BF))
  const clock = new FakeClock()
  const w = new Window(BF.byAccuracy({ capacity: 1000, errorRate: 0.001 }), { everyMs: 1000, keep: 2, clock })
  w.addAt(0, 'a')
  w.addAt(1000, 'b')
  w.addAt(2000, 'c')
  const m = w.mergedAt(2000)
  t.ok(m.mightContain('b') && m.mightContain('c'), 'the live slots are merged')
  t.notOk(m.mightContain('a'), 'the expired slot is not')
  t.same(
    w.slotsAt(2000).map((s) => s.key),
    [2, 1],
  )
  t.throws(() => w.estimateAt(2000), { code: 'ERR_GRUDGE_UNSUPPORTED_OPERATION', message: /merged/ })
  const back = Window.deserialize(w.serialize(), { family: BF })
  t.same(back.serialize(), w.serialize())
  t.ok(back.mergedAt(2000).mightContain('c'))
})
