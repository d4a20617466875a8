import t from 'tap'
import { CountMinSketch, CMS_MAX_COUNT } from '../../src/window/count-min.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'

// Plain update adds each count to exactly one counter per row and merge adds rows, so
// every row of a plain sketch sums to the total unless a counter saturated. A frame (CRC
// recomputed) claiming a total above its rows was accepted and reported that total.
function withTotal(c: CountMinSketch, total: number): Uint8Array {
  const f = readFrame(c.serialize(), FAMILY.countMin, 1)
  const payload = f.payload.slice()
  new DataView(payload.buffer).setUint32(0, total, true)
  return writeFrame({ ...f, payload })
}

t.test('a plain sketch whose total is above a row sum is rejected', async (t) => {
  const c = CountMinSketch.bySize({ width: 4, depth: 2, seed: 1 })
  c.add('a', 3)
  t.throws(() => CountMinSketch.deserialize(withTotal(c, 200)), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /rows\[0\]/,
  })
  t.equal(CountMinSketch.deserialize(withTotal(c, 3)).totalCount, 3, 'the written total loads')
})

t.test('conservative sketches and saturated rows may sum below the total', async (t) => {
  const cu = CountMinSketch.bySize({ width: 4, depth: 2, seed: 1, conservative: true })
  for (let i = 0; i < 20; i++) cu.add(`k${i}`)
  t.equal(CountMinSketch.deserialize(cu.serialize()).totalCount, 20)
  const sat = CountMinSketch.bySize({ width: 4, depth: 2, seed: 1 })
  sat.add('a', CMS_MAX_COUNT)
  sat.add('a', 10)
  t.equal(CountMinSketch.deserialize(sat.serialize()).totalCount, CMS_MAX_COUNT + 10)
  const merged = CountMinSketch.bySize({ width: 4, depth: 2, seed: 1 })
  merged.add('a', CMS_MAX_COUNT - 1)
  const other = merged.emptyLike()
  other.add('a', 5)
  merged.merge(other)
  t.equal(CountMinSketch.deserialize(merged.serialize()).totalCount, CMS_MAX_COUNT + 4)
})
