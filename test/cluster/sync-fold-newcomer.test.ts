// A sync store that starts between a folding twin's switch and its fold in Redis (switch + 2·timeoutMs)
// never pulled the base its twin is folded from: before the fix it folded an empty base and
// decided on zeros until the Redis fold (a key held at its limit by the fleet: 3 of 3 admitted,
// read 0). Now, until Redis folds it, each sync re-makes the twin of the base as Redis holds it.
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { FOLD_T0, FOLD_TIMEOUT_MS, foldSpec, foldSyncStore, writeFoldRecords } from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

t.test('sync: a store that starts between the switch and the Redis fold', async (t) => {
  const opts = await needRedis(t)
  t.test('reads a key held at its limit as the fleet does', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 's30r1-newcomer')
    const clock = new FakeClock(FOLD_T0)
    const spec = foldSpec(3)
    const make = () => foldSyncStore(admin, prefix, clock, spec)
    const a = make()
    await a.ready()
    await writeFoldRecords(admin, prefix, a.shape.fingerprint)
    let admitted = 0
    for (let i = 0; i < 8; i++) if (a.tryConsume('held', 1, 5).admitted) admitted++
    t.equal(admitted, 5, 'the key spent its limit at A')
    await a.sync(true)
    await a.sync(true)
    clock.advance(5000 + 100) // past the switch, before switch + 2·timeoutMs
    t.equal(a.tryConsume('held', 1, 5).admitted, false, 'A (folded locally) still refuses it')
    await a.sync(true)
    const c = make()
    await c.ready()
    const read = c.read('held')
    let cAdmitted = 0
    for (let i = 0; i < 3; i++) if (c.tryConsume('held', 1, 5).admitted) cAdmitted++
    t.equal(cAdmitted, 0, `a newcomer refuses it too (reads ${read}, admitted ${cAdmitted} of 3)`)
    clock.advance(2 * FOLD_TIMEOUT_MS)
    await c.sync(true)
    await a.sync(true)
    t.ok(c.read('held') >= 5, `after the Redis fold the newcomer reads ${c.read('held')}`)
    await a.close()
    await c.close()
  })
})
