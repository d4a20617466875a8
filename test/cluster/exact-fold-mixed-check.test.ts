// r1 (s30): exact mode's adoption lag D = 2·checkEveryMs + timeoutMs is the proposer's, but
// `sizing.checkEveryMs` and `timeoutMs` are per instance (not in the fingerprint): an instance
// that checks less often trusts its read of the early records for 2 × its own checkEveryMs, so it
// may write the base after the twin's switch, when another instance has folded it. Measured here:
// B (checkEveryMs 5000) holds a key at its limit on the base after A's twin switched; A, deciding
// on the twin, does not see B's writes after the fold.
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '7777777777777777aaaaaaaaaaaaaaaa'
const P = 20_000

t.test('exact: instances with another checkEveryMs around a folding twin', async (t) => {
  const opts = await needRedis(t)
  t.test('B checks every 5 s, A every 200 ms (D = 900 ms)', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('s30r1-xfold-mixed')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const T0 = 100 * P + 1000
    const clock = new FakeClock(T0)
    const spec = (checkEveryMs: number): StoreSpec => ({
      name: 'm',
      sketch: { levels: 4, cellsPerLevel: 128, decay: linear(1), lo: 0, hi: 10, aggregator: 'min' },
      generations: 2,
      periodMs: P,
      sizing: {
        sizeNextGeneration: () => 128,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 512,
        growEarlyWhen: () => false,
        checkEveryMs,
      },
    })
    const make = (checkEveryMs: number) =>
      redisStore({ redis: admin, seed: SEED, prefix, mode: 'exact', slots: 1, clock, timeoutMs: 500 })(
        spec(checkEveryMs),
      ) as RedisExactStore
    const a = make(200)
    const b = make(5000)
    await a.ready()
    await b.ready()
    // A's proposal at T0 + 100: switch = now + 2·200 + 500
    clock.set(T0 + 100)
    const SWITCH = T0 + 100 + 900
    for (const id of [100, 101]) await admin.set(`${prefix}:{m}:s${id}+`, `${a.shape.fingerprint}:${SWITCH}:512:fold`)
    // both serve traffic every 50 ms; B alone serves the key 'held' (5 a second, burst 5)
    let bAdmitted = 0
    let exactAdmitted = 0
    // the exact per-key bucket on the same requests (linear decay 1/s, burst 5)
    let debt = 0
    let at = T0
    for (let now = T0 + 150; now < T0 + 8000; now += 50) {
      clock.set(now)
      await a.tryConsume(`other-${now}`, 1, 5)
      if (now % 200 === 0) {
        debt = Math.max(0, debt - (now - at) / 1000)
        at = now
        if (debt + 1 <= 5) {
          debt += 1
          exactAdmitted++
        }
        if ((await b.tryConsume('held', 1, 5)).admitted) bAdmitted++
      }
      await a.settled()
      await b.settled()
    }
    t.comment(`B admitted 'held' ${bAdmitted} times in [0.15, 8) s, the exact bucket ${exactAdmitted}`)
    // B wrote the base until its next report read the twin (about 5 s): what it admitted there
    // after A's fold (about 1 s) is not in the twin, and B admits it once more after it adopts the twin
    t.ok(bAdmitted <= exactAdmitted, `B admits the key at most what the exact bucket does`, {
      todo: 'the adoption lag D is the proposer’s (2 × its checkEveryMs + its timeoutMs); an instance with a longer checkEveryMs writes the base after the fold (r1, s30: 16 against 12; 12 when B checks every 200 ms too)',
    })
    await a.close()
    await b.close()
  })
})
