// One server of `npm run bench:fleet` (forked by examples/bench/fleet-http.ts): Fastify on a
// loopback port with one limit shared through Redis, keyed by the `x-key` header:
// - grudge exact or sync: a debt meter (linear decay at `ratePerSecond`, burst `burst`, cost 1)
//   through `redisStore`, in an onRequest hook (429 when denied, 503 for onStoreError 'closed');
// - frl: @fastify/rate-limit with its Redis store, `max` per `timeWindowMs` (fixed window);
// - local: the same debt meter on grudge's in-process store (no Redis: each server limits on
//   its own), the baseline of issue #15's "sync mode stays within 5% of in-process grudge".
// It tells the parent its port, then serves until killed.
import Fastify from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { Cluster, Redis } from 'ioredis'
import { localStore, redisStore, type ScoreStore } from '../../src/index.js'
import { linear } from '../../src/sketch/decay.js'

interface Config {
  kind: 'exact' | 'sync' | 'frl' | 'local'
  /** One Redis URL, or the node URLs of a cluster. */
  redis: string | string[]
  prefix: string
  seed: string
  ratePerSecond: number
  burst: number
  frlMax: number
  frlWindowMs: number
}
const cfg = JSON.parse(process.argv[2]) as Config
const app = Fastify()
const nodes = (urls: string[]) => urls.map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) }))

if (cfg.kind === 'frl') {
  const redis = Array.isArray(cfg.redis) ? new Cluster(nodes(cfg.redis)) : new Redis(cfg.redis)
  await app.register(rateLimit, {
    max: cfg.frlMax,
    timeWindow: cfg.frlWindowMs,
    redis,
    nameSpace: `${cfg.prefix}:frl:`,
    keyGenerator: (req) => String(req.headers['x-key']),
  })
} else {
  const spec = {
    name: 'fleet-bench',
    sketch: { levels: 4, cellsPerLevel: 4096, decay: linear(cfg.ratePerSecond), lo: 0, hi: 10 * cfg.burst },
    generations: 2,
    periodMs: 3_600_000,
  }
  let store: ScoreStore
  if (cfg.kind === 'local') store = localStore()(spec)
  else {
    const shared = redisStore({
      redis: cfg.redis,
      seed: cfg.seed,
      prefix: cfg.prefix,
      mode: cfg.kind,
      timeoutMs: 500,
      syncMs: 100,
      onStoreError: 'closed',
    })(spec)
    await shared.ready()
    store = shared
  }
  app.addHook('onRequest', async (req, reply) => {
    const r = await store.tryConsume(String(req.headers['x-key']), 1, cfg.burst)
    if (!r.admitted) return reply.code(r.failure === 'closed' ? 503 : 429).send()
  })
}
app.get('/', () => 'ok')
await app.listen({ port: 0, host: '127.0.0.1' })
process.send!({ port: (app.server.address() as { port: number }).port })
