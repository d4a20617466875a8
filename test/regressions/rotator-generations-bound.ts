// The rotator frame stores generations in [2, 65535] and its reader refuses more, but the
// Rotator constructor accepted any integer ≥ 2: a rotator of 65536 generations wrote a
// frame that Rotator.deserialize then refused, so a restart lost its state. The
// constructor now refuses generations > 65535 naming the option.
import t from 'tap'
import { Rotator } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { serializeAtWall } from '../sketch/fixtures/serialize-at-wall.js'

t.test('generations above the frame limit are refused at construction', async (t) => {
  const base = { sketch: { levels: 1, cellsPerLevel: 1, seed: 1 }, periodMs: 1000, clock: new FakeClock() }
  t.throws(() => new Rotator({ ...base, generations: 65536, ticker: new FakeTicker() }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /generations/,
  })
  const r = new Rotator({ ...base, generations: 65535, ticker: new FakeTicker() })
  const back = Rotator.deserialize(serializeAtWall(r, 0), {
    clock: new FakeClock(),
    wallMs: 0,
    ticker: new FakeTicker(),
  })
  t.equal(back.generations, 65535, 'the largest accepted count round-trips')
  r.close()
  back.close()
})
