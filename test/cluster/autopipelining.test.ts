// A client of the user's that auto-pipelines EVALSHA (ioredis `enableAutoPipelining` without
// `autoPipeliningIgnoredCommands: ['evalsha']`) holds each exact-mode call, already one per
// event-loop turn (spec/cluster.md, "Batches"), for one more turn: slower, still correct. It was
// documented only; now the factory says it once, through its listeners (the adapters' logger),
// with the fix. ioredis decides per command from the `options` of the object the command is
// issued on (node_modules/ioredis/built/autoPipelining.js, shouldUseAutoPipelining); a Cluster
// hands its commands to the nodes with sendCommand, so only the Cluster's own options count.
import t, { type Test } from 'tap'
import { once } from 'node:events'
import Fastify from 'fastify'
import { Cluster, Redis } from 'ioredis'
import grudge from '../../plugins/fastify/index.js'
import { redisStore, type RedisStoreEvent } from '../../src/index.js'
import { autoPipelines } from '../../src/cluster/client.js'
import { FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { captureLog } from '../compat/helpers/log.js'
import { dropPrefix, client as adminClient, needRedis, uniquePrefix, REDIS_URL } from './redis-helper.js'

const SEED = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'
const spec = (name: string): StoreSpec => ({
  name,
  sketch: { levels: 2, cellsPerLevel: 64, decay: linear(1), lo: 0, hi: 100 },
  generations: 2,
  periodMs: 200_000,
})

/** A client as docs/fleet.md asks for one (no offline queue), connected. */
async function userClient(options: object): Promise<Redis> {
  const r = new Redis(REDIS_URL, { enableOfflineQueue: false, ...options })
  r.on('error', () => {})
  await once(r, 'ready')
  return r
}

/** A test that needs Redis on 6379: skipped outside CI when it is missing (redis-helper). */
function redisTest(name: string, fn: (t: Test) => Promise<void>): void {
  t.test(name, async (t) => {
    const opts = await needRedis(t)
    await t.test(name, opts, fn)
  })
}

t.test('ioredis option shapes: what auto-pipelines EVALSHA and what does not', async (t) => {
  const lazy = { lazyConnect: true }
  const cases: [string, Redis | Cluster, boolean][] = [
    ['a default client', new Redis(lazy), false],
    ['enableAutoPipelining', new Redis({ ...lazy, enableAutoPipelining: true }), true],
    [
      "enableAutoPipelining with ['evalsha'] ignored",
      new Redis({ ...lazy, enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha'] }),
      false,
    ],
    // ioredis compares lowercase names: 'EVALSHA' there does not stop it
    [
      "enableAutoPipelining with ['EVALSHA'] ignored",
      new Redis({ ...lazy, enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['EVALSHA'] }),
      true,
    ],
    ['a default Cluster', new Cluster([{ host: '127.0.0.1', port: 1 }], lazy), false],
    [
      'a Cluster with enableAutoPipelining',
      new Cluster([{ host: '127.0.0.1', port: 1 }], { ...lazy, enableAutoPipelining: true }),
      true,
    ],
    // the nodes' options do not pipeline the Cluster's commands
    [
      'a Cluster whose redisOptions say enableAutoPipelining',
      new Cluster([{ host: '127.0.0.1', port: 1 }], { ...lazy, redisOptions: { enableAutoPipelining: true } }),
      false,
    ],
  ]
  for (const [what, c, expected] of cases) {
    t.equal(autoPipelines(c, 'evalsha'), expected, what)
    c.disconnect()
  }
  t.equal(
    autoPipelines({ evalsha: () => null, script: () => null }, 'evalsha'),
    false,
    'a duck-typed client has no options',
  )
  t.equal(autoPipelines(undefined, 'evalsha'), false)
  // sync mode's pull: MGET, judged the same way
  const both = new Redis({ ...lazy, enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha', 'mget'] })
  const onlyEvalsha = new Redis({ ...lazy, enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha'] })
  t.equal(autoPipelines(both, 'mget'), false, "['evalsha', 'mget'] ignored: MGET is not pipelined")
  t.equal(autoPipelines(onlyEvalsha, 'mget'), true, "['evalsha'] alone: MGET is pipelined")
  both.disconnect()
  onlyEvalsha.disconnect()
})

redisTest('exact mode on real Redis: one event for such a client, none for a clean one', async (t) => {
  const admin = adminClient()
  const prefix = uniquePrefix('h2-autopipelining')
  t.teardown(async () => {
    await dropPrefix(admin, prefix)
    admin.disconnect()
  })

  // events of one factory over two policies, ready() of both, the factory's ready() and requests
  const run = async (source: Redis | string, name: string) => {
    const events: RedisStoreEvent[] = []
    const factory = redisStore({ redis: source, seed: SEED, prefix, timeoutMs: 2000, onEvent: (e) => events.push(e) })
    const a = factory(spec(`${name}-a`))
    const b = factory(spec(`${name}-b`))
    await a.ready()
    await b.ready()
    await factory.ready()
    for (let i = 0; i < 3; i++) {
      const r = await a.tryConsume(`k${i}`, 1, 10)
      t.equal(r.admitted, true)
      t.equal(r.failure, undefined, 'decided on Redis')
    }
    await a.close()
    await b.close()
    return events.filter((e) => e.type === 'autopipelining')
  }

  const pipelining = await userClient({ enableAutoPipelining: true })
  t.teardown(() => pipelining.disconnect())
  const warned = await run(pipelining, 'pipelining')
  t.equal(warned.length, 1, 'once per factory, whatever the policies and calls')
  t.match(warned[0], {
    type: 'autopipelining',
    policy: 'pipelining-a',
    message: /auto-pipelines EVALSHA .*add 'evalsha' to autoPipeliningIgnoredCommands on it$/,
  })
  t.match(warned[0].message, /^grudge: pipelining-a: the ioredis client passed as redis \(127\.0\.0\.1:6379\)/)

  const clean = await userClient({ enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha'] })
  t.teardown(() => clean.disconnect())
  t.same(await run(clean, 'clean'), [], 'evalsha ignored: nothing to say')
  const plain = await userClient({})
  t.teardown(() => plain.disconnect())
  t.same(await run(plain, 'plain'), [], 'no auto-pipelining: nothing to say')
  // grudge's own client auto-pipelines everything but EVALSHA (OWNED_CLIENT_OPTIONS)
  t.same(await run(REDIS_URL, 'owned'), [], 'a client grudge creates from a URL: nothing to say')
})

redisTest('without ready(), the first call says it; a throwing listener breaks neither', async (t) => {
  const admin = adminClient()
  const prefix = uniquePrefix('h2-autopipelining-throw')
  const pipelining = await userClient({ enableAutoPipelining: true })
  t.teardown(async () => {
    await dropPrefix(admin, prefix)
    admin.disconnect()
    pipelining.disconnect()
  })
  let heard = 0
  const factory = redisStore({
    redis: pipelining,
    seed: SEED,
    prefix,
    timeoutMs: 2000,
    onStoreError: 'closed',
    onEvent: (e) => {
      if (e.type === 'autopipelining') heard++
      throw new Error('a logger that throws')
    },
  })
  const s = factory(spec('first-call'))
  const r = await s.tryConsume('k', 1, 10)
  t.equal(heard, 1, 'the first call emitted it')
  t.same([r.admitted, r.failure], [true, undefined], 'and was decided on Redis')
  await t.resolves(s.ready(), 'ready() after a listener threw')
  t.equal(heard, 1, 'still once')
  await s.close()
})

redisTest('through Fastify: one warn line in the framework log', async (t) => {
  const admin = adminClient()
  const prefix = uniquePrefix('h2-autopipelining-fastify')
  const pipelining = await userClient({ enableAutoPipelining: true })
  t.teardown(async () => {
    await dropPrefix(admin, prefix)
    admin.disconnect()
    pipelining.disconnect()
  })
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  const store = redisStore({ redis: pipelining, seed: SEED, prefix, timeoutMs: 2000 })
  await f.register(grudge, { ticker: new FakeTicker(), store, limit: { rate: 1, burst: 5 }, cellsPerLevel: 64 })
  f.get('/', async () => 'ok')
  await f.ready()
  await store.ready()
  for (let i = 0; i < 3; i++) t.equal((await f.inject('/')).statusCode, 200)
  const ours = lines.filter((l) => typeof l.msg === 'string' && /auto-pipelines EVALSHA/.test(l.msg))
  t.equal(ours.length, 1, 'one line')
  t.equal(ours[0]?.level, 40, 'at warn')
  await f.close()
})

redisTest('sync mode on real Redis: one event naming MGET for such a client, none for a clean one', async (t) => {
  const admin = adminClient()
  const prefix = uniquePrefix('s28-autopipelining-sync')
  t.teardown(async () => {
    await dropPrefix(admin, prefix)
    admin.disconnect()
  })
  const run = async (source: Redis, name: string) => {
    const events: RedisStoreEvent[] = []
    const factory = redisStore({
      redis: source,
      mode: 'sync',
      seed: SEED,
      prefix,
      timeoutMs: 2000,
      onEvent: (e) => events.push(e),
    })
    const a = factory(spec(`${name}-a`))
    await a.ready()
    t.equal((await a.tryConsume('k', 1, 10)).admitted, true)
    await a.ready() // a second sync
    await a.close()
    return events.filter((e) => e.type === 'autopipelining')
  }
  const onlyEvalsha = await userClient({ enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha'] })
  t.teardown(() => onlyEvalsha.disconnect())
  const warned = await run(onlyEvalsha, 'sync-pipelining')
  t.equal(warned.length, 1, 'once per factory, over two syncs')
  t.match(warned[0]?.message, /auto-pipelines MGET .*add 'mget' to autoPipeliningIgnoredCommands on it$/)
  const clean = await userClient({ enableAutoPipelining: true, autoPipeliningIgnoredCommands: ['evalsha', 'mget'] })
  t.teardown(() => clean.disconnect())
  t.same(await run(clean, 'sync-clean'), [], "['evalsha', 'mget'] ignored: nothing to say")
})
