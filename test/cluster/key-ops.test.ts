// peek / reset / forgive through both adapters over the Redis stores (exact and sync mode),
// two app instances sharing one prefix on the real Redis at 127.0.0.1:6379 (unique prefix per
// test, dropped after); and reset / forgive during an outage of an exact store with
// onStoreError 'local' (a private redis-server under CLIENT PAUSE): only the instance's
// fallback copy is lowered, said once through the framework logger (spec/http.md §2.1.2).
import t from 'tap'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import grudgeFastify from '../../plugins/fastify/index.js'
import { grudge as grudgeExpress, type GrudgeMiddleware } from '../../plugins/express/index.js'
import { redisStore } from '../../src/index.js'
import type { KeyOps } from '../../src/http/key-ops.js'
import { FakeTicker } from '../../src/testing/index.js'
import { captureLog } from '../compat/helpers/log.js'
import { REDIS_URL, client, dropPrefix, needRedis, ownRedis, uniquePrefix } from './redis-helper.js'

const SEED = '00112233445566778899aabbccddeeff'
// 0.001/s: the test's seconds drain < 0.01 units of debt
const LIMIT = { rate: 0.001, burst: 5 }
const key = (req: { headers: Record<string, unknown> }) => String(req.headers['x-user'])

interface Instance {
  /** One request of `user`: its status. */
  hit(user: string): Promise<number>
  ops: KeyOps<never>
  /** A sync-mode store's push and pull (ready() syncs once); a no-op for exact mode. */
  sync(): Promise<void>
  close(): Promise<void>
}

async function fastifyInstance(store: ReturnType<typeof redisStore>): Promise<Instance> {
  const f = Fastify()
  await f.register(grudgeFastify, { ticker: new FakeTicker(), store, limit: LIMIT, key, storeTimeoutMs: 10_000 })
  f.get('/', async () => 'ok')
  await f.ready()
  return {
    hit: async (user) => (await f.inject({ url: '/', headers: { 'x-user': user } })).statusCode,
    ops: f.grudge as unknown as KeyOps<never>,
    sync: () => store.ready(),
    close: () => f.close(),
  }
}

async function expressInstance(store: ReturnType<typeof redisStore>): Promise<Instance> {
  const mw: GrudgeMiddleware = grudgeExpress({
    ticker: new FakeTicker(),
    store,
    // the limiter's name namespaces its cells: two instances share them under one name
    name: 'api',
    limit: LIMIT,
    key,
    storeTimeoutMs: 10_000,
    warn: () => {},
  })
  // the middleware driven with a request of its own: its charge, not Express's routing, is under test
  const hit = (user: string) =>
    new Promise<number>((resolve, reject) => {
      let status = 200
      const res = {
        setHeader() {},
        removeHeader() {},
        once() {},
        status(s: number) {
          status = s
          return res
        },
        json() {
          resolve(status)
        },
      }
      const req = { headers: { 'x-user': user }, method: 'GET', ip: '127.0.0.1' }
      mw(
        req as never,
        res as never,
        ((err?: unknown) =>
          err ? reject(err instanceof Error ? err : new Error('next() got a non-Error')) : resolve(200)) as never,
      )
    })
  return { hit, ops: mw as unknown as KeyOps<never>, sync: () => store.ready(), close: () => mw.close() }
}

const debtOf = async (i: Instance, k: string) => (await i.ops.peek(k)).limit!.debt

t.test('peek, reset and forgive reach the fleet through Redis', async (t) => {
  const opts = await needRedis(t)
  for (const mode of ['exact', 'sync'] as const)
    for (const [adapter, make] of [
      ['fastify', fastifyInstance],
      ['express', expressInstance],
    ] as const)
      t.test(`${adapter}, ${mode} mode`, opts, async (t) => {
        const prefix = uniquePrefix(`key-ops-${adapter}-${mode}`)
        const admin = client()
        const store = () => redisStore({ redis: REDIS_URL, mode, seed: SEED, prefix, timeoutMs: 2000, syncMs: 60_000 })
        const a = await make(store())
        const b = await make(store())
        t.teardown(async () => {
          await a.close()
          await b.close()
          await dropPrefix(admin, prefix)
          await admin.quit()
        })
        for (let i = 0; i < 3; i++) t.equal(await a.hit('u'), 200)
        await a.sync() // sync mode: A pushes its 3, B pulls them
        await b.sync()
        t.ok(Math.abs((await debtOf(b, 'fn:u')) - 3) < 0.01, 'B reads the debt A charged')
        t.ok(Math.abs((await debtOf(b, 'fn:u')) - 3) < 0.01, 'peek consumes nothing')
        t.equal(await debtOf(b, 'fn:other'), 0, 'another key reads 0')
        await b.ops.forgive('fn:u', 2)
        await b.sync()
        await a.sync()
        t.ok(Math.abs((await debtOf(a, 'fn:u')) - 1) < 0.01, 'A reads the debt B forgave: 3 − 2')
        for (let i = 0; i < 4; i++) t.equal(await a.hit('u'), 200, `request ${i + 1} of the 4 left`)
        t.equal(await a.hit('u'), 429, 'the burst is full again')
        await a.sync()
        await b.sync()
        await b.ops.reset('fn:u')
        await b.sync()
        await a.sync()
        t.ok((await debtOf(a, 'fn:u')) < 0.01, 'A reads 0 after B reset the key')
        t.equal(await a.hit('u'), 200, 'admitted again')
      })
})

t.test("reset / forgive during an outage of an exact store with onStoreError 'local'", async (t) => {
  for (const adapter of ['fastify', 'express'] as const)
    t.test(adapter, async (t) => {
      const server = await ownRedis(t, 'pause it')
      if (server === undefined) return
      const admin = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: () => 20 })
      admin.on('error', () => {})
      t.teardown(() => admin.disconnect())
      // retryMs: after a failure the store skips Redis for 1.5 s, so no command of the
      // outage is queued behind the pause and applied after it
      const store = redisStore({
        redis: server.url,
        mode: 'exact',
        seed: SEED,
        prefix: uniquePrefix('key-ops-outage'),
        timeoutMs: 150,
        retryMs: 1500,
        onStoreError: 'local',
      })
      let logged: () => string[]
      let ops: KeyOps<never>
      let hit: (user: string) => Promise<number>
      let close: () => Promise<void>
      if (adapter === 'fastify') {
        const log = captureLog()
        const f = Fastify({ logger: log.logger })
        await f.register(grudgeFastify, { ticker: new FakeTicker(), store, limit: LIMIT, key })
        f.get('/', async () => 'ok')
        await f.ready()
        ops = f.grudge
        hit = async (user) => (await f.inject({ url: '/', headers: { 'x-user': user } })).statusCode
        close = () => f.close()
        logged = () => log.lines.map((l) => String(l.msg))
      } else {
        const warnings: string[] = []
        const mw = grudgeExpress({ ticker: new FakeTicker(), store, limit: LIMIT, key, warn: (m) => warnings.push(m) })
        logged = () => warnings
        ops = mw
        hit = async (user) =>
          new Promise<number>((resolve) => {
            const res = { setHeader() {}, removeHeader() {}, once() {}, status: () => res, json: () => resolve(429) }
            mw(
              { headers: { 'x-user': user }, method: 'GET', ip: '127.0.0.1' } as never,
              res as never,
              (() => resolve(200)) as never,
            )
          })
        close = () => mw.close()
      }
      t.teardown(() => close())
      const lines = () => logged().filter((m) => /during a Redis outage/.test(m))
      for (let i = 0; i < 3; i++) t.equal(await hit('u'), 200)
      t.ok(Math.abs((await debtOf({ ops } as Instance, 'fn:u')) - 3) < 0.01, 'Redis holds a debt of 3')
      await admin.call('CLIENT', 'PAUSE', '1000')
      const pausedAt = performance.now()
      // a read (harmless when Redis applies it after the pause) finds the outage
      t.equal(await debtOf({ ops } as Instance, 'fn:u'), 0, 'the fallback starts empty')
      await ops.reset('fn:u')
      await ops.reset('fn:u')
      await ops.forgive('fn:u', 1)
      t.equal(lines().filter((m) => m.includes('reset()')).length, 1, 'one line for the resets, however many')
      t.equal(lines().filter((m) => m.includes('forgive()')).length, 1, 'one line for forgive')
      t.match(lines()[0], /in-process fallback only; the shared cells in Redis keep it/)
      t.notMatch(lines().join('\n'), /fn:u/, 'the key is not logged')
      // past the pause and the retry interval: Redis decides again
      const waitMs = Math.max(0, pausedAt + 1700 - performance.now())
      await new Promise((r) => setTimeout(r, waitMs))
      t.ok(
        Math.abs((await debtOf({ ops } as Instance, 'fn:u')) - 3) < 0.01,
        'Redis still holds 3: the reset was local only',
      )
      await ops.reset('fn:u')
      t.ok((await debtOf({ ops } as Instance, 'fn:u')) < 0.01, 'a reset with Redis up lowers the shared cells')
      t.equal(lines().filter((m) => m.includes('reset()')).length, 1, 'and logs nothing')
    })
})
