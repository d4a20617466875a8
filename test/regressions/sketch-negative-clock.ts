// A never-touched cell has time 0. The lazy decay stamps a cell only when now > its time,
// so under a clock whose readings are below 0 (FakeClock accepts any finite start; a
// user clock may count from any origin) the first update left the time at 0: the score
// then did not decay at all until the clock passed 0. A never-touched cell (score 0,
// time 0) now takes the time of its first touch whatever its sign.
import t from 'tap'
import { Sketch, exponential, linear, applyDecay } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'
import { serializeAtWall } from '../sketch/fixtures/serialize-at-wall.js'

for (const decay of [linear(1), exponential(0.1)]) {
  t.test(`${decay.kind}: scores decay from their first touch under negative clock readings`, async (t) => {
    const want = applyDecay(10, decay, 5000)
    const ops: [string, (s: Sketch) => void][] = [
      ['update', (s) => s.update('k', 10)],
      ['updateAndEstimate', (s) => void s.updateAndEstimate('k', 10)],
      ['tryUpdate', (s) => void s.tryUpdate('k', 10, 100)],
      ['estimate then update', (s) => (s.estimate('k'), s.update('k', 10))],
      [
        'merge',
        (s) => {
          const other = new Sketch({ levels: 3, cellsPerLevel: 64, decay, hi: 100, seed: 1, clock: s.clock })
          other.update('k', 10)
          s.merge(other)
        },
      ],
    ]
    for (const [name, op] of ops) {
      const clock = new FakeClock(-10_000)
      const s = new Sketch({ levels: 3, cellsPerLevel: 64, decay, hi: 100, seed: 1, clock })
      op(s)
      clock.set(-5_000)
      t.equal(s.estimate('k'), want, `${name}: 5 s of decay`)
    }
  })
}

t.test('a broken clock reading still stamps nothing on a fresh cell', async (t) => {
  let now = -10_000
  const s = new Sketch({ levels: 2, cellsPerLevel: 8, decay: linear(1), hi: 100, seed: 1, clock: { now: () => now } })
  now = NaN
  s.update('k', 10)
  now = -5_000
  t.equal(s.estimate('k'), 10, 'not wiped by an infinitely long decay from a −Infinity stamp')
  const frame = serializeAtWall(s, 0)
  t.equal(
    Sketch.deserialize(frame, { clock: new FakeClock(), wallMs: 0 }).estimate('k'),
    10,
    'and the frame reads back',
  )
})

t.test(
  'linear applyDelta into a never-touched cell drains the time in transit under negative clock readings',
  async (t) => {
    const clock = new FakeClock(-10_000)
    const config = { levels: 3, cellsPerLevel: 64, decay: linear(1), hi: 100, seed: 1, clock }
    const src = new Sketch(config)
    src.update('k', 10)
    const d = src.takeDelta()
    clock.advance(1000)
    const dst = new Sketch(config)
    dst.applyDelta(d)
    t.equal(dst.estimate('k'), 9, 'debt 10 taken 1 s ago at 1/s reads 9, as on the source')
    t.equal(src.estimate('k'), 9)
  },
)
