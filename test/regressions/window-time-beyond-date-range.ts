import t from 'tap'
import { Window } from '../../src/window/window.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import { FakeClock } from '../../src/testing/index.js'

// With everyMs 1, a time of 1e17 ms gives a slot key above 2^53: K − keep rounds back to
// K, so the slot just written was not live (the item was silently lost, estimate 0 with
// one slot held) and the window's own frame failed to load (its key is not a safe
// integer). Times are now limited to the ECMAScript Date range, ±8.64e15 ms, where keys
// and K − keep are exact.
const make = () =>
  new Window(HyperLogLog.bySize({ precision: 4, seed: 1 }), { everyMs: 1, keep: 3, clock: new FakeClock() })

t.test('a time beyond ±8.64e15 ms is rejected and changes nothing', async (t) => {
  const w = make()
  w.addAt(0, 'a')
  for (const bad of [1e17, -1e17, 8.64e15 + 1, Number.MAX_VALUE]) {
    t.throws(() => w.addAt(bad, 'b'), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"nowMs"/ }, `addAt ${bad}`)
    t.throws(() => w.addAllAt(bad, ['b']), { code: 'ERR_GRUDGE_OPTION_INVALID' }, `addAllAt ${bad}`)
    t.throws(() => w.tickAt(bad), { code: 'ERR_GRUDGE_OPTION_INVALID' }, `tickAt ${bad}`)
  }
  t.equal(w.lastSeenMs, 0)
  t.equal(w.slotCount, 1)
})

t.test('the edge of the range works and survives a round trip', async (t) => {
  for (const now of [8.64e15, -8.64e15]) {
    const w = make()
    w.addAt(now, 'a')
    t.same(
      w.slotsAt(now).map((s) => s.key),
      [now],
      `${now}: the slot is live`,
    )
    t.ok(Math.abs(w.estimateAt(now) - 1) < 0.1, `${now}: the item counts`)
    const back = Window.deserialize<HyperLogLog>(w.serialize())
    t.equal(back.estimateAt(now), w.estimateAt(now), `${now}: round trip`)
  }
})

t.test('a frame with a latest time beyond the range is rejected', async (t) => {
  const f = readFrame(make().serialize(), FAMILY.window, 1)
  const params = f.params.slice()
  new DataView(params.buffer).setFloat64(16, 1e17, true)
  t.throws(() => Window.deserialize(writeFrame({ ...f, params })), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /lastSeenMs/,
  })
})
