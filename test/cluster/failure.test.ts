// Failure handling against real Redis servers: a closed port, CLIENT PAUSE, SCRIPT FLUSH,
// a stop + restart that loses every key (the documented amnesty), FLUSHALL, and the
// fleet fingerprint. Pause/flush/restart run on a redis-server of this test's own (never
// the shared one on 6379, which other suites use).
import { once } from 'node:events'
import t from 'tap'
import { Redis } from 'ioredis'
import { exponential, linear, none } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import { Murmur3Hasher } from '../../src/hash/hasher.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, ownRedis, uniquePrefix } from './redis-helper.js'

const SEED = '0f0e0d0c0b0a09080706050403020100'
const spec = (over: Partial<StoreSpec['sketch']> = {}): StoreSpec => ({
  name: 'api',
  sketch: { levels: 3, cellsPerLevel: 64, decay: none(), lo: 0, hi: 1000, ...over },
  generations: 2,
  periodMs: 3_600_000,
})
const CLOSED_PORT_URL = 'redis://127.0.0.1:6390'

t.test('options: the seed is required and options are checked once', async (t) => {
  const noSeed = { redis: CLOSED_PORT_URL } as unknown as Parameters<typeof redisStore>[0]
  t.throws(() => redisStore(noSeed), { code: 'ERR_GRUDGE_CLUSTER_SEED_REQUIRED' })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: '' }), { code: 'ERR_GRUDGE_CLUSTER_SEED_REQUIRED' })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: 'not hex' }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /seed/,
  })
  t.throws(() => redisStore({ redis: 'http://x', seed: SEED }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /redis/ })
  t.throws(() => redisStore({ redis: {} as never, seed: SEED }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /redis/,
  })
  // neither a client, a Cluster nor a URL (list): refused at construction, before any connection
  for (const redis of [42, null, [], ['redis://a:1', 'http://b:2'], [7], { host: '127.0.0.1', port: 6379 }]) {
    t.throws(() => redisStore({ redis: redis as never, seed: SEED }), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message:
        /option "redis": expected an ioredis client or Cluster, a redis:\/\/ or rediss:\/\/ URL, or a non-empty list/,
    })
  }
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: SEED, mode: 'fast' as never }), { message: /"mode"/ })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: SEED, timeoutMs: 0 }), { message: /"timeoutMs"/ })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: SEED, onStoreError: 'retry' as never }), {
    message: /"onStoreError"/,
  })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: SEED, prefix: 'a{b}' }), { message: /"prefix"/ })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: SEED, syncMs: 0.5 }), { message: /"syncMs"/ })
  t.throws(() => redisStore({ redis: CLOSED_PORT_URL, seed: SEED, retryMs: -1 }), { message: /"retryMs"/ })
  const f = redisStore({ redis: CLOSED_PORT_URL, seed: SEED })
  t.throws(() => f({ ...spec(), generations: 1 }), { message: /"generations"/ })
  t.throws(() => f({ ...spec(), name: '' }), { message: /"spec.name"/ })
  t.throws(
    () => f(spec({ cellsPerLevel: 2 ** 30, levels: 4 })),
    { message: /512 MiB/ },
    'one slot of 2^30 / 16 cells × 4 levels',
  )
  t.throws(() => f(spec({ lo: 1 })), { message: /"lo"/ })
  t.throws(
    () => f(spec({ decay: linear(1), hi: 1e9 })),
    { code: 'ERR_GRUDGE_ROTATOR_AMNESTY' },
    'the Rotator amnesty guard applies',
  )
})

t.test('a closed port: every mode answers at once, per onStoreError', async (t) => {
  for (const mode of ['open', 'closed', 'local'] as const) {
    const store = redisStore({ redis: CLOSED_PORT_URL, seed: SEED, onStoreError: mode, timeoutMs: 50 })(
      spec(),
    ) as RedisExactStore
    const rows: Array<{ limit: number; want: object }> =
      mode === 'open'
        ? [
            { limit: 1, want: { admitted: true, failure: 'open' } },
            { limit: 1, want: { admitted: true, failure: 'open' } },
          ]
        : mode === 'closed'
          ? [
              { limit: 1, want: { admitted: false, failure: 'closed' } },
              { limit: 1, want: { admitted: false, failure: 'closed' } },
            ]
          : // local: the in-process Rotator decides, so the second request over a limit of 1 is denied
            [
              { limit: 1, want: { admitted: true, score: 1 } },
              { limit: 1, want: { admitted: false, score: 1 } },
            ]
    for (const [i, row] of rows.entries()) {
      const r = await store.tryConsume('k', 1, row.limit)
      t.match(r, row.want, `${mode}: request ${i + 1}`)
      if (mode !== 'local') t.ok(Number.isNaN(r.score), `${mode}: no made-up score`)
      else t.notOk('failure' in r, 'local: a real decision, no failure flag')
    }
    t.ok(store.failing, `${mode}: the store reports it is failing`)
    if (mode === 'local') {
      // 'local' decides in process anyway: starting without Redis is safe, and said once
      await store.ready()
      t.pass('local: ready() lets the instance start on the in-process fallback')
    } else {
      await t.rejects(
        store.ready(),
        {
          code: 'ERR_GRUDGE_CLUSTER_UNAVAILABLE',
          // the operator's words: where, and why
          message: /redis at 127\.0\.0\.1:6390: .*connection refused \(ECONNREFUSED\)/,
        },
        `${mode}: ready() refuses to start, naming host, port and the refusal`,
      )
    }
    await store.close()
    await t.rejects(store.tryConsume('k', 1, 1), { code: 'ERR_GRUDGE_CLUSTER_CLOSED' })
  }
})

t.test('fingerprint: one hash for the fleet', async (t) => {
  const opts = await needRedis(t)
  t.test('another seed or shape is refused with a coded error', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('fp')
    const a = redisStore({ redis: admin, seed: SEED, slots: 1, prefix, timeoutMs: 2000 })(spec())
    await a.ready()
    t.same(await a.tryConsume('k', 1, 10), { admitted: true, score: 1 })
    const same = redisStore({ redis: admin, seed: SEED, slots: 1, prefix, timeoutMs: 2000 })(spec())
    await same.ready()
    t.same(
      await same.tryConsume('k', 1, 10),
      { admitted: true, score: 2 },
      'a second instance with the same seed shares the cells',
    )
    const otherSeed = redisStore({ redis: admin, seed: 'ffffffffffffffffffffffffffffffff', slots: 1, prefix })(spec())
    await t.rejects(otherSeed.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' })
    await t.rejects(
      async () => otherSeed.tryConsume('k', 1, 10),
      { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
      'requests too, never silent corruption',
    )
    const otherShape = redisStore({ redis: admin, seed: SEED, slots: 1, prefix })(spec({ cellsPerLevel: 128 }))
    await t.rejects(otherShape.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' })
    const otherDecay = redisStore({ redis: admin, seed: SEED, slots: 1, prefix })(spec({ decay: exponential(2) }))
    await t.rejects(otherDecay.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, 'another decay kind')
    // the default murmur3 (x86_128, id 3) against the x64_128 variant (id 1, the default before 0.1.0)
    const otherHash = redisStore({ redis: admin, seed: SEED, slots: 1, prefix })(
      spec({ hasher: new Murmur3Hasher(1, 'x64_128') }),
    )
    await t.rejects(otherHash.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, 'another murmur3 variant')
    const otherMode = redisStore({
      redis: admin,
      seed: SEED,
      prefix,
      mode: 'sync',
      ticker: { every: () => ({ cancel() {} }) },
    })(spec())
    await t.rejects(otherMode.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' })
    t.same(await a.tryConsume('k', 1, 10), { admitted: true, score: 3 }, 'the first instance is unaffected')
    for (const s of [a, same, otherSeed, otherShape, otherDecay, otherHash, otherMode]) await s.close()
    await dropPrefix(admin, prefix)
  })
})

t.test('pause, script flush, stop + restart, flushall (private redis-server)', async (t) => {
  t.test('failure modes', async (t) => {
    const server = await ownRedis(t, 'pause, flush, stop and restart it')
    if (server === undefined) return
    const admin = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 20 })
    admin.on('error', () => {})
    // the store's own client, configured as spec/cluster.md asks of a user-provided one
    const c = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 20 })
    c.on('error', () => {})
    t.teardown(() => {
      admin.disconnect()
      c.disconnect()
    })
    if (c.status !== 'ready') await once(c, 'ready')
    const mk = (mode: 'open' | 'closed' | 'local', prefix: string) =>
      redisStore({ redis: c, seed: SEED, onStoreError: mode, timeoutMs: 150, retryMs: 0, prefix })(
        spec(),
      ) as RedisExactStore

    // CLIENT PAUSE 600 ms: each request gives up after timeoutMs, long before Redis answers
    for (const mode of ['open', 'closed', 'local'] as const) {
      const store = mk(mode, `pause-${mode}`)
      t.same(await store.tryConsume('k', 1, 1), { admitted: true, score: 1 }, `${mode}: before the pause`)
      const pausedAt = performance.now()
      await admin.client('PAUSE', 600, 'ALL')
      const waiter = admin.ping() // answered when the pause ends
      const r = await store.tryConsume('k', 1, 10)
      const waited = performance.now() - pausedAt
      if (mode === 'open') t.same(r, { admitted: true, score: NaN, failure: 'open' })
      if (mode === 'closed') t.same(r, { admitted: false, score: NaN, failure: 'closed' })
      if (mode === 'local') t.same(r, { admitted: true, score: 1 }, 'local: a fresh in-process Rotator admits')
      t.ok(
        waited < 600,
        `${mode}: answered while Redis was still paused (${waited.toFixed(0)} ms < 600 ms pause; timeoutMs 150)`,
      )
      await waiter
      const after = await store.tryConsume('k', 0, 1e9)
      t.notOk('failure' in after, `${mode}: resumes after the pause without a restart`)
      // the timed-out command ran when the pause ended: counted, never forgiven
      t.equal(after.score, 2, `${mode}: the timed-out request was applied late by Redis (score 2)`)
      t.notOk(store.failing)
      await store.close()
    }

    // SCRIPT FLUSH: NOSCRIPT is answered by SCRIPT LOAD and the same call goes through
    {
      const store = mk('closed', 'flush')
      t.same(await store.tryConsume('k', 1, 5), { admitted: true, score: 1 })
      await admin.script('FLUSH')
      t.same(
        await store.tryConsume('k', 1, 5),
        { admitted: true, score: 2 },
        'after SCRIPT FLUSH: reloaded, state intact',
      )
      await store.close()
    }

    // stop + restart that loses all data: requests follow onStoreError meanwhile; then amnesty
    {
      const open = mk('open', 'restart')
      const closed = mk('closed', 'restart')
      for (let i = 0; i < 3; i++) await open.tryConsume('k', 1, 3)
      t.match(await open.tryConsume('k', 1, 3), { admitted: false, score: 3 }, 'over the limit before the restart')
      await server.stop()
      t.match(await open.tryConsume('k', 1, 3), { admitted: true, failure: 'open' }, 'stopped: open admits, flagged')
      t.match(
        await closed.tryConsume('k', 1, 3),
        { admitted: false, failure: 'closed' },
        'stopped: closed denies, flagged',
      )
      await server.start()
      if (c.status !== 'ready') await once(c, 'ready')
      t.same(
        await open.tryConsume('k', 1, 3),
        { admitted: true, score: 1 },
        'restarted without data: the debt is forgiven (documented amnesty)',
      )
      t.same(
        await closed.tryConsume('k', 1, 3),
        { admitted: true, score: 2 },
        'both instances resume without a restart of their own',
      )
      await open.close()
      await closed.close()
    }

    // FLUSHALL (data loss without a restart): amnesty again, and the fingerprint is stored anew
    {
      const store = mk('closed', 'flushall')
      for (let i = 0; i < 2; i++) await store.tryConsume('k', 1, 2)
      t.match(await store.tryConsume('k', 1, 2), { admitted: false })
      await admin.flushall()
      t.same(await store.tryConsume('k', 1, 2), { admitted: true, score: 1 })
      t.equal((await admin.keys('flushall:{api*}:fp')).length, 1, "the fingerprint of the key's slot is written again")
      await store.close()
    }
  })
})

t.test('a client grudge creates from a URL has no offline queue on the request path', async (t) => {
  const store = redisStore({ redis: CLOSED_PORT_URL, seed: SEED, onStoreError: 'closed' })(spec()) as RedisExactStore
  t.teardown(() => store.close())
  const shared = (store as unknown as { shared: { get(): Promise<Redis> } }).shared
  const c = await shared.get()
  t.equal(c.options.enableOfflineQueue, false)
  // while disconnected a command fails at once instead of waiting to run late after a reconnect
  await t.rejects(c.evalsha('0'.repeat(40), 0), /enableOfflineQueue|writeable/i)
})

t.test(
  'one timeout per request, not one per policy: a failure holds for every store of the factory for retryMs',
  async (t) => {
    // a client whose commands never answer (Redis paused or a black-holed network)
    let calls = 0
    const hanging = {
      evalsha: () => {
        calls++
        return new Promise<never>(() => {})
      },
      script: () => new Promise<never>(() => {}),
    }
    const factory = redisStore({ redis: hanging, seed: SEED, timeoutMs: 20, retryMs: 60_000, onStoreError: 'open' })
    const abuse = factory({ ...spec(), name: 'abuse' }) as RedisExactStore
    const limit = factory({ ...spec(), name: 'limit' }) as RedisExactStore
    t.teardown(async () => {
      await abuse.close()
      await limit.close()
    })
    t.ok(Number.isNaN(await abuse.read('k')), 'the first policy waits for its timeout, then answers per onStoreError')
    t.equal(calls, 1)
    t.match(await limit.tryConsume('k', 1, 10), { admitted: true, failure: 'open' })
    t.equal(calls, 1, 'the second policy of the same request skips Redis: no second wait')
    t.ok(limit.failing, 'and reports that it is failing')
  },
)
