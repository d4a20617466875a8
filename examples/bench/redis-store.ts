// `npm run bench:redis-store`: limits shared through one Redis (127.0.0.1:6379, loopback only),
// same Redis, same run, bounded duration (~90 s): rows run round-robin, medians printed.
//
// 1. Store layer: decisions/s and per-call p50/p99 of grudge exact, grudge sync, grudge
//    in-process (baseline), @fastify/rate-limit's RedisStore.incr and rate-limiter-flexible's
//    RateLimiterRedis.consume, 32 calls in flight.
// 2. HTTP: requests/s and p99 latency (autocannon) of Fastify with no limiter, with grudge
//    (in-process, exact, sync) in an onRequest hook, with @fastify/rate-limit on Redis, and
//    with RateLimiterRedis in a hook. The grudge rows use a minimal hook over the store,
//    not the Fastify plugin (branch `adapters`, not merged when this was written).
//
// Limits are set high so every request is admitted: the cost of the limiter's path is measured.
import Fastify, { type FastifyInstance } from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { Redis } from 'ioredis'
import { createRequire } from 'node:module'
import { redisStore } from '../../src/index.js'
import { localStore, type ScoreStore, type StoreSpec } from '../../src/limit/store.js'
import { linear } from '../../src/sketch/decay.js'

// untyped CommonJS packages, typed here by what the bench uses
const require = createRequire(import.meta.url)
interface AutocannonResult {
  requests: { average: number }
  latency: { p99: number }
  non2xx: number
  errors: number
  timeouts: number
}
interface AutocannonClient {
  setHeaders(h: Record<string, string>): void
  on(e: string, f: () => void): void
}
const autocannon = require('autocannon') as (opts: {
  url: string
  connections: number
  duration: number
  setupClient: (c: AutocannonClient) => void
}) => Promise<AutocannonResult>
type IncrCallback = (err: Error | null, value?: unknown) => void
const RedisStoreFrl = require('@fastify/rate-limit/store/RedisStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  key: string,
) => { incr(key: string, cb: IncrCallback, timeWindowMs: number, max: number): void }

const URL = process.env.GRUDGE_REDIS_URL ?? 'redis://127.0.0.1:6379'
const SEED = process.env.GRUDGE_BENCH_SEED ?? '5eed5eed5eed5eed5eed5eed5eed5eed'
const PREFIX = `grudge-bench:${process.pid}`
const KEYS = 1000
const BIG = 1e9
const spec: StoreSpec = {
  name: 'bench',
  sketch: { levels: 4, cellsPerLevel: 4096, decay: linear(1e6), lo: 0, hi: 2e9 },
  generations: 2,
  periodMs: 3_600_000,
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]
}

/** Run `calls` decisions with `inFlight` concurrent; per-call latency in µs. */
async function storeLayer(name: string, decide: (key: string) => unknown, calls = 20_000, inFlight = 32) {
  // warm-up
  for (let i = 0; i < 500; i++) await decide(`k${i % KEYS}`)
  const lat = new Float64Array(calls)
  let next = 0
  const t0 = performance.now()
  async function lane() {
    while (next < calls) {
      const i = next++
      const s = performance.now()
      await decide(`k${i % KEYS}`)
      lat[i] = (performance.now() - s) * 1000
    }
  }
  await Promise.all(Array.from({ length: inFlight }, lane))
  const secs = (performance.now() - t0) / 1000
  lat.sort()
  return { name, perSec: calls / secs, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99) }
}

/** Start `app` on a loopback port; returns a runner measuring `duration` seconds of load. */
async function serve(app: FastifyInstance) {
  app.get('/', () => 'ok')
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  let i = 0
  return (duration: number) =>
    autocannon({
      url: `http://127.0.0.1:${port}/`,
      connections: 32,
      duration,
      setupClient: (c) => {
        c.setHeaders({ 'x-key': `k${i++ % KEYS}` })
        c.on('response', () => c.setHeaders({ 'x-key': `k${i++ % KEYS}` }))
      },
    })
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function hooked(store: ScoreStore): FastifyInstance {
  const app = Fastify()
  app.addHook('onRequest', async (req, reply) => {
    const r = await store.tryConsume(String(req.headers['x-key']), 1, BIG)
    if (!r.admitted) return reply.code(r.failure === 'closed' ? 503 : 429).send()
  })
  return app
}

async function main() {
  const redis = new Redis(URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
  await new Promise((r) => redis.once('ready', r))
  const frlRedis = new Redis(URL)
  const flexRedis = new Redis(URL, { enableOfflineQueue: false })
  await new Promise((r) => flexRedis.once('ready', r))
  const mkLocal = () => localStore()(spec)
  const mkExact = () => redisStore({ redis, seed: SEED, prefix: `${PREFIX}:exact`, timeoutMs: 1000 })(spec)
  const mkSync = () =>
    redisStore({ redis, seed: SEED, prefix: `${PREFIX}:sync`, mode: 'sync', syncMs: 100, timeoutMs: 1000 })(spec)
  const flex = new RateLimiterRedis({ storeClient: flexRedis, points: BIG, duration: 60, keyPrefix: `${PREFIX}:flex` })
  const frlStore = new RedisStoreFrl(false, false, frlRedis, `${PREFIX}:frl:`)
  const frlIncr = (key: string) =>
    new Promise((res, rej) => frlStore.incr(key, (e, v) => (e ? rej(e) : res(v)), 60_000, BIG))

  const ROUNDS = 3
  console.log(
    `store layer: ${KEYS} keys, 32 calls in flight, 20 000 calls per run, median of ${ROUNDS} round-robin runs (Redis ${URL})`,
  )
  const local = mkLocal()
  const exact = mkExact()
  const sync = mkSync()
  await exact.ready()
  await sync.ready()
  const layer: Array<[string, (k: string) => unknown]> = [
    ['grudge in-process (baseline)', (k) => local.tryConsume(k, 1, BIG)],
    ['grudge exact (Redis)', (k) => exact.tryConsume(k, 1, BIG)],
    ['grudge sync (Redis, syncMs 100)', (k) => sync.tryConsume(k, 1, BIG)],
    ['@fastify/rate-limit RedisStore.incr', (k) => frlIncr(k)],
    ['rate-limiter-flexible RateLimiterRedis', (k) => flex.consume(k)],
  ]
  const runs = layer.map(() => [] as Array<{ perSec: number; p50: number; p99: number }>)
  for (let round = 0; round < ROUNDS; round++) {
    for (const [j, [name, fn]] of layer.entries()) runs[j].push(await storeLayer(name, fn))
  }
  const rows = layer.map(([name], j) => ({
    name,
    perSec: median(runs[j].map((r) => r.perSec)),
    p50: median(runs[j].map((r) => r.p50)),
    p99: median(runs[j].map((r) => r.p99)),
  }))
  const exactRate = rows[1].perSec
  console.table(
    rows.map((r) => ({
      store: r.name,
      'decisions/s': Math.round(r.perSec),
      'p50 µs': r.p50.toFixed(1),
      'p99 µs': r.p99.toFixed(1),
      'vs grudge exact': (r.perSec / exactRate).toFixed(2) + '×',
    })),
  )

  // GRUDGE_BENCH_HTTP=0: the store layer only (quick before/after comparisons of a script)
  const http = process.env.GRUDGE_BENCH_HTTP !== '0'
  if (http) {
    console.log(
      `\nHTTP: Fastify, autocannon 32 connections, 3 s per run after a 1 s warm-up, median of ${ROUNDS} round-robin runs, loopback`,
    )
    const frlApp = Fastify()
    await frlApp.register(rateLimit, {
      max: BIG,
      timeWindow: 60_000,
      redis: frlRedis,
      nameSpace: `${PREFIX}:frlhttp:`,
      keyGenerator: (req) => String(req.headers['x-key']),
    })
    const flexApp = Fastify()
    flexApp.addHook('onRequest', async (req, reply) => {
      try {
        await flex.consume(String(req.headers['x-key']))
      } catch {
        return reply.code(429).send()
      }
    })
    const apps: Array<[string, FastifyInstance]> = [
      ['fastify, no limiter', Fastify()],
      ['fastify + grudge in-process (hook)', hooked(local)],
      ['fastify + grudge exact (hook)', hooked(exact)],
      ['fastify + grudge sync (hook)', hooked(sync)],
      ['fastify + @fastify/rate-limit (Redis store)', frlApp],
      ['fastify + RateLimiterRedis (hook)', flexApp],
    ]
    const runners = []
    for (const [, app] of apps) runners.push(await serve(app))
    for (const run of runners) await run(1) // warm-up
    const results = apps.map(() => [] as Array<{ rps: number; p99: number; non2xx: number; errors: number }>)
    for (let round = 0; round < ROUNDS; round++) {
      for (const [j, run] of runners.entries()) {
        const r = await run(3)
        results[j].push({
          rps: r.requests.average,
          p99: r.latency.p99,
          non2xx: r.non2xx,
          errors: r.errors + r.timeouts,
        })
      }
    }
    const web = apps.map(([name], j) => ({
      name,
      rps: median(results[j].map((r) => r.rps)),
      p99: median(results[j].map((r) => r.p99)),
      non2xx: results[j].reduce((a, r) => a + r.non2xx, 0),
      errors: results[j].reduce((a, r) => a + r.errors, 0),
    }))
    for (const [, app] of apps) await app.close()
    const inProcess = web[1].rps
    const frl = web[4].rps
    console.table(
      web.map((r) => ({
        server: r.name,
        'req/s': Math.round(r.rps),
        'p99 ms': r.p99,
        'vs in-process grudge': (r.rps / inProcess).toFixed(3) + '×',
        'vs @fastify/rate-limit': (r.rps / frl).toFixed(2) + '×',
        'non-2xx': r.non2xx,
        errors: r.errors,
      })),
    )
  }
  await local.close()
  await exact.close()
  await sync.close()

  // leave nothing behind on the shared Redis
  let cursor = '0'
  do {
    const [n, keys] = await frlRedis.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000)
    cursor = n
    if (keys.length > 0) await frlRedis.unlink(...keys)
  } while (cursor !== '0')
  redis.disconnect()
  frlRedis.disconnect()
  flexRedis.disconnect()
}

await main()
