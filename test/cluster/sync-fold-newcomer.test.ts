// A sync store that starts between a folding twin's switch and its fold in Redis (switch + 2·timeoutMs)
// never pulled the base its twin is folded from: before the fix it folded an empty base and
// decided on zeros until the Redis fold (a key held at its limit by the fleet: 3 of 3 admitted,
// read 0). Now, until Redis folds it, each sync re-makes the twin of the base as Redis holds it.
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { none } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '6666666666666666ffffffffffffffff'

t.test('sync: a store that starts between the switch and the Redis fold', async (t) => {
  const opts = await needRedis(t)
  t.test('reads a key held at its limit as the fleet does', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('s30r1-newcomer')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const PERIOD = 600_000
    const T0 = 100 * PERIOD + 1000
    const TIMEOUT_MS = 2000
    const clock = new FakeClock(T0)
    const spec: StoreSpec = {
      name: 'f',
      sketch: { levels: 3, cellsPerLevel: 32, decay: none(), lo: 0, hi: 1e9, aggregator: 'min' },
      generations: 2,
      periodMs: PERIOD,
      sizing: {
        sizeNextGeneration: () => 32,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 256,
        growEarlyWhen: () => false,
        checkEveryMs: 1000,
      },
    }
    const make = () =>
      redisStore({
        redis: admin,
        seed: SEED,
        prefix,
        mode: 'sync',
        clock,
        ticker: new FakeTicker(),
        timeoutMs: TIMEOUT_MS,
        onStoreError: 'local',
      })(spec) as RedisSyncStore
    const a = make()
    await a.ready()
    const fp = a.shape.fingerprint
    const SWITCH = T0 + 5000
    for (const id of [100, 101]) await admin.set(`${prefix}:{f}:s${id}+`, `${fp}:${SWITCH}:128:fold`)
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
    clock.advance(2 * TIMEOUT_MS)
    await c.sync(true)
    await a.sync(true)
    t.ok(c.read('held') >= 5, `after the Redis fold the newcomer reads ${c.read('held')}`)
    await a.close()
    await c.close()
  })
})
