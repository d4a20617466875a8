// End to end: the Fastify plugin and the Express middleware over redisStore({ mode: 'exact' }).
// Two app instances in one process, each with its own store (its own ioredis client) and the
// same seed, must share one limit per key through the real Redis on 6379; with Redis
// unreachable, onStoreError decides: 'open' admits and sends no made-up figures, 'closed'
// answers 503 with Retry-After, 'local' decides on the in-process fallback (429 over the limit).
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import express from 'express'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { request } from 'undici'
import grudge from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { redisStore } from '../../src/index.js'
import { FakeTicker } from '../../src/testing/index.js'
import { REDIS_URL, client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '00112233445566778899aabbccddeeff'
// rate 0.001/s: decay over the test's few seconds is < 0.01 units, so 5 requests fill a burst of 5
const LIMIT = { rate: 0.001, burst: 5 }
const CLOSED_PORT_URL = 'redis://127.0.0.1:6391'

async function fastifyApp(
  store: ReturnType<typeof redisStore>,
  onStoreError?: 'open' | 'closed',
  onError?: (err: Error) => void,
): Promise<FastifyInstance> {
  const f = Fastify()
  if (onError !== undefined) f.addHook('onError', async (_req, _reply, err) => onError(err))
  await f.register(grudge, {
    ticker: new FakeTicker(),
    store,
    limit: LIMIT,
    key: (req) => String(req.headers['x-user']),
    // longer than the store's own timeoutMs: the store's bound must answer first
    storeTimeoutMs: 10_000,
    ...(onStoreError !== undefined ? { onStoreError } : {}),
  })
  f.get('/', async () => 'ok')
  await f.ready()
  return f
}

async function expressApp(store: ReturnType<typeof redisStore>) {
  const app = express()
  const mw = grudgeExpress({
    ticker: new FakeTicker(),
    store,
    name: 'shared',
    limit: LIMIT,
    key: (req) => String(req.headers['x-user']),
    storeTimeoutMs: 10_000,
  })
  app.use(mw)
  app.get('/', (_req, res) => {
    res.send('ok')
  })
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as AddressInfo
  return {
    get: async (user: string) => {
      const r = await request(`http://127.0.0.1:${port}/`, { headers: { 'x-user': user } })
      await r.body.text()
      return { statusCode: r.statusCode, headers: r.headers }
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await mw.close()
    },
  }
}

/** The `r=` (remaining) of an IETF RateLimit field. */
const remainingOf = (field: unknown): number => Number(/;r=(\d+)/.exec(String(field))?.[1])

t.test('two app instances share one limit per key through Redis', async (t) => {
  const opts = await needRedis(t)
  t.test('Fastify × 2', opts, async (t) => {
    const prefix = uniquePrefix('adapters-fastify')
    const admin = client()
    const a = await fastifyApp(redisStore({ redis: REDIS_URL, mode: 'exact', seed: SEED, prefix, timeoutMs: 2000 }))
    const b = await fastifyApp(redisStore({ redis: REDIS_URL, mode: 'exact', seed: SEED, prefix, timeoutMs: 2000 }))
    t.teardown(async () => {
      await a.close()
      await b.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    // alternate instances: 5 admitted in total, the remaining figure counts both
    const rows = [
      { app: a, status: 200, remaining: 4 },
      { app: b, status: 200, remaining: 3 },
      { app: a, status: 200, remaining: 2 },
      { app: b, status: 200, remaining: 1 },
      { app: a, status: 200, remaining: 0 },
      { app: b, status: 429, remaining: 0 },
      { app: a, status: 429, remaining: 0 },
    ]
    for (const [i, row] of rows.entries()) {
      const r = await row.app.inject({ url: '/', headers: { 'x-user': 'alice' } })
      t.equal(r.statusCode, row.status, `request ${i + 1} on ${row.app === a ? 'A' : 'B'}: ${row.status}`)
      t.equal(remainingOf(r.headers.ratelimit), row.remaining, `request ${i + 1}: remaining counts the fleet`)
    }
    const other = await b.inject({ url: '/', headers: { 'x-user': 'bob' } })
    t.equal(other.statusCode, 200, 'another key has its own limit')
    t.equal(remainingOf(other.headers.ratelimit), 4)
  })

  t.test('Express × 2 (real servers)', opts, async (t) => {
    const prefix = uniquePrefix('adapters-express')
    const admin = client()
    const a = await expressApp(redisStore({ redis: REDIS_URL, mode: 'exact', seed: SEED, prefix, timeoutMs: 2000 }))
    const b = await expressApp(redisStore({ redis: REDIS_URL, mode: 'exact', seed: SEED, prefix, timeoutMs: 2000 }))
    t.teardown(async () => {
      await a.close()
      await b.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const seen: number[] = []
    for (let i = 0; i < 7; i++) seen.push((await (i % 2 === 0 ? a : b).get('carol')).statusCode)
    t.same(seen, [200, 200, 200, 200, 200, 429, 429], 'burst 5 across both instances, then 429')
  })
})

t.test('Redis unreachable: onStoreError through the adapters', async (t) => {
  const dead = (onStoreError: 'open' | 'closed' | 'local') =>
    redisStore({ redis: CLOSED_PORT_URL, mode: 'exact', seed: SEED, timeoutMs: 50, retryMs: 0, onStoreError })

  t.test("'open': admitted, no remaining/reset figures", async (t) => {
    const f = await fastifyApp(dead('open'))
    t.teardown(() => f.close())
    for (let i = 0; i < 7; i++) {
      const started = performance.now()
      const r = await f.inject({ url: '/', headers: { 'x-user': 'alice' } })
      t.equal(r.statusCode, 200, `request ${i + 1} admitted although over the burst of 5`)
      // the adapter's own storeTimeoutMs is 10 s: answering sooner shows the store's bound decided
      t.ok(performance.now() - started < 5000, 'answered by the store, not by the adapter timeout')
      for (const h of ['ratelimit', 'ratelimit-policy', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'])
        t.notOk(h in r.headers, `no ${h} header`)
    }
    t.equal(f.grudge.stats().policies.store.admitted, 7)
  })

  t.test("'open' through Express: no figures either", async (t) => {
    const app = await expressApp(dead('open'))
    t.teardown(() => app.close())
    const r = await app.get('alice')
    t.equal(r.statusCode, 200)
    t.notOk('ratelimit' in r.headers)
    t.notOk('ratelimit-policy' in r.headers)
  })

  t.test("'closed': 503 with Retry-After", async (t) => {
    const f = await fastifyApp(dead('closed'))
    t.teardown(() => f.close())
    const r = await f.inject({ url: '/', headers: { 'x-user': 'alice' } })
    t.equal(r.statusCode, 503)
    t.equal(r.headers['retry-after'], '1')
    t.notOk('ratelimit' in r.headers, 'no made-up remaining')
  })

  t.test("'local': the in-process fallback decides, so a key over its limit gets 429", async (t) => {
    const f = await fastifyApp(dead('local'))
    t.teardown(() => f.close())
    const statuses: number[] = []
    for (let i = 0; i < 7; i++) statuses.push((await f.inject({ url: '/', headers: { 'x-user': 'alice' } })).statusCode)
    t.same(statuses, [200, 200, 200, 200, 200, 429, 429])
    const last = await f.inject({ url: '/', headers: { 'x-user': 'alice' } })
    t.equal(remainingOf(last.headers.ratelimit), 0, 'real figures from the fallback')
    t.ok('retry-after' in last.headers)
    const other = await f.inject({ url: '/', headers: { 'x-user': 'bob' } })
    t.equal(other.statusCode, 200, 'another key is unaffected')
    t.equal(remainingOf(other.headers.ratelimit), 4)
  })
})

t.test('an instance with another seed behind an adapter is refused, not failed open', async (t) => {
  const opts = await needRedis(t)
  t.test('Fastify', opts, async (t) => {
    const prefix = uniquePrefix('adapters-fp')
    const admin = client()
    const goodStore = redisStore({ redis: REDIS_URL, mode: 'exact', seed: SEED, prefix, timeoutMs: 2000 })
    const good = await fastifyApp(goodStore)
    // the adapter's onStoreError is 'open': a store failure would admit; a fingerprint mismatch must not
    const badStore = redisStore({
      redis: REDIS_URL,
      mode: 'exact',
      seed: 'ffeeddccbbaa99887766554433221100',
      prefix,
      timeoutMs: 2000,
    })
    const errors: Error[] = []
    const bad = await fastifyApp(badStore, 'open', (err) => errors.push(err))
    t.teardown(async () => {
      await good.close()
      await bad.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    await goodStore.ready()
    t.pass('the first instance starts: its fingerprint is stored')
    await t.rejects(
      badStore.ready(),
      { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
      'the startup check refuses the other seed',
    )
    t.equal((await good.inject({ url: '/', headers: { 'x-user': 'alice' } })).statusCode, 200)
    const r = await bad.inject({ url: '/', headers: { 'x-user': 'alice' } })
    t.equal(r.statusCode, 500, "the framework's error path, not a silent fail-open")
    t.notMatch(r.body, /ERR_GRUDGE/, 'the client gets a generic body, not our internal code')
    t.match(
      errors.map((e) => (e.cause as { code?: string } | undefined)?.code),
      ['ERR_GRUDGE_CLUSTER_FINGERPRINT'],
      'the error path carries the cause',
    )
    t.equal(bad.grudge.stats().policies.store.admitted, 0, 'not counted as a store failure')
  })
})

t.test("the factory's ready() covers the stores it built and skips closed ones", async (t) => {
  const opts = await needRedis(t)
  t.test('ready', opts, async (t) => {
    const prefix = uniquePrefix('adapters-ready')
    const admin = client()
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const spec = { name: 'p', sketch: { levels: 2, cellsPerLevel: 8 }, generations: 2, periodMs: 3_600_000 }
    const first = redisStore({ redis: admin, seed: SEED, prefix })
    const a = first(spec)
    await first.ready()
    t.equal(await admin.exists(`${prefix}:{p}:fp`), 1, 'ready() of the factory stored the fingerprint')
    const other = redisStore({ redis: admin, seed: 'ffeeddccbbaa99887766554433221100', prefix })
    const b = other(spec)
    await t.rejects(other.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' })
    await b.close()
    await other.ready()
    t.pass('a closed store is no longer checked')
    await a.close()
  })
})
