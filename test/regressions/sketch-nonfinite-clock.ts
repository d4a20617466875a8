// A clock returning NaN or ±Infinity must never stamp a non-finite time into a cell or a
// frame. The hot paths (update, query, tryUpdate) already treat such a reading as "decay
// nothing, stamp nothing"; merge, takeDelta, applyDelta, serialize and deserialize read
// the clock directly, so a single bad reading froze cells forever (touched = +Infinity:
// no later time is ever after it, so the cell never decays again) or wrote a frame that
// the reader then refuses. They now throw ERR_GRUDGE_VALUE_NOT_FINITE and change nothing.
import t from 'tap'
import { Rotator, Sketch, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { serializeAtWall } from '../sketch/fixtures/serialize-at-wall.js'

const shape = { levels: 2, cellsPerLevel: 8, decay: linear(1), hi: 100, seed: 1 }
const notFinite = { code: 'ERR_GRUDGE_VALUE_NOT_FINITE' }

for (const bad of [Infinity, NaN, -Infinity]) {
  t.test(`clock reading ${bad}`, async (t) => {
    let now = 0
    const clock = { now: () => now }

    t.test('merge throws and leaves the cells decaying', async (t) => {
      now = 0
      const a = new Sketch({ ...shape, clock })
      const b = new Sketch({ ...shape, clock: new FakeClock() })
      a.update('k', 10)
      b.update('k', 5)
      now = bad
      t.throws(() => a.merge(b), notFinite)
      now = 4000
      t.equal(a.estimate('k'), 6, 'debt 10 drained 4 s at 1/s: the cell was not frozen')
      const other = new Sketch({ ...shape, clock })
      now = bad
      t.throws(() => b.merge(other), notFinite, "the other sketch's clock too")
      t.equal(b.estimate('k'), 5, 'b unchanged')
    })

    t.test('takeDelta throws and leaves the cells decaying', async (t) => {
      now = 0
      const a = new Sketch({ ...shape, clock })
      a.update('k', 10)
      now = bad
      t.throws(() => a.takeDelta(), notFinite)
      now = 3000
      t.equal(a.estimate('k'), 7)
    })

    t.test('applyDelta throws and changes nothing', async (t) => {
      now = 0
      const src = new Sketch({ ...shape, clock: new FakeClock() })
      src.update('k', 4)
      const d = src.takeDelta()
      const a = new Sketch({ ...shape, clock })
      a.update('k', 10)
      now = bad
      t.throws(() => a.applyDelta(d), notFinite)
      now = 2000
      t.equal(a.estimate('k'), 8)
    })

    t.test('serialize throws instead of writing a frame no reader accepts', async (t) => {
      now = 0
      const a = new Sketch({ ...shape, clock })
      a.update('k', 10)
      now = bad
      t.throws(() => a.serialize(), notFinite)
    })

    t.test('deserialize throws instead of mapping cell times to a non-finite time', async (t) => {
      const c = new FakeClock()
      const a = new Sketch({ ...shape, clock: c })
      a.update('k', 10)
      const frame = serializeAtWall(a, 0)
      now = bad
      t.throws(() => Sketch.deserialize(frame, { clock, wallMs: 0 }), notFinite)
      const r = new Rotator({ sketch: shape, periodMs: 100_000, clock: c, ticker: new FakeTicker() })
      r.update('k', 10)
      const rframe = serializeAtWall(r, 0)
      t.throws(() => Rotator.deserialize(rframe, { clock, wallMs: 0, ticker: new FakeTicker() }), notFinite)
    })

    t.test('a rotation under a bad reading keeps a serializable rotator', async (t) => {
      now = 0
      const ticker = new FakeTicker()
      const r = new Rotator({ sketch: shape, periodMs: 100_000, clock, ticker })
      r.update('k', 10)
      now = bad
      ticker.tick() // from a timer: must not throw
      t.equal(r.rotations, 1)
      now = 1000
      const frame = serializeAtWall(r, 0)
      const back = Rotator.deserialize(frame, { clock: new FakeClock(1000), wallMs: 0, ticker: new FakeTicker() })
      t.equal(back.rotations, 1, 'the frame of a rotator rotated under a bad clock reads back')
      back.close()
      r.close()
    })
  })
}
