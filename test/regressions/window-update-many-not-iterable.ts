import t from 'tap'
import { Window } from '../../src/window/window.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { FakeClock } from '../../src/testing/index.js'

// addAll (then `updateMany`) with something that is not iterable threw the engine's uncoded TypeError
// ("items is not iterable") after it had already moved time and opened an empty slot.
t.test('addAll rejects a non-iterable with a coded error and changes nothing', async (t) => {
  const w = new Window(HyperLogLog.bySize({ precision: 10, seed: 1 }), {
    everyMs: 1000,
    keep: 3,
    clock: new FakeClock(),
  })
  w.addAt(0, 'a')
  for (const bad of [5, null, undefined, { length: 1, 0: 'x' }]) {
    t.throws(
      () => w.addAllAt(5000, bad as never),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"items"/ },
      JSON.stringify(bad) ?? 'undefined',
    )
  }
  t.equal(w.lastSeenMs, 0, 'time did not move')
  t.same(
    w.slotsAt(0).map((s) => s.key),
    [0],
    'no slot opened',
  )
  w.addAllAt(1000, 'bc') // a string is iterable: its characters are the items
  t.ok(Math.abs(w.slotsAt(1000)[0].sketch.estimate() - 2) < 0.1)
})
