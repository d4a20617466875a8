import t from 'tap'
import Fastify from 'fastify'
import { request } from 'undici'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { localStore, type StoreFactory } from '../../src/limit/store.js'
import type { FastifyReply, FastifyRequest, RegisterOptions } from 'fastify'
import type {
  AdapterAbuseOptions,
  AdapterFairnessOptions,
  AdapterLimitOptions,
  BloomRegistryConfig,
  GrudgeFastifyOptions,
  GrudgeRouteOptions,
} from '../../plugins/fastify/index.js'
import {
  FASTIFY_REGISTER_KEYS,
  GRUDGE_FASTIFY_OPTION_KEYS,
  GRUDGE_ROUTE_OPTION_KEYS,
} from '../../plugins/fastify/options.js'
import { BLOOM_REGISTRY_CONFIG_KEYS } from '../../src/http/bloom-registry.js'
import type { RegisterBloomOptions } from '../../src/bloom/registry.js'
import { sipHash } from '../../src/hash/hasher.js'
import { typo, unknownOption } from '../unknown-option.js'

function app(opts: Record<string, unknown> = {}, fastifyOpts: Record<string, unknown> = {}) {
  const clock = new FakeClock(1_000_000)
  const ticker = new FakeTicker()
  const f = Fastify(fastifyOpts)
  return { f, clock, ticker, register: () => f.register(grudge, { clock, ticker, ...opts }) }
}

t.test(
  'debt meter: burst admitted, then 429 with Retry-After, RateLimit fields and body that agree with the real wait',
  async (t) => {
    const { f, clock, register } = app({ limit: { rate: 2, burst: 5 } })
    await register()
    f.get('/a', async () => 'ok')
    for (let i = 0; i < 5; i++) {
      const r = await f.inject('/a')
      t.equal(r.statusCode, 200)
      t.equal(r.headers['ratelimit-policy'], '"default";q=5;w=3') // burst 5 restored in 5/2 = 2.5 s → 3
      t.equal(r.headers['ratelimit'], `"default";r=${4 - i};t=${Math.ceil((i + 1) / 2)}`)
      t.notOk('retry-after' in r.headers)
    }
    // debt 5, drains at 2/s; the next request (cost 1) fits after 0.5 s → 1 s
    clock.advance(0) // no time
    const denied = await f.inject('/a')
    t.equal(denied.statusCode, 429)
    t.equal(denied.headers['retry-after'], '1')
    t.equal(denied.headers['ratelimit'], '"default";r=0;t=1')
    t.match(denied.json(), { statusCode: 429, error: 'Too Many Requests', message: /retry in 1 second\b/ })
    clock.advance(499)
    t.equal((await f.inject('/a')).statusCode, 429, 'still denied 1 ms before the debt has drained enough')
    clock.advance(1)
    t.equal((await f.inject('/a')).statusCode, 200, 'admitted exactly when the debt has drained enough')
    await f.close()
  },
)

t.test('Retry-After is whole seconds of the real wait for a larger cost, not the window and not ms', async (t) => {
  const { f, clock, register } = app({
    limit: {
      rate: 0.5,
      burst: 10,
      cost: (req: { headers: Record<string, unknown> }) => Number(req.headers['x-cost'] ?? 1),
    },
  })
  await register()
  f.get('/a', async () => 'ok')
  t.equal((await f.inject({ url: '/a', headers: { 'x-cost': '10' } })).statusCode, 200)
  clock.advance(3000) // debt 10 − 1.5 = 8.5
  const r = await f.inject({ url: '/a', headers: { 'x-cost': '4' } })
  // needs debt ≤ 6: (8.5 − 6) / 0.5 = 5 s
  t.equal(r.statusCode, 429)
  t.equal(r.headers['retry-after'], '5')
  t.equal(r.headers['ratelimit'], '"default";r=1;t=5')
  t.match(r.json().message, /retry in 5 seconds/)
  clock.advance(4999)
  t.equal((await f.inject({ url: '/a', headers: { 'x-cost': '4' } })).statusCode, 429)
  clock.advance(1)
  t.equal((await f.inject({ url: '/a', headers: { 'x-cost': '4' } })).statusCode, 200)
  await f.close()
})

t.test('legacyHeaders adds X-RateLimit-*, headers:false sends none; a 0 is sent as 0', async (t) => {
  const a = app({ limit: { rate: 1, burst: 1 }, legacyHeaders: true })
  await a.register()
  a.f.get('/', async () => 'ok')
  const r1 = await a.f.inject('/')
  t.equal(r1.headers['x-ratelimit-limit'], '1')
  t.equal(r1.headers['x-ratelimit-remaining'], '0')
  t.equal(r1.headers['x-ratelimit-reset'], '1')
  t.equal(r1.headers['ratelimit'], '"default";r=0;t=1')
  const r2 = await a.f.inject('/')
  t.equal(r2.statusCode, 429)
  t.equal(r2.headers['x-ratelimit-remaining'], '0')
  await a.f.close()
  const b = app({ limit: { rate: 1, burst: 1 }, headers: false })
  await b.register()
  b.f.get('/', async () => 'ok')
  await b.f.inject('/')
  const r3 = await b.f.inject('/')
  t.equal(r3.statusCode, 429)
  for (const h of ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-limit'])
    t.notOk(h in r3.headers, `no ${h}`)
  await b.f.close()
})

t.test('bad options throw a coded error naming the option at registration', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ limit: { rate: -1, burst: 5 } }, /limit\.rate/],
    [{ limit: { rate: 1, burst: 5, maxDebt: 2 } }, /limit\.maxDebt/],
    [{ key: 'cookie' }, /"key"/],
    [{ ipv6Subnet: 200 }, /ipv6Subnet/],
    [{ abuse: { threshold: 0 } }, /abuse\.threshold/],
    [{ fairness: { failureDelta: 2 } }, /fairness\.failureDelta/],
    [{ cellsPerLevel: 3.5, limit: { rate: 1, burst: 1 } }, /cellsPerLevel/],
  ]
  for (const [opts, re] of cases) {
    const f = Fastify()
    await t.rejects(
      async () => {
        await f.register(grudge, opts as never)
      },
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: re },
    )
  }
  const f = Fastify()
  await t.rejects(
    async () => {
      await f.register(grudge, { limit: { rate: 1, burst: 5 }, generations: 3, periodMs: 1000 })
    },
    { code: 'ERR_GRUDGE_ROTATOR_AMNESTY' },
  )
  // a bad per-route option throws when the route is added
  const g = Fastify()
  await g.register(grudge, { limit: { rate: 1, burst: 5 } })
  t.throws(() => g.get('/x', { config: { grudge: { limit: { rate: 0, burst: 1 } } } }, async () => 'x'), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /config\.grudge\.limit\.rate/,
  })
})

t.test(
  'routes declared before the plugin are not limited; config.grudge false opts out; per-route overrides',
  async (t) => {
    const { f, clock, ticker } = app()
    f.get('/before', async () => 'b')
    await f.register(grudge, { clock, ticker, limit: { rate: 1, burst: 1 } })
    f.get('/after', async () => 'a')
    f.get('/off', { config: { grudge: false } }, async () => 'off')
    f.get('/big', { config: { grudge: { limit: { rate: 1, burst: 3 } } } }, async () => 'big')
    for (let i = 0; i < 3; i++) t.equal((await f.inject('/before')).statusCode, 200)
    t.equal((await f.inject('/after')).statusCode, 200)
    t.equal((await f.inject('/after')).statusCode, 429)
    for (let i = 0; i < 3; i++) t.equal((await f.inject('/off')).statusCode, 200)
    for (let i = 0; i < 3; i++) t.equal((await f.inject('/big')).statusCode, 200)
    t.equal((await f.inject('/big')).statusCode, 429)
    await f.close()
  },
)

t.test('request.grudge carries the decision for handlers', async (t) => {
  const { f, register } = app({ limit: { rate: 1, burst: 3 } })
  await register()
  f.get('/', async (req) => ({
    limit: req.grudge?.limit,
    remaining: req.grudge?.remaining,
    policy: req.grudge?.policy ?? null,
    key: req.grudge?.key,
  }))
  t.same((await f.inject({ url: '/', remoteAddress: '10.0.0.1' })).json(), {
    limit: 3,
    remaining: 2,
    policy: null,
    key: 'ip:10.0.0.1',
  })
  await f.close()
})

t.test('a key function that throws or rejects goes to the error path (500) and nothing is skipped', async (t) => {
  const { f, register } = app({
    limit: { rate: 1, burst: 1 },
    key: (req: { headers: Record<string, unknown> }) => {
      if (req.headers['x-bad'] === 'sync') throw new Error('boom')
      if (req.headers['x-bad'] === 'async') return Promise.reject(new Error('later'))
      return 'k'
    },
  })
  await register()
  let ran = 0
  f.get('/', async () => {
    ran++
    return 'ok'
  })
  t.equal((await f.inject({ url: '/', headers: { 'x-bad': 'sync' } })).statusCode, 500)
  t.equal((await f.inject({ url: '/', headers: { 'x-bad': 'async' } })).statusCode, 500)
  t.equal(ran, 0, 'the handler never ran')
  t.equal((await f.inject('/')).statusCode, 200)
  t.equal((await f.inject('/')).statusCode, 429)
  await f.close()
})

t.test('X-Forwarded-For is ignored unless the proxy is trusted; ports, ::ffff: and one /64 share a key', async (t) => {
  {
    const { f, register } = app({ limit: { rate: 1, burst: 1 } })
    await register()
    f.get('/', async () => 'ok')
    t.equal(
      (await f.inject({ url: '/', remoteAddress: '9.9.9.9', headers: { 'x-forwarded-for': '1.1.1.1' } })).statusCode,
      200,
    )
    t.equal(
      (await f.inject({ url: '/', remoteAddress: '9.9.9.9', headers: { 'x-forwarded-for': '2.2.2.2' } })).statusCode,
      429,
      'XFF does not create a new key',
    )
    await f.close()
  }
  {
    const { f, register } = app({ limit: { rate: 1, burst: 1 } }, { trustProxy: true })
    await register()
    f.get('/', async (req) => req.grudge?.key)
    const a = await f.inject({ url: '/', remoteAddress: '9.9.9.9', headers: { 'x-forwarded-for': '1.2.3.4:5678' } })
    t.equal(a.statusCode, 200)
    t.equal(a.body, 'ip:1.2.3.4')
    t.equal(
      (await f.inject({ url: '/', remoteAddress: '9.9.9.9', headers: { 'x-forwarded-for': '1.2.3.4' } })).statusCode,
      429,
      '1.2.3.4:5678 and 1.2.3.4 are one key',
    )
    t.equal(
      (await f.inject({ url: '/', remoteAddress: '9.9.9.9', headers: { 'x-forwarded-for': '5.6.7.8' } })).statusCode,
      200,
      'a trusted XFF names the client',
    )
    await f.close()
  }
  {
    const { f, register } = app({ limit: { rate: 1, burst: 1 } })
    await register()
    f.get('/', async () => 'ok')
    t.equal((await f.inject({ url: '/', remoteAddress: '2001:db8:aa:bb::1' })).statusCode, 200)
    t.equal((await f.inject({ url: '/', remoteAddress: '2001:db8:aa:bb:ffff:1:2:3' })).statusCode, 429, 'same /64')
    t.equal((await f.inject({ url: '/', remoteAddress: '2001:db8:aa:bc::1' })).statusCode, 200, 'another /64')
    t.equal((await f.inject({ url: '/', remoteAddress: '::ffff:1.2.3.4' })).statusCode, 200)
    t.equal(
      (await f.inject({ url: '/', remoteAddress: '1.2.3.4' })).statusCode,
      429,
      '::ffff:1.2.3.4 and 1.2.3.4 share a key',
    )
    await f.close()
  }
})

t.test('tenant key falls back to the IP; route key shares one pattern across URLs', async (t) => {
  const { f, register } = app({ limit: { rate: 1, burst: 1 }, key: ['tenant', 'route'] })
  await register()
  f.get('/users/:id', async (req) => req.grudge?.key)
  const a = await f.inject({ url: '/users/1', headers: { 'x-tenant-id': 'acme' } })
  t.equal(a.statusCode, 200)
  t.equal(
    (await f.inject({ url: '/users/2', headers: { 'x-tenant-id': 'acme' } })).statusCode,
    429,
    '/users/1 and /users/2 share',
  )
  t.equal((await f.inject({ url: '/users/2', headers: { 'x-tenant-id': 'other' } })).statusCode, 200)
  const anon = await f.inject({ url: '/users/3', remoteAddress: '7.7.7.7' })
  t.match(anon.body, /ip:7\.7\.7\.7/, 'missing tenant falls back to the IP key')
  t.match(a.body, /tenant:acme.*route:GET \/users\/:id/)
  await f.close()
})

t.test('two registrations in nested scopes: the inner one limits its routes, each request counted once', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const f = Fastify()
  await f.register(grudge, { clock, ticker, limit: { rate: 1, burst: 5 } })
  f.get('/outer', async () => 'o')
  let inner: { stats(): { requests: number } } | undefined
  await f.register(
    async (child) => {
      await child.register(grudge, { clock, ticker, limit: { rate: 1, burst: 2 } })
      child.get('/inner', async () => 'i')
      inner = child.grudge
    },
    { prefix: '/c' },
  )
  const first = await f.inject('/c/inner')
  t.equal(first.statusCode, 200)
  // one registration decides, so the fields carry one policy (no member of the outer one)
  t.equal(first.headers['ratelimit-policy'], '"default";q=2;w=2')
  t.equal(first.headers['ratelimit'], '"default";r=1;t=1')
  t.equal((await f.inject('/c/inner')).statusCode, 200)
  t.equal((await f.inject('/c/inner')).statusCode, 429, 'burst 2 of the inner registration, counted once per request')
  t.equal(inner!.stats().requests, 3)
  t.equal(f.grudge.stats().requests, 0, 'the outer registration did not count the inner route')
  for (let i = 0; i < 5; i++) t.equal((await f.inject('/outer')).statusCode, 200)
  t.equal((await f.inject('/outer')).statusCode, 429)
  await f.close()
})

t.test('nested scopes: the outer registration leaves inner routes alone (opt-out, Bloom checked once)', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  let lookups = 0
  const registry = {
    mightContain: (_name: string, item: string) => {
      lookups++
      return item === 'yes'
    },
  }
  const f = Fastify()
  await f.register(grudge, { clock, ticker, limit: { rate: 1, burst: 1 }, bloomRegistry: registry })
  await f.register(
    async (child) => {
      await child.register(grudge, { clock, ticker, limit: { rate: 1, burst: 100 }, bloomRegistry: registry })
      child.get('/free', { config: { grudge: false } }, async () => 'free')
      child.get(
        '/item/:id',
        { config: { grudge: { bloom: { filter: 'x', item: (req) => (req.params as { id: string }).id } } } },
        async () => 'found',
      )
    },
    { prefix: '/c' },
  )
  const codes: number[] = []
  for (let i = 0; i < 3; i++) codes.push((await f.inject('/c/free')).statusCode)
  t.same(codes, [200, 200, 200], 'opted out in the inner scope: neither registration limits it')
  t.equal((await f.inject('/c/item/yes')).statusCode, 200)
  t.equal((await f.inject('/c/item/no')).statusCode, 404)
  t.equal(lookups, 2, 'one Bloom lookup per request: the outer registration did not add its own check')
  const outer = f.grudge.stats()
  t.equal(outer.policies.bloom.admitted + outer.policies.bloom.rejected, 0)
  t.equal(outer.requests, 0)
  await f.close()
})

t.test('onClose releases every rotator timer', async (t) => {
  const { f, ticker, register } = app({ limit: { rate: 1, burst: 1 }, abuse: {} })
  await register()
  f.get('/', { config: { grudge: { limit: { rate: 2, burst: 2 } } } }, async () => 'ok')
  t.ok(ticker.size > 0)
  await f.close()
  t.equal(ticker.size, 0)
})

t.test("a key's limit holds across a 365-day window", async (t) => {
  const day = 86_400_000
  const { f, clock, ticker, register } = app({ limit: { rate: 1 / (365 * 86_400), burst: 1 } })
  await register()
  f.get('/', async () => 'ok')
  t.equal((await f.inject('/')).statusCode, 200)
  for (let d = 0; d < 364; d += 7) {
    clock.advance(7 * day)
    ticker.tick()
  }
  // 364 days later (52 weekly ticks): still denied, Retry-After about one day
  const r = await f.inject('/')
  t.equal(r.statusCode, 429)
  t.equal(Number(r.headers['retry-after']), 86_400)
  clock.advance(day)
  ticker.tick()
  t.equal((await f.inject('/')).statusCode, 200, 'admitted after 365 days')
  t.equal((await f.inject('/')).statusCode, 429)
  await f.close()
})

t.test('store failure: fail-open admits without fake figures, fail-closed answers 503 with Retry-After', async (t) => {
  const failing =
    (mode: 'open' | 'closed'): StoreFactory =>
    () => ({
      tryConsume: () =>
        new Promise((resolve) => setImmediate(() => resolve({ admitted: mode === 'open', score: NaN, failure: mode }))),
      add: async () => 0,
      read: async () => 0,
      sizeBytes: () => 0,
      close: () => undefined,
    })
  {
    const { f, register } = app({ limit: { rate: 1, burst: 1 }, store: failing('open') })
    await register()
    f.get('/', async () => 'ok')
    const r = await f.inject('/')
    t.equal(r.statusCode, 200)
    t.notOk('ratelimit' in r.headers, 'no remaining/reset invented')
    t.equal(f.grudge.stats().policies.store.admitted, 1)
    await f.close()
  }
  {
    const { f, register } = app({ limit: { rate: 1, burst: 1 }, store: failing('closed') })
    await register()
    f.get('/', async () => 'ok')
    const r = await f.inject('/')
    t.equal(r.statusCode, 503)
    t.equal(r.headers['retry-after'], '1')
    await f.close()
  }
})

t.test('abuse score blocks with 403 until decay brings it below the threshold', async (t) => {
  const { f, clock, register } = app({
    abuse: { weights: { 401: 1, success: -0.1 }, threshold: 3, halfLifeMs: 60_000 },
  })
  await register()
  f.get('/login', async (_req, reply) => reply.code(401).send('no'))
  for (let i = 0; i < 3; i++) t.equal((await f.inject('/login')).statusCode, 401)
  const r = await f.inject('/login')
  t.equal(r.statusCode, 403)
  // score 3 → needs < 3; exactly at threshold, Retry-After is the minimum 1 s
  t.equal(r.headers['retry-after'], '1')
  clock.advance(1000)
  t.equal((await f.inject('/login')).statusCode, 401)
  t.equal((await f.inject('/login')).statusCode, 403)
  await f.close()
})

t.test('fairness: failing responses raise the score; throttled with 503 when the draw is below it', async (t) => {
  let u = 0.5
  const { f, register } = app({
    fairness: { failureDelta: 0.3, successDelta: 0.1, lambdaPerSecond: 0.01 },
    random: () => u,
  })
  await register()
  f.get('/', async (_req, reply) => reply.code(500).send('down'))
  t.equal((await f.inject('/')).statusCode, 500) // score 0.3
  t.equal((await f.inject('/')).statusCode, 500) // 0.6
  const r = await f.inject('/')
  t.equal(r.statusCode, 503)
  // ln(0.6 / 0.5) / 0.01 s ≈ 18.2 s → 19
  t.equal(r.headers['retry-after'], '19')
  u = 0.9
  t.equal((await f.inject('/')).statusCode, 500)
  await f.close()
})

t.test('bloom route option: absent items never reach the handler', async (t) => {
  const set = new Set(['1', '2'])
  let closed = 0
  const registry = {
    mightContain: (name: string, item: string) => name === 'users' && set.has(item),
    get: (name: string) => (name === 'users' ? set : undefined),
    close: () => void closed++,
  }
  const { f, register } = app({ bloomRegistry: registry })
  await register()
  let queries = 0
  f.get(
    '/users/:id',
    { config: { grudge: { bloom: { filter: 'users', item: (req) => (req.params as { id: string }).id } } } },
    async (req) => {
      queries++
      return req.grudge?.bloom('users') === set ? 'user' : 'no registry on the request'
    },
  )
  f.get(
    '/u2/:id',
    {
      config: {
        grudge: {
          bloom: {
            filter: 'users',
            item: (req) => (req.params as { id: string }).id,
            onAbsent: (_req, reply) => reply.code(410).send({ gone: true }),
          },
        },
      },
    },
    async () => 'user',
  )
  const found = await f.inject('/users/1')
  t.equal(found.statusCode, 200)
  t.equal(found.body, 'user', 'req.grudge.bloom(name) on a route with only a Bloom check')
  t.equal((await f.inject('/users/99')).statusCode, 404)
  t.equal(queries, 1)
  t.equal((await f.inject('/u2/99')).statusCode, 410)
  t.equal(f.grudge.bloom('users'), set)
  t.equal(f.grudge.stats().policies.bloom.rejected, 2)
  await f.close()
  t.equal(closed, 1, 'registry closed on server close')
})

t.test('allowList and skip bypass limiting; onExceeded and errorResponseBuilder shape the denial', async (t) => {
  const exceeded: string[] = []
  const { f, register } = app({
    limit: { rate: 1, burst: 1 },
    allowList: ['127.0.0.9'],
    skip: (req: { url: string }) => req.url === '/health',
    onExceeded: (_req: unknown, key: string) => exceeded.push(key),
    errorResponseBuilder: (_req: unknown, c: { retryAfterSeconds: number; policy: unknown }) => ({
      wait: c.retryAfterSeconds,
      policy: c.policy,
    }),
  })
  await register()
  f.get('/', async () => 'ok')
  f.get('/health', async () => 'ok')
  for (let i = 0; i < 3; i++) t.equal((await f.inject({ url: '/', remoteAddress: '127.0.0.9' })).statusCode, 200)
  for (let i = 0; i < 3; i++) t.equal((await f.inject({ url: '/health', remoteAddress: '1.1.1.1' })).statusCode, 200)
  t.equal((await f.inject({ url: '/', remoteAddress: '1.1.1.1' })).statusCode, 200)
  const r = await f.inject({ url: '/', remoteAddress: '1.1.1.1' })
  t.same(r.json(), { wait: 1, policy: 'limit' })
  t.same(exceeded, ['ip:1.1.1.1'])
  await f.close()
})

t.test('not-found handler limiting', async (t) => {
  const { f, register } = app({ limit: { rate: 1, burst: 1 }, notFound: true })
  await register()
  t.equal((await f.inject('/nope')).statusCode, 404)
  t.equal((await f.inject('/other')).statusCode, 429)
  await f.close()
})

t.test('stats, memory and Prometheus text', async (t) => {
  const { f, register } = app({ limit: { rate: 1, burst: 1 }, levels: 2, cellsPerLevel: 64 })
  await register()
  f.get('/', async () => 'ok')
  await f.inject({ url: '/', remoteAddress: '1.1.1.1' })
  await f.inject({ url: '/', remoteAddress: '1.1.1.1' })
  await f.inject({ url: '/', remoteAddress: '2.2.2.2' })
  const s = f.grudge.stats()
  t.equal(s.requests, 3)
  t.equal(s.policies.limit.admitted, 2)
  t.equal(s.policies.limit.rejected, 1)
  t.equal(s.distinctKeys, 2)
  t.ok(
    s.memoryBytes >= 2 * 2 * 64 * 16 + 4096,
    'sketch memory (2 generations × L × M × 16 B) and the live HLL slot (2^12 registers) counted',
  )
  const text = await f.grudge.prometheus()
  t.match(text, /grudge_requests 3/)
  t.match(text, /grudge_policy_decisions\{policy="limit",result="rejected"\} 1/)
  await f.close()
})

t.test('memoryBytes of a registration sums every limiter sharing its telemetry, store by store', async (t) => {
  // the plugin's own limiter, two routes with a config.grudge of their own and a hook: four
  // limiters on one telemetry (spec/sizing.md §7, "What memoryBytes sums")
  const { f, register } = app({ limit: { rate: 1, burst: 1 }, levels: 2, cellsPerLevel: 64 })
  await register()
  f.get('/', async () => 'ok')
  f.get('/a', { config: { grudge: { limit: { rate: 1, burst: 3 } } } }, async () => 'a')
  f.get('/b', { config: { grudge: { limit: { rate: 2, burst: 3 }, fairness: {} } } }, async () => 'b')
  f.get('/c', { onRequest: f.grudge.hook({ limit: { rate: 1, burst: 5 } }) }, async () => 'c')
  await f.ready()
  for (const url of ['/', '/a', '/b', '/c']) await f.inject({ url, remoteAddress: '1.1.1.1' })
  const s = f.grudge.stats()
  // a fixed shape: 2 generations × L 2 × M 64 × 16 B per store
  const fixed = 2 * 2 * 64 * 16
  t.same(
    s.memory.stores.map((st) => [st.store, st.policy, st.bytes]),
    [
      ['limit:default', 'limit', fixed],
      ['limit:GET /a', 'limit', fixed],
      ['limit:GET /b', 'limit', fixed],
      ['fairness:GET /b', 'fairness', fixed],
      ['limit:hook:3', 'limit', fixed],
    ],
    "in the order built: the plugin's, the routes' (each policy), the hook's (named by its index among the limiters)",
  )
  t.equal(
    s.memoryBytes,
    s.memory.telemetryBytes + 5 * fixed,
    'the stores of all four limiters, and the shared telemetry once',
  )
  t.ok(s.memory.telemetryBytes >= 4096, 'the live HLL slot (2^12 registers) at least')
  const text = await f.grudge.prometheus()
  t.match(text, /grudge_store_memory_bytes\{store="limit:GET \/a",policy="limit"\} 4096/)
  t.match(text, new RegExp(`grudge_telemetry_memory_bytes ${s.memory.telemetryBytes}`))
  await f.close()
})

t.test('real server on loopback, hit with undici', async (t) => {
  const { f, register } = app({ limit: { rate: 1, burst: 2 } })
  await register()
  f.get('/', async () => 'ok')
  const addr = await f.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => f.close()) // closed even if an assertion throws
  const codes: number[] = []
  let last: Record<string, unknown> = {}
  for (let i = 0; i < 3; i++) {
    const r = await request(addr + '/')
    codes.push(r.statusCode)
    last = r.headers
    await r.body.text()
  }
  t.same(codes, [200, 200, 429])
  t.equal(last['retry-after'], '1')
  t.equal(last['ratelimit'], '"default";r=0;t=1')
  await f.close()
})

t.test('async key parts, async allow list, cost functions and their errors', async (t) => {
  const { f, register } = app({
    limit: {
      rate: 1,
      burst: 2,
      cost: (req: { headers: Record<string, unknown> }) => {
        if (req.headers['x-cost'] === 'boom') throw new Error('cost boom')
        return Number(req.headers['x-cost'] ?? 1)
      },
    },
    key: [
      'ip',
      async (req: { headers: Record<string, unknown> }) =>
        typeof req.headers['x-user'] === 'string' ? req.headers['x-user'] : 'anon',
    ],
    allowList: async (_req: unknown, key: string) => {
      if (key.includes('fn:throw')) throw new Error('allow boom')
      return key.includes('fn:vip')
    },
  })
  await register()
  f.get('/', async (req) => req.grudge?.key ?? 'allowed')
  const a = await f.inject({ url: '/', headers: { 'x-user': 'alice' } })
  t.equal(a.statusCode, 200)
  t.equal(a.body, '12:ip:127.0.0.18:fn:alice', 'length-prefixed parts')
  t.equal((await f.inject({ url: '/', headers: { 'x-user': 'alice', 'x-cost': '2' } })).statusCode, 429)
  t.equal(
    (await f.inject({ url: '/', headers: { 'x-user': 'bob', 'x-cost': '3' } })).statusCode,
    500,
    'a cost above the burst is an error, not a silent admit',
  )
  t.equal((await f.inject({ url: '/', headers: { 'x-user': 'bob', 'x-cost': 'boom' } })).statusCode, 500)
  t.equal((await f.inject({ url: '/', headers: { 'x-user': 'throw' } })).statusCode, 500)
  for (let i = 0; i < 4; i++) t.equal((await f.inject({ url: '/', headers: { 'x-user': 'vip' } })).body, 'allowed')
  await f.close()
})

t.test('asynchronous store: decisions arrive as Promises and still limit; outcomes recorded', async (t) => {
  const base = localStore()
  const asyncStore: StoreFactory = (spec) => {
    const s = base(spec)
    return {
      ...s,
      tryConsume: async (k, c, l) => s.tryConsume(k, c, l),
      read: async (k) => s.read(k),
      add: async (k, d) => s.add(k, d),
    }
  }
  const { f, register } = app({
    store: asyncStore,
    limit: { rate: 1, burst: 2 },
    abuse: {
      score: (_req: unknown, reply: { statusCode: number }) => (reply.statusCode === 418 ? 5 : 0),
      threshold: 5,
    },
    fairness: { isFailure: () => false },
    random: () => 0.99,
  })
  await register()
  f.get('/', async (_req, reply) => reply.code(418).send('teapot'))
  t.equal((await f.inject('/')).statusCode, 418)
  const blocked = await f.inject('/')
  t.equal(blocked.statusCode, 403, 'the custom abuse score blocked the key')
  t.match(blocked.json().message, /Blocked, retry in/)
  await f.close()
})

t.test('errorResponseBuilder or onExceeded that throws goes to the error path', async (t) => {
  const { f, register } = app({
    limit: { rate: 1, burst: 1 },
    errorResponseBuilder: () => {
      throw new Error('builder')
    },
  })
  await register()
  f.get('/', async () => 'ok')
  await f.inject('/')
  t.equal((await f.inject('/')).statusCode, 500)
  await f.close()
})

t.test('fastify.grudge.hook(overrides) limits a not-found handler of your own; bloom edge cases', async (t) => {
  const registry = { mightContain: async (_n: string, item: string) => item === 'yes' }
  const { f, register } = app({ limit: { rate: 1, burst: 5 }, bloomRegistry: registry })
  await register()
  f.setNotFoundHandler({ preHandler: f.grudge.hook({ limit: { rate: 1, burst: 1 } }) }, async (_req, reply) =>
    reply.code(404).send('custom 404'),
  )
  f.get(
    '/b/:id',
    {
      config: {
        grudge: {
          bloom: {
            filter: 'x',
            item: (req) => {
              const id = (req.params as { id: string }).id
              if (id === 'throw') throw new Error('item boom')
              return id
            },
            onAbsent: () => ({ absent: true }),
          },
        },
      },
    },
    async () => 'present',
  )
  t.equal((await f.inject('/nope')).body, 'custom 404')
  t.equal((await f.inject('/nope')).statusCode, 429)
  t.equal((await f.inject('/b/yes')).body, 'present')
  t.same((await f.inject('/b/no')).json(), { absent: true }, 'onAbsent may return the body')
  t.equal((await f.inject('/b/throw')).statusCode, 500)
  t.equal(f.grudge.bloom('x'), undefined, 'a registry without get()')
  await f.close()
  const g = Fastify()
  await g.register(grudge, { limit: { rate: 1, burst: 1 } })
  t.throws(() => g.get('/x', { config: { grudge: { bloom: { filter: 'x', item: () => 'a' } } } }, async () => 'x'), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /bloomRegistry/,
  })
  t.throws(() => g.grudge.bloom('x'), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await t.rejects(
    async () => {
      await Fastify().register(grudge, { bloom: { filter: 'x', item: () => 'a' } } as never)
    },
    { message: /route option/ },
  )
  await t.rejects(
    async () => {
      await Fastify().register(grudge, { bloomRegistry: {} as never })
    },
    { message: /bloomRegistry/ },
  )
})

t.test('one sizing warning through the Fastify logger', async (t) => {
  const lines: string[] = []
  const clock = new FakeClock(0)
  const f = Fastify({ logger: { level: 'warn', stream: { write: (l: string) => void lines.push(l) } } })
  await f.register(grudge, {
    clock,
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    levels: 1,
    cellsPerLevel: 16,
    targetFalsePositiveRate: 0.5,
  })
  f.get('/', async () => 'ok')
  for (let i = 0; i < 40; i++) await f.inject({ url: '/', remoteAddress: `10.0.0.${i}` })
  const s = f.grudge.stats()
  t.ok(s.falsePositiveRate > 0.5)
  f.grudge.stats()
  const warnings = lines.filter((l) => l.includes('false-reject'))
  t.equal(warnings.length, 1)
  t.match(warnings[0], /suggested cellsPerLevel/)
  await f.close()
})

t.test(
  'bloomRegistry from configuration: a BloomFilterRegistry built, reachable, checkpointed on close and reloaded',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'grudge-fastify-bloom-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const build = async () => {
      const f = Fastify()
      await f.register(grudge, {
        clock: new FakeClock(0),
        ticker: new FakeTicker(),
        bloomRegistry: { dir, ticker: new FakeTicker(), filters: { users: { capacity: 1000, errorRate: 0.01 } } },
      })
      let queries = 0
      f.get(
        '/users/:id',
        { config: { grudge: { bloom: { filter: 'users', item: (req) => (req.params as { id: string }).id } } } },
        async () => {
          queries++
          return 'user'
        },
      )
      return { f, queries: () => queries }
    }
    const a = await build()
    const users = a.f.grudge.bloom('users') as { add(item: string): unknown }
    users.add('42')
    t.equal((await a.f.inject('/users/42')).statusCode, 200)
    t.equal((await a.f.inject('/users/7')).statusCode, 404)
    t.equal(a.queries(), 1, 'the handler ran only for the present id')
    await a.f.close()
    t.ok(existsSync(join(dir, 'users.bloom')), 'checkpoint written on close')
    const b = await build()
    t.equal((await b.f.inject('/users/42')).statusCode, 200, 'reloaded from the checkpoint')
    t.equal((await b.f.inject('/users/7')).statusCode, 404)
    await b.f.close()
  },
)

t.test('fairness default outcome: a response slower than slowMs counts as a failure', async (t) => {
  const { f, clock, register } = app({
    fairness: { failureDelta: 0.5, lambdaPerSecond: 0.001, slowMs: 2000 },
    random: () => 0.7,
  })
  await register()
  f.get('/slow', async () => {
    clock.advance(2500) // the handler takes 2.5 s on the limiter's clock
    return 'late'
  })
  f.get('/fast', async () => 'ok')
  t.equal((await f.inject('/fast')).statusCode, 200)
  t.equal((await f.inject('/slow')).statusCode, 200) // score 0.5
  t.equal((await f.inject('/fast')).statusCode, 200, '0.7 ≥ 0.5: admitted')
  t.equal((await f.inject('/slow')).statusCode, 200) // score ≈ 0.99
  t.equal((await f.inject('/fast')).statusCode, 503, 'two slow responses: throttled')
  await f.close()
})

t.test('two registrations in sibling scopes: each limits only its own routes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const f = Fastify()
  const scopes: { stats(): { requests: number } }[] = []
  for (const [prefix, burst] of [
    ['/a', 1],
    ['/b', 3],
  ] as const) {
    await f.register(
      async (child) => {
        await child.register(grudge, { clock, ticker, limit: { rate: 1, burst } })
        child.get('/x', async () => prefix)
        scopes.push(child.grudge)
      },
      { prefix },
    )
  }
  t.equal((await f.inject('/a/x')).statusCode, 200)
  t.equal((await f.inject('/a/x')).statusCode, 429)
  for (let i = 0; i < 3; i++) t.equal((await f.inject('/b/x')).statusCode, 200)
  t.equal((await f.inject('/b/x')).statusCode, 429)
  t.same(
    scopes.map((s) => s.stats().requests),
    [2, 4],
    'each registration counted only its own requests',
  )
  await f.close()
})

t.test('allowList addresses are exact (not their /64) and normalised (::ffff:)', async (t) => {
  const { f, register } = app({ limit: { rate: 1, burst: 1 }, allowList: ['2001:db8::1', '::ffff:10.0.0.1'] })
  await register()
  f.get('/', async () => 'ok')
  const hit = async (remoteAddress: string) => (await f.inject({ url: '/', remoteAddress })).statusCode
  for (let i = 0; i < 3; i++) {
    t.equal(await hit('2001:db8::1'), 200)
    t.equal(await hit('10.0.0.1'), 200, 'an allowed IPv4-mapped entry matches the IPv4 client')
  }
  t.equal(await hit('2001:db8::abcd'), 200, 'same /64 as an allowed address: limited by its /64 key')
  t.equal(await hit('2001:db8::abcd'), 429, 'an exact entry does not exempt its /64 (issue #19)')
  t.equal(await hit('2001:db8:0:1::1'), 200)
  t.equal(await hit('2001:db8:0:1::1'), 429, 'another /64 is limited')
  await f.close()
})

t.test('an unknown plugin option fails the registration naming its path and the closest option', async (t) => {
  const cases: [Record<string, unknown>, ReturnType<typeof unknownOption>][] = [
    [{ limt: { rate: 1, burst: 5 } }, unknownOption('limt', 'limit')],
    [{ limit: { rate: 1, burts: 10 } }, unknownOption('limit.burts', 'burst')],
    [{ limit: { rate: 1, burst: 5, cots: () => 1 } }, unknownOption('limit.cots', 'cost')],
    [{ fairness: { isFailur: () => true } }, unknownOption('fairness.isFailur', 'isFailure')],
    [{ abuse: { scor: () => 1 } }, unknownOption('abuse.scor', 'score')],
    [{ limit: { rate: 1, burst: 5 }, cellsperlevel: 64 }, unknownOption('cellsperlevel', 'cellsPerLevel')],
    [
      { keyGenerator: () => 'k' },
      unknownOption('keyGenerator', undefined, [...GRUDGE_FASTIFY_OPTION_KEYS, ...FASTIFY_REGISTER_KEYS]),
    ],
    [{ notfound: true }, unknownOption('notfound', 'notFound')],
    [{ prefx: '/api' }, unknownOption('prefx', 'prefix')],
    [{ limit: { rate: 1, burst: 5 }, skipp: undefined }, unknownOption('skipp', 'skip')],
  ]
  for (const [opts, err] of cases) {
    const { register } = app(opts)
    await t.rejects(
      async () => {
        await register()
      },
      err,
      Object.keys(opts).join(', '),
    )
  }
})

t.test(
  'a { dir, filters } Bloom registry refuses unknown keys down to a filter policy, before opening anything',
  async (t) => {
    const dir = t.testdir()
    const filters = { users: { capacity: 100, errorRate: 0.01 } }
    const cases: [BloomRegistryConfig, ReturnType<typeof unknownOption>][] = [
      [typo({ dir, filters, tickr: new FakeTicker() }), unknownOption('bloomRegistry.tickr', 'ticker')],
      [
        { dir, filters: { users: typo<RegisterBloomOptions>({ capacity: 100, errorRate: 0.01, capacty: 1 }) } },
        unknownOption('bloomRegistry.filters.users.capacty', 'capacity'),
      ],
      [
        { dir, filters: { users: { capacity: 100, errorRate: 0.01, policy: typo({ checkpointOnShutdwn: false }) } } },
        unknownOption('bloomRegistry.filters.users.policy.checkpointOnShutdwn', 'checkpointOnShutdown'),
      ],
    ]
    for (const [bloomRegistry, err] of cases) {
      const { register } = app({ bloomRegistry })
      await t.rejects(async () => {
        await register()
      }, err)
    }
    t.notOk(existsSync(join(dir, 'users.bloom')), 'no filter opened')
  },
)

t.test(
  'route config: only config.grudge is checked (other plugins keep their keys); hook() overrides are checked too',
  async (t) => {
    const registry = { mightContain: () => true }
    const { f, register } = app({ limit: { rate: 1, burst: 5 }, bloomRegistry: registry })
    await register()
    const bad: [Record<string, unknown>, ReturnType<typeof unknownOption>][] = [
      [{ limt: { rate: 1, burst: 1 } }, unknownOption('config.grudge.limt', 'limit')],
      [{ limit: { rate: 1, burts: 1 } }, unknownOption('config.grudge.limit.burts', 'burst')],
      [{ bloom: { filtr: 'users', item: () => 'x' } }, unknownOption('config.grudge.bloom.filtr', 'filter')],
      [{ bloomRegistry: registry }, unknownOption('config.grudge.bloomRegistry', undefined, GRUDGE_ROUTE_OPTION_KEYS)],
    ]
    for (const [grudgeConfig, err] of bad) {
      t.throws(
        () => f.get('/bad', { config: { grudge: typo<GrudgeRouteOptions>(grudgeConfig) } }, async () => 'x'),
        err,
      )
    }
    f.get(
      '/shared',
      {
        config: { rateLimit: { max: 1 }, anotherPlugin: { anything: true }, grudge: { limit: { rate: 1, burst: 1 } } },
      },
      async () => 'ok',
    )
    t.equal((await f.inject('/shared')).statusCode, 200, 'other keys of the route config are not grudge’s to refuse')
    t.throws(
      () => f.grudge.hook(typo<GrudgeRouteOptions>({ limt: { rate: 1, burst: 1 } })),
      unknownOption('hook.limt', 'limit'),
    )
    await f.close()
  },
)

t.test('every documented plugin, route and Fastify register option passes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const limit: Required<AdapterLimitOptions<FastifyRequest>> = {
    rate: 1,
    burst: 5,
    cost: () => 1,
    maxDebt: 50,
    name: 'api',
  }
  const fairness: Required<AdapterFairnessOptions<FastifyRequest, FastifyReply>> = {
    failureDelta: 0.1,
    successDelta: 0.01,
    lambdaPerSecond: 0.1,
    slowMs: 1000,
    status: 503,
    isFailure: () => false,
  }
  const abuse: Required<AdapterAbuseOptions<FastifyRequest, FastifyReply>> = {
    weights: { '404': 1 },
    threshold: 10,
    halfLifeMs: 1000,
    maxScore: 40,
    refusalWeight: 0,
    score: () => 0,
  }
  const filter: Required<RegisterBloomOptions> = {
    capacity: 100,
    errorRate: 0.01,
    policy: { checkpointOnShutdown: false },
    shardCount: 2,
    onBadCheckpoint: 'throw',
    hasher: sipHash(),
    seed: 1,
  }
  const bloomRegistry: Required<BloomRegistryConfig> = {
    dir: t.testdir(),
    filters: { users: filter },
    ticker,
    onError: () => {},
  }
  t.same(Object.keys(bloomRegistry).sort(), [...BLOOM_REGISTRY_CONFIG_KEYS].sort(), 'every registry config option')
  const common = {
    memory: '1MB',
    levels: 2,
    cellsPerLevel: 64,
    generations: 2,
    periodMs: 60_000,
    hasher: sipHash(),
    clock,
    ticker,
    store: localStore(),
    limit,
    fairness,
    abuse,
    key: ['ip', 'route'] as const,
    tenantHeader: 'x-tenant',
    ipv6Subnet: 56,
    headers: true,
    standardHeaders: 'draft-6' as const,
    legacyHeaders: true,
    statusCode: 429,
    errorResponseBuilder: () => ({ denied: true }),
    useErrorHandler: false,
    onExceeded: () => {},
    allowList: ['10.0.0.1'],
    skip: () => false,
    random: () => 0.5,
    targetFalsePositiveRate: 0.02,
    storeTimeoutMs: 500,
    onStoreError: 'closed' as const,
    abortStatus: 499,
  }
  // `bloom` is a route option: given to the plugin it is refused with its own message
  const plugin: Required<Omit<GrudgeFastifyOptions, 'bloom'>> = { ...common, bloomRegistry, notFound: true }
  const fastifyOwn: Required<RegisterOptions> = { prefix: '/api', logLevel: 'warn', logSerializers: {} }
  t.same(
    [...Object.keys(plugin), 'bloom'].sort(),
    [...GRUDGE_FASTIFY_OPTION_KEYS].sort(),
    'the test names every plugin option',
  )
  t.same(Object.keys(fastifyOwn).sort(), [...FASTIFY_REGISTER_KEYS].sort(), 'and every register option')
  const f = Fastify()
  await f.register(grudge, { ...plugin, ...fastifyOwn })
  const route: Required<GrudgeRouteOptions> = {
    ...common,
    bloom: { filter: 'users', item: (req) => (req.query as { id?: string }).id ?? '', onAbsent: () => 'absent' },
  }
  t.same(Object.keys(route).sort(), [...GRUDGE_ROUTE_OPTION_KEYS].sort(), 'the test names every route option')
  f.get('/u', { config: { grudge: route } }, async () => 'present')
  t.equal((await f.inject('/u?id=nobody')).body, 'absent')
  await f.close()
})

t.test(
  'request.grudge is built when read, from that request’s own figures, after other requests were decided',
  async (t) => {
    const clock = new FakeClock(1_000_000)
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(grudge, {
      limit: { rate: 10, burst: 20 },
      key: (req: FastifyRequest) => String(req.headers['x-k']),
      clock,
      ticker: new FakeTicker(),
    })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    app.get('/slow', async (req) => {
      await gate // other requests are decided meanwhile: the limiter's figures are refilled
      return req.grudge
    })
    app.get('/fast', async (req) => req.grudge)
    app.get('/twice', async (req) => ({ same: req.grudge === req.grudge, remaining: req.grudge?.remaining }))
    const slow = app.inject({ url: '/slow', headers: { 'x-k': 'a' } })
    // let the slow request pass its hook before the others are decided
    await new Promise((r) => setTimeout(r, 20))
    for (let i = 0; i < 3; i++) await app.inject({ url: '/fast', headers: { 'x-k': 'b' } })
    release()
    const d = (await slow).json<Record<string, unknown>>()
    // the figures of key a's first request (a debt of 1), not those of b's third (a debt of 3)
    t.same(d, {
      admitted: true,
      limit: 20,
      remaining: 19,
      resetMs: 100,
      retryAfterMs: 0,
      score: 1,
      scores: { limit: 1 },
      key: 'fn:a',
    })
    const twice = (await app.inject({ url: '/twice', headers: { 'x-k': 'c' } })).json<{
      same: boolean
      remaining: number
    }>()
    t.same(twice, { same: true, remaining: 19 }, 'built once per request, then the same object')
  },
)
