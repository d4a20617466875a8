// spec/cluster.md "Sync mode's folding twin" says an instance that had not read the early record
// by the switch (its syncs failing since before the twin's start + D) could push to the base after
// the fold, losing those writes. Over one slot (the only folding case) a sync's shape round reads
// the record before the push is built, so such an instance folds its unpushed sums into the twin
// and pushes them there: nothing is lost. (r1, s30)
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { none } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisLike } from '../../src/cluster/client.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '6666666666666666ffffffffffffffff'

t.test('sync: a store whose syncs fail from before the twin’s start to after the Redis fold', async (t) => {
  const opts = await needRedis(t)
  t.test('loses none of its writes of the outage (it reads the record before it pushes)', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('s30r1-fold-late-adopter')
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
    let down = false
    const fail = () => Promise.reject(new Error('injected: Redis unreachable'))
    const r = admin as unknown as Required<RedisLike>
    const wrapped: RedisLike = {
      evalsha: (sha, n, ...a) => (down ? fail() : admin.evalsha(sha, n, ...a)),
      evalshaBuffer: (sha, n, ...a) => (down ? fail() : r.evalshaBuffer(sha, n, ...a)),
      eval: (src, n, ...a) => (down ? fail() : admin.eval(src, n, ...a)),
      evalBuffer: (src, n, ...a) => (down ? fail() : r.evalBuffer(src, n, ...a)),
      mgetBuffer: (...keys) => (down ? Promise.reject(new Error('injected')) : admin.mgetBuffer(...keys)),
      script: (sub, src) => admin.script(sub, src),
    }
    const make = (redis: RedisLike) =>
      redisStore({
        redis,
        seed: SEED,
        prefix,
        mode: 'sync',
        clock,
        ticker: new FakeTicker(),
        timeoutMs: TIMEOUT_MS,
        onStoreError: 'local',
      })(spec) as RedisSyncStore
    const a = make(admin)
    const c = make(wrapped)
    await a.ready()
    await c.ready()
    const total = new Map<string, number>()
    const add = (s: RedisSyncStore, key: string, v: number) => {
      s.add(key, v)
      total.set(key, (total.get(key) ?? 0) + v)
    }
    down = true
    const SWITCH = T0 + 5000
    for (const id of [100, 101]) await admin.set(`${prefix}:{f}:s${id}+`, `${a.shape.fingerprint}:${SWITCH}:128:fold`)
    for (let i = 0; i < 40; i++) add(i % 2 === 0 ? a : c, `k${i % 17}`, 1 + (i % 3))
    await a.sync(true)
    await c.sync() // fails
    clock.set(SWITCH + 10)
    for (let i = 0; i < 20; i++) add(i % 2 === 0 ? a : c, `k${i % 13}`, 2)
    await a.sync(true)
    clock.set(SWITCH + 2 * TIMEOUT_MS + 10)
    await a.sync(true) // Redis folds the twins
    for (const id of [100, 101]) t.ok((await admin.strlen(`${prefix}:{f}:g${id}+`)) > 0, `twin ${id} folded in Redis`)
    const bases = await Promise.all([100, 101].map((id) => admin.getBuffer(`${prefix}:{f}:g${id}`)))
    for (let i = 0; i < 20; i++) add(c, `k${i % 11}`, 3) // the outage goes on: C writes locally
    await c.sync()
    down = false
    for (let round = 0; round < 3; round++) {
      await c.sync(true)
      await a.sync(true)
    }
    const after = await Promise.all([100, 101].map((id) => admin.getBuffer(`${prefix}:{f}:g${id}`)))
    t.ok(
      after.every((b, i) => b !== null && bases[i] !== null && b.equals(bases[i])),
      'C pushed nothing to the bases after the fold',
    )
    let below = 0
    for (const s of [a, c])
      for (const [key, sum] of total)
        if (s.read(key) < sum - 1e-9 && below++ < 5) t.fail(`${key}: reads ${s.read(key)} < ${sum} added`)
    t.equal(below, 0, 'every key reads at least what the fleet added, C’s outage writes included')
    await a.close()
    await c.close()
  })
})
