import t from 'tap'
import { BloomFilter } from '../../src/bloom/index.js'
import { Window } from '../../src/window/window.js'
import { checkMergeableFamily } from '../../src/window/mergeable.js'
import { FakeClock } from '../../src/testing/index.js'

// The Bloom filter is a mergeable family that merges by `union`.
t.test('a Window over Bloom filters (merged by union)', async (t) => {
  const BF = BloomFilter
  t.equal(checkMergeableFamily(BF), 'union')
  const clock = new FakeClock()
  const w = new Window(BF, { capacity: 1000, errorRate: 0.001 }, { everyMs: 1000, keep: 2, clock })
  w.update('a', 0)
  w.update('b', 1000)
  w.update('c', 2000)
  const m = w.merged(2000)
  t.ok(m.mightContain('b') && m.mightContain('c'), 'the live slots are in the union')
  t.same(
    w.slots(2000).map((s) => s.key),
    [2, 1],
  )
  t.throws(() => w.estimate(2000), { code: 'ERR_GRUDGE_UNSUPPORTED_OPERATION', message: /merged/ })
  const back = Window.deserialize(w.serialize(), { family: BF })
  t.same(back.serialize(), w.serialize())
  t.ok(back.merged(2000).mightContain('c'))
})
