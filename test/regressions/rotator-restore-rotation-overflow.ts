// Rotator.deserialize applies the rotations missed while down, floor(elapsed / periodMs).
// A frame whose writer wall-clock lies absurdly far in the past (a crafted frame with a
// correct CRC, or a tiny period after a long downtime) pushed the rotation count past
// 2^53: the restored rotator then wrote frames its own reader refuses ("rotations: a safe
// integer") and derived generation seeds from an inexact index. The load now fails with
// ERR_GRUDGE_FORMAT_INVALID instead of returning such a rotator.
import t from 'tap'
import { Rotator, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import { serializeAtWall } from '../sketch/fixtures/serialize-at-wall.js'

t.test('a crafted writer wall-clock far in the past is refused', async (t) => {
  const clock = new FakeClock()
  const r = new Rotator({
    sketch: { decay: linear(1), hi: 10, levels: 1, cellsPerLevel: 8 },
    periodMs: 15_000,
    clock,
    ticker: new FakeTicker(),
    seed: 7,
  })
  const parts = readFrame(serializeAtWall(r, 0), FAMILY.rotator, 2)
  const params = new Uint8Array(parts.params)
  new DataView(params.buffer).setFloat64(36, -1e300, true) // writer wall-clock ms
  const crafted = writeFrame({
    ...parts,
    seed: new Uint8Array(parts.seed),
    params,
    payload: new Uint8Array(parts.payload),
  })
  t.throws(() => Rotator.deserialize(crafted, { clock, wallMs: 0, ticker: new FakeTicker() }), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
  })
  r.close()
})

t.test('a tiny period after a long downtime is refused; a plausible one restores and round-trips', async (t) => {
  const clock = new FakeClock()
  const tiny = new Rotator({
    sketch: { levels: 1, cellsPerLevel: 8 },
    periodMs: 1e-6,
    clock,
    ticker: new FakeTicker(),
    seed: 7,
  })
  t.throws(() => Rotator.deserialize(serializeAtWall(tiny, 0), { clock, wallMs: 3.15e11, ticker: new FakeTicker() }), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
  })
  const ok = new Rotator({
    sketch: { levels: 1, cellsPerLevel: 8 },
    periodMs: 1000,
    clock,
    ticker: new FakeTicker(),
    seed: 7,
  })
  const back = Rotator.deserialize(serializeAtWall(ok, 0), { clock, wallMs: 3.15e11, ticker: new FakeTicker() })
  t.equal(back.rotations, 3.15e8, 'ten years at one rotation per second')
  const again = Rotator.deserialize(serializeAtWall(back, 3.15e11), {
    clock,
    wallMs: 3.15e11,
    ticker: new FakeTicker(),
  })
  t.equal(again.rotations, 3.15e8)
})
