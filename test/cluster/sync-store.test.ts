// Sync mode against a real Redis, on a fake clock (the store's `clock` option: the sync
// script then uses that time too) and a FakeTicker (syncs run when the test says so).
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear, none } from '../../src/sketch/decay.js'
import { redisStore, type RedisScoreStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import type { RedisLike } from '../../src/cluster/client.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '1111111111111111aaaaaaaaaaaaaaaa'

t.test('sync mode with a real Redis', async (t) => {
  const opts = await needRedis(t)

  t.test('instances see each other after a sync, and only then', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('sync-see')
    const clock = new FakeClock(5_000_000)
    const spec: StoreSpec = {
      name: 's',
      sketch: { levels: 3, cellsPerLevel: 256, decay: none() },
      generations: 2,
      periodMs: 60_000,
    }
    const mk = () =>
      redisStore({ redis: admin, seed: SEED, prefix, mode: 'sync', clock, ticker: new FakeTicker(), timeoutMs: 2000 })(
        spec,
      ) as RedisSyncStore
    const a = mk()
    const b = mk()
    await a.ready()
    await b.ready()
    const rows: Array<{ act: () => unknown; want: unknown; why: string }> = [
      { act: () => a.add('k', 5), want: 5, why: 'A adds 5 locally' },
      { act: () => b.read('k'), want: 0, why: 'B has not synced: zero round trips, stale view' },
      { act: () => a.sync(), want: undefined, why: 'A pushes' },
      { act: () => b.read('k'), want: 0, why: 'B still has its old view' },
      { act: () => b.sync(), want: undefined, why: 'B pulls' },
      { act: () => b.read('k'), want: 5, why: "B sees A's 5" },
      { act: () => b.tryConsume('k', 3, 8), want: { admitted: true, score: 8 }, why: 'B admits 3 (5 + 3 ≤ 8)' },
      {
        act: () => a.tryConsume('k', 3, 8),
        want: { admitted: true, score: 8 },
        why: "A, not yet synced, admits too: the sync bound's over-admission",
      },
      { act: () => b.sync(), want: undefined, why: 'B pushes its 3' },
      { act: () => a.sync(), want: undefined, why: 'A pushes its 3, pulls B’s' },
      { act: () => a.read('k'), want: 11, why: 'A: 5 + 3 + 3' },
      { act: () => a.tryConsume('k', 1, 8), want: { admitted: false, score: 11 }, why: 'over the limit fleet-wide' },
      { act: () => b.sync(), want: undefined, why: 'B pulls' },
      { act: () => b.read('k'), want: 11, why: 'both agree' },
      { act: () => a.read('other'), want: 0, why: 'another key is untouched' },
    ]
    for (const row of rows) t.same(await row.act(), row.want, row.why)
    await a.close()
    await b.close()
    await dropPrefix(admin, prefix)
  })

  t.test('over-admission stays within the stated bound (4 instances, staggered syncs)', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('sync-bound')
    const clock = new FakeClock(7_000_000)
    const n = 4
    const R = 100 // per second
    const B = 20
    const SYNC_MS = 50
    const T_MS = 10_000
    const spec: StoreSpec = {
      name: 'b',
      sketch: { levels: 4, cellsPerLevel: 1024, decay: linear(R), lo: 0, hi: 1e4 },
      generations: 2,
      periodMs: 3_600_000,
    }
    const stores = Array.from(
      { length: n },
      () =>
        redisStore({
          redis: admin,
          seed: SEED,
          prefix,
          mode: 'sync',
          clock,
          ticker: new FakeTicker(),
          timeoutMs: 5000,
          syncMs: SYNC_MS,
        })(spec) as RedisSyncStore,
    )
    for (const s of stores) await s.ready()
    let admitted = 0
    let secondHalf = 0
    for (let ms = 0; ms < T_MS; ms++) {
      clock.advance(1)
      for (let i = 0; i < n; i++) {
        // instance i syncs at its own phase: ms ≡ i·syncMs/n (mod syncMs)
        if (ms % SYNC_MS === Math.floor((i * SYNC_MS) / n)) await stores[i].sync(true)
        // offered load: 1 request per ms per instance = 10× the fleet's rate
        if (stores[i].tryConsume('hot', 1, B).admitted) {
          admitted++
          if (ms >= T_MS / 2) secondHalf++
        }
      }
    }
    const single = B + (R * T_MS) / 1000
    const bound = single + (n - 1) * (B + (R * SYNC_MS) / 1000)
    t.ok(admitted <= bound, `admitted ${admitted} ≤ B + R·T + (n−1)·(B + R·syncMs) = ${bound}`)
    t.ok(admitted >= 0.95 * single, `admitted ${admitted} ≥ 95% of the single-process B + R·T = ${single}`)
    const halfBound = (R * T_MS) / 2000 + n * ((R * SYNC_MS) / 1000)
    t.ok(secondHalf <= halfBound, `sustained: second half admitted ${secondHalf} ≤ R·T/2 + n·R·syncMs = ${halfBound}`)
    for (const s of stores) await s.close()
    await dropPrefix(admin, prefix)
  })

  t.test(
    'the pull: a full one by MGET after the script, or in its reply, a delta in the reply; a pull that fails after the merge puts nothing back',
    opts,
    async (t) => {
      const admin = client()
      t.teardown(() => admin.quit())
      const prefix = uniquePrefix('sync-pull')
      const clock = new FakeClock(9_000_000)
      const spec: StoreSpec = {
        name: 'p',
        sketch: { levels: 3, cellsPerLevel: 256, decay: none() },
        generations: 2,
        periodMs: 60_000,
      }
      // the client's script commands only: without mgetBuffer the script returns the cells
      const r = admin as unknown as Required<RedisLike>
      const scripts: RedisLike = {
        evalsha: r.evalsha.bind(r),
        evalshaBuffer: r.evalshaBuffer.bind(r),
        eval: r.eval.bind(r),
        evalBuffer: r.evalBuffer.bind(r),
        script: r.script.bind(r),
      }
      let failPull = true
      const mgets: string[][] = []
      const flaky: RedisLike = {
        ...scripts,
        mgetBuffer: (...keys: string[]) => {
          mgets.push(keys)
          return failPull ? Promise.reject(new Error('pull lost')) : r.mgetBuffer(...keys)
        },
      }
      const errors: unknown[] = []
      const mk = (redis: RedisLike) =>
        redisStore({
          redis,
          seed: SEED,
          prefix,
          mode: 'sync',
          clock,
          ticker: new FakeTicker(),
          timeoutMs: 2000,
          onError: (e) => errors.push(e),
        })(spec) as RedisSyncStore
      const a = mk(r) // ioredis: MGET after the script
      const b = mk(scripts) // the cells in the script's reply
      await a.ready()
      await b.ready()
      a.add('k', 5)
      await a.sync()
      await b.sync()
      t.equal(b.read('k'), 5, "B (cells in the reply) sees A's 5")
      b.add('k', 2)
      await b.sync()
      await a.sync()
      t.equal(a.read('k'), 7, "A (cells by MGET) sees B's 2")
      failPull = false
      const c = mk(flaky)
      await c.ready()
      t.equal(c.read('k'), 7, 'C pulled the fleet at ready()')
      t.same(
        mgets[0],
        [`${prefix}:{p}:g${Math.floor(9_000_000 / 60_000)}`, `${prefix}:{p}:g${Math.floor(9_000_000 / 60_000) + 1}`],
        'one MGET of the live generations, oldest first (not the one ahead)',
      )
      // after its first pull C pulls only the change log's tail: no MGET
      c.add('k', 0)
      await c.sync()
      t.equal(mgets.length, 1, 'a delta pull reads no cells with MGET')
      t.equal(c.read('k'), 7, 'C reads the fleet after a delta pull')
      // a log started anew (here: gone) makes every instance's next pull a full one, by MGET
      const g0 = Math.floor(9_000_000 / 60_000)
      await admin.del(`${prefix}:{p}:l${g0}`, `${prefix}:{p}:l${g0 + 1}`)
      failPull = true
      c.add('k', 1)
      await c.sync() // merged, then the (full) pull fails: absorbed, reported
      t.match(errors, [{ message: 'pull lost' }], 'the failed pull reaches onError')
      t.equal(c.read('k'), 8, 'C keeps its own view (fleet 7 + its 1) after the failed pull')
      await a.sync()
      t.equal(a.read('k'), 8, "C's push was merged before its pull failed")
      failPull = false
      await c.sync()
      await a.sync()
      t.equal(a.read('k'), 8, "C's 1 was not put back and pushed again")
      t.equal(c.read('k'), 8, 'C pulls again once MGET answers')
      await a.close()
      await b.close()
      await c.close()
      await dropPrefix(admin, prefix)
    },
  )
})

t.test('sync mode when Redis is unreachable', async (t) => {
  const spec: StoreSpec = {
    name: 'u',
    sketch: { levels: 2, cellsPerLevel: 64, decay: none() },
    generations: 2,
    periodMs: 60_000,
  }
  for (const mode of ['open', 'closed', 'local'] as const) {
    const clock = new FakeClock(1_000_000)
    const errors: unknown[] = []
    const store = redisStore({
      redis: 'redis://127.0.0.1:6390',
      seed: SEED,
      mode: 'sync',
      clock,
      ticker: new FakeTicker(),
      syncMs: 100,
      onStoreError: mode,
      onError: (e) => errors.push(e),
    })(spec) as RedisScoreStore & RedisSyncStore
    t.same(
      store.tryConsume('k', 1, 1),
      { admitted: true, score: 1 },
      `${mode}: decides locally while the view is fresh`,
    )
    await store.sync()
    t.ok(errors.length >= 1, `${mode}: the failed sync is reported to onError`)
    clock.advance(301) // > 3 × syncMs without a successful sync
    const r = store.tryConsume('k', 1, 1)
    if (mode === 'open') t.same(r, { admitted: true, score: NaN, failure: 'open' })
    if (mode === 'closed') t.same(r, { admitted: false, score: NaN, failure: 'closed' })
    if (mode === 'local') t.same(r, { admitted: false, score: 1 }, 'local: keeps deciding on its own cells')
    t.equal(store.failing, true)
    if (mode === 'local')
      await store.ready() // decides on its own cells anyway: starts
    else await t.rejects(store.ready(), { code: 'ERR_GRUDGE_CLUSTER_UNAVAILABLE', message: /connection refused/ })
    await store.close()
  }
})
