import t from 'tap'
import { Murmur3Hasher, murmur3 } from '../../src/hash/hasher.js'
import { Sketch } from '../../src/sketch/sketch.js'
import { Rotator } from '../../src/sketch/rotator.js'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

// The two murmur3 variants place the same key in different cells: a structure of one must
// never take in cells of the other (merge, delta), whatever the seed, and a
// generation derived by a Rotator keeps the variant it was built with.
const x64 = () => new Murmur3Hasher(7, 'x64_128')
const x86 = () => murmur3(7)
const refused = {
  code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
  message: /hasher.*murmur3x64.*murmur3|hasher.*murmur3.*murmur3x64/,
}

t.test('Sketch: merge and applyDelta (object and frame) across variants are refused', async (t) => {
  const clock = new FakeClock(1000)
  const a = new Sketch({ hasher: x64(), clock })
  const b = new Sketch({ hasher: x86(), clock })
  t.notOk(a.isCompatible(b))
  t.throws(() => a.merge(b), refused)
  b.update('k', 1)
  const d = b.takeDelta()
  t.throws(() => a.applyDelta(d), refused)
  t.throws(() => a.applyDelta(d.serialize()), refused)
  t.equal(a.estimate('k'), 0, 'nothing was applied')
})

t.test('Rotator: merge and applyDelta across variants are refused; generations keep the variant', async (t) => {
  const clock = new FakeClock(0)
  const make = (hasher: Murmur3Hasher) =>
    new Rotator({ sketch: { hasher }, generations: 2, periodMs: 1000, seed: 5, clock, ticker: new FakeTicker() })
  const a = make(x64())
  const b = make(x86())
  t.throws(() => a.merge(b), refused)
  b.update('k', 1)
  t.throws(() => a.applyDelta(b.takeDelta()), refused)
  a.rotate()
  a.rotate()
  const restored = Rotator.deserialize(a.serialize(), { clock, ticker: new FakeTicker() })
  restored.rotate()
  // every generation, fresh or restored, hashes with x64_128: the same cells as a twin
  const twin = make(x64())
  twin.rotate()
  twin.rotate()
  twin.rotate()
  t.ok(restored.isCompatible(twin), 'after rotations the restored rotator still matches an x64_128 twin')
  for (const r of [a, b, restored, twin]) r.close()
})

t.test('CountMinSketch, HyperLogLog and BloomFilter across variants are refused', async (t) => {
  const cmsA = CountMinSketch.bySize({ width: 64, depth: 3, hasher: x64() })
  const cmsB = CountMinSketch.bySize({ width: 64, depth: 3, hasher: x86() })
  t.notOk(cmsA.isCompatible(cmsB))
  t.throws(() => cmsA.merge(cmsB), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /murmur3x64/ })
  const hllA = HyperLogLog.bySize({ precision: 4, hasher: x64() })
  const hllB = HyperLogLog.bySize({ precision: 4, hasher: x86() })
  t.notOk(hllA.isCompatible(hllB))
  t.throws(() => hllA.merge(hllB), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /murmur3x64/ })
  const bfA = BloomFilter.bySize({ bits: 100, hashes: 3, hasher: x64() })
  const bfB = BloomFilter.bySize({ bits: 100, hashes: 3, hasher: x86() })
  t.throws(() => bfA.merge(bfB), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /murmur3x64/ })
})
