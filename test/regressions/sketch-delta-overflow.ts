// With bounds near ±Number.MAX_VALUE, view − baseline overflowed to ±Infinity in
// takeDelta; the frame reader accepted it (its bound hi − lo was itself Infinity), and
// applyDelta under exponential decay computed Infinity × e^(−λ·age) = Infinity × 0 = NaN
// once the age was long enough, writing NaN into a cell: that cell then reads NaN or
// Infinity for every key hashing to it. Deltas are now finite (clamped to
// ±Number.MAX_VALUE) and a frame with a non-finite delta value is refused.
import t from 'tap'
import { Sketch, SketchDelta, exponential } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'
import { FAMILY, writeFrame, readFrame } from '../../src/format/frame.js'
import { serializeAtWall } from '../sketch/fixtures/serialize-at-wall.js'

const MAX = Number.MAX_VALUE
const config = { levels: 1, cellsPerLevel: 1, decay: exponential(1), lo: -MAX, hi: MAX, seed: 1 }

t.test('a delta spanning the whole range stays finite and applies without NaN', async (t) => {
  const clock = new FakeClock()
  const a = new Sketch({ ...config, clock })
  const b = new Sketch({ ...config, clock })
  a.update('k', -MAX)
  a.markSynced()
  a.update('k', MAX)
  a.update('k', MAX) // view MAX, baseline −MAX: the difference 2·MAX is not a float64
  const d = a.takeDelta()
  t.ok(Number.isFinite(d.scores[0]), `delta value finite, received ${d.scores[0]}`)
  t.equal(d.scores[0], MAX)
  clock.advance(1_000_000) // 1000 s at λ = 1/s: e^(−1000) underflows to 0
  b.applyDelta(d)
  const v = b.estimate('k')
  t.ok(Number.isFinite(v) && v >= -MAX && v <= MAX, `cell stays in [lo, hi], received ${v}`)
  t.equal(v, 0, 'a delta decayed over 1000 s at λ = 1/s is 0 (2·MAX·e^(−1000) underflows)')
})

t.test('a delta frame holding ±Infinity is refused although hi − lo overflows', async (t) => {
  const clock = new FakeClock()
  const src = new Sketch({ ...config, cellsPerLevel: 64, clock })
  src.update('k', 5)
  const good = serializeAtWall(src.takeDelta(), 0)
  const parts = readFrame(good, FAMILY.sketch, 1)
  t.equal(parts.flags & 4, 4, 'sparse delta block (one cell)')
  for (const bad of [Infinity, -Infinity]) {
    const payload = new Uint8Array(parts.payload)
    new DataView(payload.buffer).setFloat64(16 + 4, bad, true) // value of sparse entry 0
    const crafted = writeFrame({
      ...parts,
      seed: new Uint8Array(parts.seed),
      params: new Uint8Array(parts.params),
      payload,
    })
    t.throws(
      () => SketchDelta.deserialize(crafted, { clock, wallMs: 0 }),
      { code: 'ERR_GRUDGE_FORMAT_INVALID' },
      `sparse ${bad}`,
    )
  }
  // the dense block: a delta over every cell of a 1×3 sketch with distinct times
  const c3 = { ...config, cellsPerLevel: 3 }
  const s3 = new Sketch({ ...c3, clock })
  for (let i = 0; i < 50; i++) s3.update(`k${i}`, 1)
  const base = s3.takeDelta()
  const dense = new SketchDelta(base, clock, Float64Array.of(1, 2, 3), Float64Array.of(0, 0, 0))
  clock.advance(1)
  const frame = serializeAtWall(dense, 0)
  const p3 = readFrame(frame, FAMILY.sketch, 1)
  t.equal(p3.flags & 4, 0, 'dense block')
  const payload = new Uint8Array(p3.payload)
  new DataView(payload.buffer).setFloat64(8, Infinity, true)
  const crafted = writeFrame({ ...p3, seed: new Uint8Array(p3.seed), params: new Uint8Array(p3.params), payload })
  t.throws(
    () => SketchDelta.deserialize(crafted, { clock, wallMs: 0 }),
    { code: 'ERR_GRUDGE_FORMAT_INVALID' },
    'dense Infinity',
  )
})
