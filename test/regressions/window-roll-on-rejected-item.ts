import t from 'tap'
import { Window, type RollEvent } from '../../src/window/window.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { FakeClock } from '../../src/testing/index.js'

// An add (then `update`) whose item the family rejects still moves time (the slot key
// changed): its roll must be reported then, as addAll already did, not held back until
// the next call, where a second roll overwrote it and the first event (with its dropped
// count) was lost.
t.test('a roll caused by an add whose item is rejected is reported, not lost', async (t) => {
  const events: RollEvent[] = []
  const w = new Window(HyperLogLog.bySize({ precision: 4, seed: 1 }), {
    everyMs: 1000,
    keep: 2,
    clock: new FakeClock(),
    onRoll: (e) => events.push(e),
  })
  w.addAt(0, 'a')
  t.throws(() => w.addAt(2000, 5 as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
  t.same(events, [{ key: 2, previousKey: 0, dropped: 1, slotCount: 1 }], 'reported by the failing add')
  w.addAt(4000, 'b')
  t.same(events, [
    { key: 2, previousKey: 0, dropped: 1, slotCount: 1 },
    { key: 4, previousKey: 2, dropped: 1, slotCount: 1 },
  ])
})
