import t from 'tap'
import { Window, type RollEvent } from '../../src/window/window.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { FakeClock } from '../../src/testing/index.js'

// An update whose item the family rejects still moves time (the slot key changed): its
// roll must be reported then, as updateMany already did, not held back until the next
// call, where a second roll overwrote it and the first event (with its dropped count) was
// lost.
t.test('a roll caused by an update whose item is rejected is reported, not lost', async (t) => {
  const events: RollEvent[] = []
  const w = new Window(
    HyperLogLog,
    { precision: 4, seed: 1 },
    { everyMs: 1000, keep: 2, clock: new FakeClock(), onRoll: (e) => events.push(e) },
  )
  w.update('a', 0)
  t.throws(() => w.update(5 as never, 2000), { code: 'ERR_GRUDGE_KEY_INVALID' })
  t.same(events, [{ key: 2, previousKey: 0, dropped: 1, slotCount: 1 }], 'reported by the failing update')
  w.update('b', 3000)
  t.same(events, [
    { key: 2, previousKey: 0, dropped: 1, slotCount: 1 },
    { key: 3, previousKey: 2, dropped: 0, slotCount: 2 },
  ])
})
