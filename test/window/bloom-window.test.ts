import t from 'tap'
import * as bloom from '../../src/bloom/index.js'
import { Window } from '../../src/window/window.js'
import { checkMergeableFamily, type Mergeable, type MergeableFamily } from '../../src/window/mergeable.js'
import { FakeClock } from '../../src/testing/index.js'

// The Bloom filter (its own issue and branch) is a mergeable family that merges by
// `union`. This test runs once it is in the tree and is skipped before.
interface BloomLike extends Mergeable {
  add(item: string): unknown
  mightContain(item: string): boolean
  union(other: BloomLike): unknown
}
const BloomFilter = (bloom as Record<string, unknown>).BloomFilter as
  (MergeableFamily<BloomLike, { capacity: number; errorRate: number; seed?: number }> & { name: string }) | undefined
const skip = BloomFilter === undefined ? 'BloomFilter is not in this tree yet' : false

t.test('a Window over Bloom filters (merged by union)', { skip }, async (t) => {
  const BF = BloomFilter!
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
