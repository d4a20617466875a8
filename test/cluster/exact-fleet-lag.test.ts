// #14 F3: the fleet lag record `P lag` (spec/cluster.md "Early growth", _The fleet's adoption
// lag_). Every shape round sets its instance's field D (2·checkEveryMs + timeoutMs in exact mode)
// to the round's time + D; a field whose time has passed is deleted by the next round, so an
// instance that left stops raising the fleet's twins D after its last round.
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { lagKey } from '../../src/cluster/fleet-sizing.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '7777777777777777bbbbbbbbbbbbbbbb'
const P = 20_000

t.test('exact: the fleet lag record', async (t) => {
  const opts = await needRedis(t)
  t.test('raised by a slow instance, gone D after its last round', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('f3-fleet-lag')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const T0 = 100 * P + 1000
    const clock = new FakeClock(T0)
    let jump = false
    const spec = (checkEveryMs: number): StoreSpec => ({
      name: 'm',
      sketch: { levels: 4, cellsPerLevel: 128, decay: linear(1), lo: 0, hi: 10, aggregator: 'min' },
      generations: 2,
      periodMs: P,
      sizing: {
        sizeNextGeneration: () => (jump ? 512 : 128),
        minCellsPerLevel: 16,
        maxCellsPerLevel: 512,
        growEarlyWhen: () => jump,
        checkEveryMs,
      },
    })
    const make = (checkEveryMs: number, timeoutMs: number) =>
      redisStore({ redis: admin, seed: SEED, prefix, mode: 'exact', slots: 1, clock, timeoutMs })(
        spec(checkEveryMs),
      ) as RedisExactStore
    const a = make(200, 500) // D = 900
    await a.ready()
    const key = lagKey(a.shape)
    t.same(await admin.hgetall(key), { '900': String(T0 + 900) }, 'A alone: its own field, until T0 + 900')
    clock.set(T0 + 100)
    const b = make(5000, 300) // D = 10,300
    await b.ready()
    t.same(
      await admin.hgetall(key),
      { '900': String(T0 + 900), '10300': String(T0 + 100 + 10_300) },
      'B raises the fleet lag from its first round (ready)',
    )
    const pttl = await admin.pttl(key)
    t.ok(pttl > 10_000 && pttl <= 10_301, `the record expires with its latest field (PTTL ${pttl} ms)`)
    // A alone serves traffic: its reports every 200 ms refresh its field; B's stays until T0 + 10,400
    let seenAt = NaN
    let goneAt = NaN
    for (let now = T0 + 150; now <= T0 + 11_000; now += 50) {
      clock.set(now)
      await a.tryConsume(`k-${now}`, 1, 5)
      await a.settled()
      const has = (await admin.hexists(key, '10300')) === 1
      if (has) seenAt = now
      else if (Number.isNaN(goneAt)) goneAt = now
    }
    // A's rounds leave every 200 ms of its traffic, at the first 50 ms step past it
    t.ok(seenAt >= T0 + 10_400, `B's field kept through its time T0 + 10,400 (last seen at ${seenAt - T0} ms)`)
    t.ok(goneAt <= T0 + 10_650, `deleted by A's first round after it (at ${goneAt - T0} ms)`)
    const left = await admin.hgetall(key)
    t.same(Object.keys(left), ['900'], 'A alone again')
    t.ok(Number(left['900']) > T0 + 11_000 - 300 + 900, "A's field follows its last round")
    t.ok((await admin.pttl(key)) <= 901, 'the record expires 900 ms after A’s last round')
    // a twin proposed now decides from A's own lag: B's no longer counts
    jump = true
    let proposedAt: number | undefined
    for (let now = T0 + 11_050; now <= T0 + 13_000 && proposedAt === undefined; now += 50) {
      clock.set(now)
      await a.tryConsume(`k-${now}`, 1, 5)
      await a.settled()
      if ((await admin.exists(`${prefix}:{m}:s101+`)) === 1) proposedAt = now
    }
    t.ok(proposedAt !== undefined, 'A proposed twins')
    const rec = (await admin.get(`${prefix}:{m}:s101+`)) ?? ''
    t.match(rec, new RegExp(`^${a.shape.fingerprint}:${proposedAt! + 900}:512:fold$`), 'switch = proposal + 900')
    await a.close()
    await b.close()
  })
})
