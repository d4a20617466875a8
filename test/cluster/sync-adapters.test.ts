// End to end: the Fastify plugin and the Express middleware over redisStore({ mode: 'sync' }).
// What a user of sync mode relies on, through the adapters and a real Redis:
// - two app instances (each with its own factory, same seed and prefix) share one debt-meter
//   limit, within spec/cluster.md's "Sync bound";
// - the rate-limit fields, 429 and Retry-After are those of local mode;
// - with Redis gone, requests keep being decided (locally, or as onStoreError says once the
//   view is stale), the errors go to onError, none reaches a request; when Redis is back the
//   instance rejoins and pushes what it admitted meanwhile;
// - closing the app stops the sync timer and releases the client (the process can exit).
// Time is a FakeClock shared by the stores (their `clock`: local decay and the time sent to the
// sync script) and the adapters; syncs run when the test ticks a FakeTicker and awaits them.
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import express from 'express'
import { fork } from 'node:child_process'
import { uncoveredChildEnv } from '../fixtures/child-env.js'
import { fileURLToPath } from 'node:url'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { request } from 'undici'
import grudge from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { redisStore, type RedisStoreFactory, type RedisStoreOptions } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import type { Clock } from '../../src/clock.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { REDIS_URL, client, dropPrefix, needRedis, ownRedis, uniquePrefix } from './redis-helper.js'

const SEED = '2222222222222222bbbbbbbbbbbbbbbb'
const CLOSED_PORT_URL = 'redis://127.0.0.1:6392'
const WORKER = fileURLToPath(new URL('../fixtures/sync-shutdown-worker.ts', import.meta.url))

/** A sync-mode factory that also hands out the stores it built (the adapters build them at registration). */
interface SyncNode {
  factory: RedisStoreFactory
  stores: RedisSyncStore[]
  ticker: FakeTicker
  /** Run the ticker's syncs and wait for them (a sync() during one joins it). */
  sync(): Promise<void>
}

function syncNode(options: Omit<RedisStoreOptions, 'mode' | 'seed' | 'ticker'>): SyncNode {
  const ticker = new FakeTicker()
  const inner = redisStore({ seed: SEED, mode: 'sync', ticker, ...options })
  const stores: RedisSyncStore[] = []
  const factory = Object.assign(
    (spec: StoreSpec) => {
      const s = inner(spec)
      stores.push(s as unknown as RedisSyncStore)
      return s
    },
    { mode: inner.mode, ready: () => inner.ready(), onEvent: inner.onEvent },
  )
  return {
    factory,
    stores,
    ticker,
    sync: async () => {
      ticker.tick()
      await Promise.all(stores.map((s) => s.sync()))
    },
  }
}

interface Limit {
  rate: number
  burst: number
}

async function fastifyApp(clock: Clock, limit: Limit, store?: RedisStoreFactory): Promise<FastifyInstance> {
  const f = Fastify()
  await f.register(grudge, {
    clock,
    ticker: new FakeTicker(),
    ...(store !== undefined ? { store } : {}),
    limit,
    key: (req) => String(req.headers['x-user']),
  })
  f.get('/', async () => 'ok')
  await f.ready()
  return f
}

interface Reply {
  statusCode: number
  headers: Record<string, unknown>
  body: string
}

async function expressApp(clock: Clock, limit: Limit, store?: RedisStoreFactory) {
  const app = express()
  const mw = grudgeExpress({
    clock,
    ticker: new FakeTicker(),
    ...(store !== undefined ? { store } : {}),
    name: 'shared',
    limit,
    key: (req) => String(req.headers['x-user']),
  })
  app.use(mw)
  app.get('/', (_req, res) => {
    res.send('ok')
  })
  const server: Server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as AddressInfo
  return {
    get: async (user: string): Promise<Reply> => {
      const r = await request(`http://127.0.0.1:${port}/`, { headers: { 'x-user': user } })
      return { statusCode: r.statusCode, headers: r.headers, body: await r.body.text() }
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await mw.close()
    },
  }
}

type Get = (user: string) => Promise<Reply>
const viaInject =
  (f: FastifyInstance): Get =>
  async (user) => {
    const r = await f.inject({ url: '/', headers: { 'x-user': user } })
    return { statusCode: r.statusCode, headers: r.headers, body: r.body }
  }

/** What a client sees of a reply: status, the rate-limit fields, Retry-After and the body. */
const FIELDS = ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-remaining', 'x-ratelimit-reset']
function seen(r: Reply): Record<string, unknown> {
  const out: Record<string, unknown> = { status: r.statusCode, body: r.body }
  for (const h of FIELDS) out[h] = r.headers[h]
  return out
}

/** The `r=` (remaining) of an IETF RateLimit field. */
const remainingOf = (field: unknown): number => Number(/;r=(\d+)/.exec(String(field))?.[1])

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type Adapter = 'Fastify' | 'Express'

/** Two instances of one adapter, each over its own sync-mode factory, plus a local-mode one on the same clock. */
async function fleetOf(adapter: Adapter, clock: Clock, limit: Limit, nodes: SyncNode[]) {
  const closers: Array<() => Promise<void>> = []
  const gets: Get[] = []
  for (const store of [...nodes.map((n) => n.factory), undefined]) {
    if (adapter === 'Fastify') {
      const f = await fastifyApp(clock, limit, store)
      gets.push(viaInject(f))
      closers.push(() => f.close())
    } else {
      const e = await expressApp(clock, limit, store)
      gets.push(e.get)
      closers.push(e.close)
    }
  }
  for (const n of nodes) await n.factory.ready()
  return {
    gets: gets.slice(0, nodes.length),
    local: gets[nodes.length],
    close: async () => {
      for (const c of closers) await c()
    },
  }
}

for (const adapter of ['Fastify', 'Express'] as const) {
  t.test(`${adapter}: two instances in sync mode share one limit`, async (t) => {
    const opts = await needRedis(t)

    t.test('within the sync bound of spec/cluster.md', opts, async (t) => {
      const prefix = uniquePrefix(`sync-e2e-bound-${adapter}`)
      const admin = client()
      const clock = new FakeClock(20_000_000)
      const SYNC_MS = 100
      const R = 10 // per second
      const B = 5
      // maxDebt defaults to 10·B = 50 ≥ n·B + n·R·syncMs/1000 = 12: clamping forgives nothing
      const nodes = [0, 1].map(() => syncNode({ redis: REDIS_URL, prefix, clock, syncMs: SYNC_MS, timeoutMs: 2000 }))
      const fleet = await fleetOf(adapter, clock, { rate: R, burst: B }, nodes)
      t.teardown(async () => {
        await fleet.close()
        await dropPrefix(admin, prefix)
        await admin.quit()
      })
      const n = nodes.length
      const STEP_MS = 10
      const T_MS = 2000
      let admitted = 0
      let secondHalf = 0
      const statuses = new Set<number>()
      for (let ms = 0; ms < T_MS; ms += STEP_MS) {
        // each instance syncs every syncMs, A at phase 0 and B at phase syncMs/2
        for (let i = 0; i < n; i++) if (ms % SYNC_MS === (i * SYNC_MS) / n) await nodes[i].sync()
        // offered: one request per step per instance, 2 × 100/s = 20 × the fleet's rate
        for (let i = 0; i < n; i++) {
          const r = await fleet.gets[i]('hot')
          statuses.add(r.statusCode)
          if (r.statusCode === 200) {
            admitted++
            if (ms >= T_MS / 2) secondHalf++
          }
        }
        clock.advance(STEP_MS)
      }
      t.same([...statuses].sort(), [200, 429], 'only 200 and 429: every decision was a real one')
      // the fake clock does not move during a sync: rtt = 0 in the bound
      const single = B + (R * T_MS) / 1000
      const bound = single + (n - 1) * (B + (R * SYNC_MS) / 1000)
      t.ok(admitted <= bound, `admitted ${admitted} ≤ B + R·T + (n−1)·(B + R·syncMs) = ${bound}`)
      t.ok(admitted < 2 * single, `fewer than two unshared limits would admit (${2 * single}): the limit is shared`)
      t.ok(admitted >= 0.9 * single, `admitted ${admitted} ≥ 90% of the single-process B + R·T = ${single}`)
      const halfBound = (R * T_MS) / 2000 + (n * R * SYNC_MS) / 1000
      t.ok(secondHalf <= halfBound, `sustained: second half admitted ${secondHalf} ≤ R·T/2 + n·R·syncMs = ${halfBound}`)
      t.ok(
        nodes.every((nd) => nd.stores.length === 1 && nd.stores[0].syncs >= T_MS / SYNC_MS),
        'every instance synced on each tick',
      )
    })

    t.test('fields, 429 and Retry-After as in local mode, with the fleet’s figures', opts, async (t) => {
      const prefix = uniquePrefix(`sync-e2e-fields-${adapter}`)
      const admin = client()
      const clock = new FakeClock(30_000_000)
      const limit = { rate: 0.5, burst: 5 }
      const nodes = [0, 1].map(() => syncNode({ redis: REDIS_URL, prefix, clock, timeoutMs: 2000 }))
      const fleet = await fleetOf(adapter, clock, limit, nodes)
      t.teardown(async () => {
        await fleet.close()
        await dropPrefix(admin, prefix)
        await admin.quit()
      })
      const [a, b] = fleet.gets
      for (let i = 0; i < 7; i++) {
        const got = await a('alice')
        const want = await fleet.local('alice')
        t.same(seen(got), seen(want), `request ${i + 1}: what local mode sends (${want.statusCode})`)
        if (i >= 5) {
          t.equal(got.statusCode, 429)
          t.ok(Number(got.headers['retry-after']) >= 1, 'Retry-After in whole seconds')
        } else t.equal(remainingOf(got.headers.ratelimit), 4 - i)
      }
      await nodes[0].sync() // A pushes its 5
      await nodes[1].sync() // B pulls them
      const denied = await b('alice')
      t.same(seen(denied), seen(await fleet.local('alice')), 'B after the sync: the fleet’s debt, as local mode')
      t.equal(denied.statusCode, 429)
      t.equal(remainingOf(denied.headers.ratelimit), 0, 'remaining counts the fleet')
      clock.advance(2000) // one unit drains at 0.5/s
      await nodes[1].sync() // as the timer would have: a view older than 3 × syncMs is stale
      const again = await b('alice')
      t.same(seen(again), seen(await fleet.local('alice')), 'after 2 s one request fits again, as local mode')
      t.equal(again.statusCode, 200)
      t.same(seen(await b('bob')), seen(await fleet.local('bob')), 'another key: as in local mode')
    })
  })

  t.test(`${adapter}: Redis unreachable in sync mode`, async (t) => {
    for (const onStoreError of ['open', 'closed', 'local'] as const) {
      t.test(`onStoreError '${onStoreError}'`, async (t) => {
        const clock = new FakeClock(40_000_000)
        const errors: unknown[] = []
        const node = syncNode({
          redis: CLOSED_PORT_URL,
          clock,
          syncMs: 100,
          timeoutMs: 50,
          onStoreError,
          onError: (e) => errors.push(e),
        })
        const fleet = await fleetOf(adapter, clock, { rate: 0.001, burst: 5 }, [])
        const app =
          adapter === 'Fastify'
            ? await fastifyApp(clock, { rate: 0.001, burst: 5 }, node.factory)
            : await expressApp(clock, { rate: 0.001, burst: 5 }, node.factory)
        const get = adapter === 'Fastify' ? viaInject(app as FastifyInstance) : (app as { get: Get }).get
        t.teardown(async () => {
          await app.close()
          await fleet.close()
        })
        if (onStoreError === 'local') {
          // 'local' decides on the instance's own cells anyway: it starts (spec/cluster.md, Startup)
          await node.factory.ready()
          t.pass('ready() lets a local-fallback instance start')
        } else {
          await t.rejects(
            node.factory.ready(),
            { code: 'ERR_GRUDGE_CLUSTER_UNAVAILABLE', message: /connection refused/ },
            'ready() says so at startup',
          )
        }
        const fresh: Record<string, unknown>[] = []
        const local: Record<string, unknown>[] = []
        for (let i = 0; i < 6; i++) {
          fresh.push(seen(await get('alice')))
          local.push(seen(await fleet.local('alice')))
        }
        t.same(fresh, local, 'while the view is fresh: decided on its own cells, as local mode')
        await node.sync()
        t.ok(errors.length >= 1, 'the failed sync went to onError')
        t.equal(node.stores[0].failing, false, 'not stale yet')
        clock.advance(301) // > 3 × syncMs without a successful sync
        await node.sync()
        t.equal(node.stores[0].failing, true, 'stale')
        const stale = await get('bob')
        if (onStoreError === 'open') {
          t.equal(stale.statusCode, 200, "'open': admitted")
          for (const h of FIELDS) t.notOk(h in stale.headers, `no made-up ${h}`)
        } else if (onStoreError === 'closed') {
          t.equal(stale.statusCode, 503, "'closed': 503")
          t.equal(stale.headers['retry-after'], '1')
          t.notOk('ratelimit' in stale.headers, 'no made-up remaining')
        } else {
          t.same(seen(stale), seen(await fleet.local('bob')), "'local': still decided locally, real figures")
          t.same(seen(await get('alice')), seen(await fleet.local('alice')), "'local': alice is still over")
        }
      })
    }
  })

  t.test(`${adapter}: Redis stops and comes back: the instance rejoins`, async (t) => {
    t.test('rejoin', async (t) => {
      const server = await ownRedis(t, 'stop and restart it')
      if (server === undefined) return
      const clock = new FakeClock(50_000_000)
      const errors: unknown[] = []
      const mk = (onError?: (e: unknown) => void) =>
        syncNode({ redis: server.url, clock, syncMs: 100, timeoutMs: 200, onStoreError: 'local', onError })
      const nodes = [mk((e) => errors.push(e)), mk()]
      const fleet = await fleetOf(adapter, clock, { rate: 0.001, burst: 5 }, nodes)
      t.teardown(() => fleet.close())
      const [a, b] = fleet.gets
      await server.stop()
      const statuses: number[] = []
      for (let i = 0; i < 6; i++) {
        statuses.push((await a('alice')).statusCode)
        if (i === 2) await nodes[0].sync() // fails: the pushed sums are put back
      }
      t.same(statuses, [200, 200, 200, 200, 200, 429], 'decided locally while Redis is down')
      t.ok(errors.length >= 1, 'the failed sync went to onError, not to a request')
      t.equal((await b('alice')).statusCode, 200, 'B has not seen A’s requests (nothing was pushed)')
      await server.start()
      // the clients reconnect on their own (ioredis backoff); sync until both have rejoined
      const rejoin = async (node: SyncNode) => {
        const before = node.stores[0].syncs
        for (let i = 0; i < 60 && node.stores[0].syncs === before; i++) {
          await node.sync()
          if (node.stores[0].syncs === before) await sleep(50)
        }
        return node.stores[0].syncs > before
      }
      t.ok(await rejoin(nodes[0]), 'A syncs again once Redis is back: its outage traffic is pushed')
      t.ok(await rejoin(nodes[1]), 'B syncs again')
      t.equal(nodes[0].stores[0].failing, false)
      const r = await b('alice')
      t.equal(r.statusCode, 429, 'B now sees the 5 A admitted during the outage (plus its own 1)')
      t.equal(remainingOf(r.headers.ratelimit), 0)
    })
  })
}

t.test('shutdown stops the sync timer and releases the client', async (t) => {
  const opts = await needRedis(t)

  t.test('closing the app cancels the store’s ticker task', opts, async (t) => {
    const prefix = uniquePrefix('sync-e2e-close')
    const admin = client()
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const clock = new FakeClock(60_000_000)
    const nodes = [0, 1].map(() => syncNode({ redis: REDIS_URL, prefix, clock, timeoutMs: 2000 }))
    const f = await fastifyApp(clock, { rate: 1, burst: 5 }, nodes[0].factory)
    const e = await expressApp(clock, { rate: 1, burst: 5 }, nodes[1].factory)
    await nodes[0].factory.ready()
    await nodes[1].factory.ready()
    t.equal(nodes[0].ticker.size, 1, 'Fastify: one sync task while open')
    t.equal(nodes[1].ticker.size, 1, 'Express: one sync task while open')
    await viaInject(f)('alice')
    await e.get('alice')
    await f.close()
    await e.close()
    t.equal(nodes[0].ticker.size, 0, 'Fastify close: the sync task is cancelled')
    t.equal(nodes[1].ticker.size, 0, 'Express close: the sync task is cancelled')
    const fp = await admin.get(`${prefix}:{limit:default}:fp`)
    t.ok(fp !== null, 'the stores reached Redis under the prefix')
    // close() pushes once more: both requests reached the fleet's cells
    const gens = await admin.keys(`${prefix}:{limit:default}:g*`)
    t.ok(gens.length >= 1, 'the last push wrote generation keys')
  })

  t.test('a process with both adapters in sync mode exits after closing them', opts, async (t) => {
    const prefix = uniquePrefix('sync-e2e-exit')
    const admin = client()
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    // the worker uses a ref'd setInterval ticker: a task close() left running would keep it alive
    const child = fork(WORKER, [JSON.stringify({ url: REDIS_URL, seed: SEED, prefix })], {
      execArgv: ['--import', 'tsx'],
      env: uncoveredChildEnv(), // keeps the child's tsx coverage out of tap's report
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const report = new Promise<{ syncs: number[] }>((resolve) => child.once('message', resolve as never))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    const code = await exited
    clearTimeout(timer)
    t.equal(code, 0, 'the worker exited on its own, with code 0 (not killed after 20 s)')
    const { syncs } = await report
    t.ok(
      syncs.every((s) => s >= 2),
      `each store synced on the real timer before closing (${syncs.join(', ')})`,
    )
  })
})
