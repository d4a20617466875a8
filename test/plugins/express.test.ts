import t, { type Test } from 'tap'
import express from 'express'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { request } from 'undici'
import grudge from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { localStore } from '../../src/limit/store.js'
import type { Request, Response } from 'express'
import type {
  AdapterAbuseOptions,
  AdapterFairnessOptions,
  AdapterLimitOptions,
  GrudgeExpressOptions,
} from '../../plugins/express/index.js'
import { EXPRESS_BLOOM_KEYS, GRUDGE_EXPRESS_OPTION_KEYS } from '../../plugins/express/options.js'
import { sipHash } from '../../src/hash/hasher.js'
import { typo, unknownOption } from '../unknown-option.js'

// Express 4 is installed as the npm alias `express4`; it has no types of its own, and its API is the one used here
const express4 = createRequire(import.meta.url)('express4') as typeof express

type Hit = { status: number; headers: Record<string, string | string[] | undefined>; body: string }

async function serve(t: Test, app: express.Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  let closed: Promise<void> | undefined
  const close = () =>
    (closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections() // undici keeps connections alive; do not wait for their timeout
    }))
  // closed even when an assertion throws, so a failing test never leaves the process waiting
  t.teardown(close)
  return { url: `http://127.0.0.1:${port}`, close }
}

async function hit(url: string, headers: Record<string, string> = {}): Promise<Hit> {
  const r = await request(url, { headers })
  return { status: r.statusCode, headers: r.headers, body: await r.body.text() }
}

for (const [label, make] of [
  ['express 5', express],
  ['express 4', express4],
] as const) {
  t.test(`${label}: debt meter end to end with a loopback server and undici`, async (t) => {
    const clock = new FakeClock(1_000_000)
    const ticker = new FakeTicker()
    const app = make()
    const limiter = grudge({ clock, ticker, limit: { rate: 2, burst: 3 }, legacyHeaders: true })
    app.use(limiter)
    app.get('/', (req, res) => {
      res.json({ remaining: req.grudge?.remaining, key: req.grudge?.key })
    })
    const s = await serve(t, app)
    const ok = await hit(s.url + '/')
    t.equal(ok.status, 200)
    t.same(JSON.parse(ok.body), { remaining: 2, key: 'ip:127.0.0.1' })
    t.equal(ok.headers['ratelimit-policy'], '"default";q=3;w=2')
    t.equal(ok.headers['ratelimit'], '"default";r=2;t=1')
    t.equal(ok.headers['x-ratelimit-remaining'], '2')
    await hit(s.url + '/')
    await hit(s.url + '/')
    const denied = await hit(s.url + '/')
    t.equal(denied.status, 429)
    t.equal(denied.headers['retry-after'], '1')
    t.equal(denied.headers['ratelimit'], '"default";r=0;t=1')
    t.equal(denied.headers['x-ratelimit-reset'], '1')
    t.match(JSON.parse(denied.body), { statusCode: 429, message: /retry in 1 second\b/ })
    clock.advance(499)
    t.equal((await hit(s.url + '/')).status, 429)
    clock.advance(1)
    t.equal((await hit(s.url + '/')).status, 200)
    const st = limiter.stats()
    t.equal(st.requests, 6)
    t.equal(st.policies.limit.rejected, 2)
    await s.close()
    await limiter.close()
    t.equal(ticker.size, 0, 'close() stops the rotation timers')
  })

  t.test(`${label}: memoryBytes is each middleware's own limiter, store by store`, async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const a = grudge({
      clock,
      ticker,
      name: 'api',
      levels: 2,
      cellsPerLevel: 64,
      limit: { rate: 1, burst: 1 },
      fairness: {},
    })
    const b = grudge({ clock, ticker, name: 'admin', levels: 2, cellsPerLevel: 128, limit: { rate: 1, burst: 1 } })
    const fixed = (m: number) => 2 * 2 * m * 16
    const sa = a.stats()
    const sb = b.stats()
    t.same(
      sa.memory.stores.map((x) => [x.store, x.policy, x.bytes]),
      [
        ['limit:api', 'limit', fixed(64)],
        ['fairness:api', 'fairness', fixed(64)],
      ],
    )
    t.same(
      sb.memory.stores.map((x) => [x.store, x.policy, x.bytes]),
      [['limit:admin', 'limit', fixed(128)]],
      "a second middleware has its own telemetry: the first one's stores are not in it",
    )
    t.equal(sa.memoryBytes, sa.memory.telemetryBytes + 2 * fixed(64))
    t.equal(sb.memoryBytes, sb.memory.telemetryBytes + fixed(128))
    await a.close()
    await b.close()
  })

  t.test(`${label}: errors go to next(err); trust proxy rules X-Forwarded-For`, async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const app = make()
    app.set('trust proxy', 'loopback')
    let ran = 0
    app.use(
      grudge({
        clock,
        ticker,
        limit: { rate: 1, burst: 1 },
        key: (req) => {
          if (req.headers['x-bad'] === 'sync') throw new Error('boom')
          if (req.headers['x-bad'] === 'async') return Promise.reject(new Error('later'))
          return 'ip:' + req.ip
        },
      }),
    )
    app.get('/', (_req, res) => {
      ran++
      res.send('ok')
    })
    app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send('error: ' + ((err.cause as Error | undefined)?.message ?? err.message))
    })
    const s = await serve(t, app)
    const a = await hit(s.url + '/', { 'x-bad': 'sync' })
    t.equal(a.status, 500)
    t.equal(a.body, 'error: boom')
    t.equal((await hit(s.url + '/', { 'x-bad': 'async' })).body, 'error: later')
    t.equal(ran, 0)
    t.equal((await hit(s.url + '/', { 'x-forwarded-for': '1.2.3.4' })).status, 200)
    t.equal((await hit(s.url + '/', { 'x-forwarded-for': '1.2.3.4' })).status, 429)
    t.equal(
      (await hit(s.url + '/', { 'x-forwarded-for': '5.6.7.8' })).status,
      200,
      'trusted proxy: XFF names the client',
    )
    await s.close()
  })

  t.test(`${label}: without trust proxy, X-Forwarded-For is ignored; ports and ::ffff: normalise`, async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const app = make()
    const mw = grudge({ clock, ticker, limit: { rate: 1, burst: 1 } })
    app.use(mw)
    app.get('/', (req, res) => {
      res.send(req.grudge?.key)
    })
    const s = await serve(t, app)
    const a = await hit(s.url + '/', { 'x-forwarded-for': '1.1.1.1' })
    t.equal(a.body, 'ip:127.0.0.1')
    t.equal((await hit(s.url + '/', { 'x-forwarded-for': '2.2.2.2' })).status, 429)
    await s.close()
    await mw.close()
  })

  t.test(`${label}: the 'ip' key is req.ip: trust proxy, and an ip of the app's or of the request's own`, async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const app = make()
    app.set('trust proxy', 'loopback')
    const mw = grudge({ clock, ticker, limit: { rate: 1, burst: 100 } })
    // an earlier middleware that says who the client is (on the request itself)
    app.use('/own', (req, _res, next) => {
      Object.defineProperty(req, 'ip', { value: '198.51.100.7', configurable: true })
      next()
    })
    app.use(mw)
    const key = (req: Request, res: Response) => {
      res.send(req.grudge?.key)
    }
    app.get('/', key)
    app.get('/own', key)
    const s = await serve(t, app)
    t.equal((await hit(s.url + '/')).body, 'ip:127.0.0.1', 'no X-Forwarded-For: the socket address')
    t.equal(
      (await hit(s.url + '/', { 'x-forwarded-for': '1.2.3.4' })).body,
      'ip:1.2.3.4',
      'a trusted proxy names the client',
    )
    t.equal(
      (await hit(s.url + '/', { 'x-forwarded-for': '1.2.3.4, 127.0.0.1' })).body,
      'ip:1.2.3.4',
      'each trusted hop is skipped',
    )
    t.equal((await hit(s.url + '/own')).body, 'ip:198.51.100.7', "the request's own ip")
    t.equal((await hit(s.url + '/own', { 'x-forwarded-for': '1.2.3.4' })).body, 'ip:198.51.100.7')

    // an app that redefines req.ip on its app.request (Express's documented extension point)
    const app2 = make()
    Object.defineProperty(app2.request, 'ip', {
      configurable: true,
      get(this: Request) {
        const v = this.headers['x-client']
        return typeof v === 'string' ? v : '192.0.2.1'
      },
    })
    const mw2 = grudge({ clock, ticker, limit: { rate: 1, burst: 100 } })
    app2.use(mw2)
    app2.get('/', key)
    const s2 = await serve(t, app2)
    t.equal((await hit(s2.url + '/')).body, 'ip:192.0.2.1', "the app's own ip getter, without X-Forwarded-For too")
    t.equal((await hit(s2.url + '/', { 'x-client': '203.0.113.5' })).body, 'ip:203.0.113.5')
    await s.close()
    await s2.close()
    await mw.close()
    await mw2.close()
  })

  t.test(`${label}: each middleware is its own limiter; route-level mounting knows the route pattern`, async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const app = make()
    const a = grudge({ clock, ticker, limit: { rate: 1, burst: 1 }, key: 'route' })
    const b = grudge({ clock, ticker, limit: { rate: 1, burst: 1 }, key: 'route' })
    app.get('/a/:id', a, (req, res) => {
      res.send(req.grudge?.key)
    })
    app.get('/b/:id', b, (req, res) => {
      res.send(req.grudge?.key)
    })
    const s = await serve(t, app)
    const r = await hit(s.url + '/a/1')
    t.equal(r.body, 'route:GET /a/:id')
    t.equal((await hit(s.url + '/a/2')).status, 429, '/a/1 and /a/2 share the pattern')
    t.equal((await hit(s.url + '/b/1')).status, 200, 'another middleware instance, another limiter')
    await s.close()
    await a.close()
    await b.close()
  })
}

t.test('a shared store: two middleware instances over one store factory, namespaced by name', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const specs: string[] = []
  const base = localStore()
  const store = (spec: Parameters<typeof base>[0]) => {
    specs.push(spec.name)
    return base(spec)
  }
  const a = grudge({ clock, ticker, store, name: 'api', limit: { rate: 1, burst: 1 } })
  const b = grudge({ clock, ticker, store, name: 'admin', limit: { rate: 1, burst: 1 } })
  t.same(specs, ['limit:api', 'limit:admin'])
  await a.close()
  await b.close()
})

t.test('abuse, fairness and bloom through the middleware', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  const set = new Set(['1'])
  const mw = grudge({
    clock,
    ticker,
    abuse: { weights: { 401: 1 }, threshold: 2, halfLifeMs: 1000 },
    fairness: { failureDelta: 0.5, lambdaPerSecond: 0.001 },
    random: () => 0.9,
    bloom: {
      registry: { mightContain: (_n, item) => set.has(item) },
      filter: 'users',
      item: (req) => (typeof req.query.id === 'string' ? req.query.id : ''),
    },
  })
  app.use(mw)
  app.get('/', (req, res) => {
    res.status(req.query.fail ? 500 : 401).send('x')
  })
  const s = await serve(t, app)
  t.equal((await hit(s.url + '/?id=2')).status, 404, 'bloom: absent id answered before the handler')
  t.equal((await hit(s.url + '/?id=1')).status, 401)
  t.equal((await hit(s.url + '/?id=1')).status, 401)
  const blocked = await hit(s.url + '/?id=1')
  t.equal(blocked.status, 403)
  t.equal(blocked.headers['retry-after'], '1')
  clock.advance(1001) // score 2 → < 2 after one half-life... and a bit
  t.equal((await hit(s.url + '/?id=1&fail=1')).status, 500) // fairness 0.5
  t.equal((await hit(s.url + '/?id=1&fail=1')).status, 500) // fairness 1.0
  t.equal((await hit(s.url + '/?id=1')).status, 503, 'fairness: score 1 > draw 0.9')
  await s.close()
  await mw.close()
})

t.test('bad options throw at construction naming the option', async (t) => {
  t.throws(() => grudge({ limit: { rate: 1, burst: 0 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /limit\.burst/,
  })
  t.throws(() => grudge({ handler: 3 as never }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /handler/ })
  t.throws(() => grudge({ allowList: 'x' as never }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /allowList/ })
  // checked at construction, not on the first absent item (which would answer 500)
  t.throws(
    () =>
      grudge({
        bloom: { registry: { mightContain: () => false }, filter: 'f', item: () => 'x', onAbsent: 404 as never },
      }),
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /bloom\.onAbsent/ },
  )
  t.throws(() => grudge({ name: 7 as never }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"name"/ })
})

t.test('handler, onExceeded, skip and allowList in Express', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const app = express()
  const seen: string[] = []
  const mw = grudge({
    clock,
    ticker,
    limit: { rate: 1, burst: 1 },
    allowList: ['127.0.0.2'],
    skip: (req) => req.path === '/health',
    onExceeded: (_req, key) => seen.push(key),
    handler: (_req, res, _next, context) => {
      res.status(context.statusCode).send(`slow down ${context.decision.retryAfterMs}`)
    },
  })
  app.use(mw)
  app.get('/', (_req, res) => {
    res.send('ok')
  })
  app.get('/health', (_req, res) => {
    res.send('ok')
  })
  const s = await serve(t, app)
  t.equal((await hit(s.url + '/')).status, 200)
  const r = await hit(s.url + '/')
  t.equal(r.status, 429)
  t.equal(r.body, 'slow down 1000')
  t.equal(r.headers['retry-after'], '1')
  t.same(seen, ['ip:127.0.0.1'])
  t.equal((await hit(s.url + '/health')).status, 200, 'skip')
  await s.close()
  await mw.close()
})

t.test(
  'Express edge cases: async allow list and key, cost errors, bloom-only middleware, async store, errors to next',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const base = localStore()
    const asyncStore = (spec: Parameters<typeof base>[0]) => {
      const s = base(spec)
      return {
        ...s,
        tryConsume: async (k: string, c: number, l: number) => s.tryConsume(k, c, l),
        add: async (k: string, d: number) => s.add(k, d),
        read: async (k: string) => s.read(k),
      }
    }
    const app = express()
    const mw = grudge({
      clock,
      ticker,
      store: asyncStore,
      limit: {
        rate: 1,
        burst: 2,
        cost: (req) => {
          if (req.headers['x-cost'] === 'boom') throw new Error('cost boom')
          return Number(req.headers['x-cost'] ?? 1)
        },
      },
      abuse: { score: (_req, res) => (res.statusCode === 418 ? 1 : 0), threshold: 2.5 },
      key: ['ip', async (req) => String(req.headers['x-user'] ?? 'anon')],
      allowList: async (_req, key) => {
        if (key.includes('fn:throw')) throw new Error('allow boom')
        return key.includes('fn:vip')
      },
    })
    const bloomOnly = grudge({
      bloom: {
        registry: { mightContain: (_n, item) => item !== 'no' },
        filter: 'f',
        item: (req) => {
          if (req.query.id === 'throw') throw new Error('item boom')
          return typeof req.query.id === 'string' ? req.query.id : ''
        },
        onAbsent: (_req, res) => {
          res.status(410).send('gone')
        },
      },
    })
    app.get('/b', bloomOnly, (_req, res) => {
      res.send('present')
    })
    app.use(mw)
    app.get('/', (req, res) => {
      res.status(418).send(req.grudge?.key ?? 'allowed')
    })
    app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).send('error: ' + ((err.cause as Error | undefined)?.message ?? err.message))
    })
    const s = await serve(t, app)
    t.equal((await hit(s.url + '/b?id=yes')).body, 'present')
    t.equal((await hit(s.url + '/b?id=no')).status, 410)
    t.equal((await hit(s.url + '/b?id=throw')).body, 'error: item boom')
    const a = await hit(s.url + '/', { 'x-user': 'alice' })
    t.equal(a.body, '12:ip:127.0.0.18:fn:alice')
    t.equal((await hit(s.url + '/', { 'x-user': 'alice', 'x-cost': '2' })).status, 429)
    t.equal((await hit(s.url + '/', { 'x-user': 'bob', 'x-cost': 'boom' })).body, 'error: cost boom')
    t.equal((await hit(s.url + '/', { 'x-user': 'throw' })).body, 'error: allow boom')
    t.equal((await hit(s.url + '/', { 'x-user': 'vip' })).body, 'allowed')
    t.equal((await hit(s.url + '/', { 'x-user': 'carol' })).status, 418)
    t.equal((await hit(s.url + '/', { 'x-user': 'carol' })).status, 418)
    t.equal((await hit(s.url + '/', { 'x-user': 'carol' })).status, 429, 'burst 2 spent (async store)')
    clock.advance(10_000)
    t.equal((await hit(s.url + '/', { 'x-user': 'carol' })).status, 418)
    const blocked = await hit(s.url + '/', { 'x-user': 'carol' })
    t.equal(blocked.status, 403, 'the custom abuse score (three 418s) blocked the key')
    t.match(JSON.parse(blocked.body).message, /Blocked/)
    t.equal((await mw.prometheus()).includes('grudge_requests'), true)
    await s.close()
    await mw.close()
    await bloomOnly.close()
    t.throws(() => grudge({ bloom: { registry: {} as never, filter: 'f', item: () => 'x' } }), {
      message: /bloom\.registry/,
    })
    t.throws(() => grudge({ bloom: { registry: { mightContain: () => true }, filter: 'f', item: 1 as never } }), {
      message: /bloom\.item/,
    })
    t.throws(() => grudge({ warn: 1 as never }), { message: /warn/ })
  },
)

t.test('an unknown option throws at construction naming its path and the closest option', async (t) => {
  const ticker = new FakeTicker()
  const registry = { mightContain: () => true }
  const cases: [Record<string, unknown>, ReturnType<typeof unknownOption>][] = [
    [{ limt: { rate: 1, burst: 5 } }, unknownOption('limt', 'limit')],
    [{ limit: { rate: 1, burts: 10 } }, unknownOption('limit.burts', 'burst')],
    [{ fairness: { slowMS: 10 } }, unknownOption('fairness.slowMS', 'slowMs')],
    [{ abuse: { Score: () => 1 } }, unknownOption('abuse.Score', 'score')],
    [
      { keyGeneratr: () => 'k', limit: { rate: 1, burst: 5 } },
      unknownOption('keyGeneratr', undefined, GRUDGE_EXPRESS_OPTION_KEYS),
    ],
    [{ handlr: () => {} }, unknownOption('handlr', 'handler')],
    [
      { bloom: { registry, filter: 'users', item: () => 'x', onabsent: () => {} } },
      unknownOption('bloom.onabsent', 'onAbsent'),
    ],
    [
      { bloom: { registry: { dir: '/nonexistent', filters: {}, onErorr: () => {} }, filter: 'f', item: () => 'x' } },
      unknownOption('bloom.registry.onErorr', 'onError'),
    ],
  ]
  for (const [opts, err] of cases) t.throws(() => grudge(typo<GrudgeExpressOptions>({ ticker, ...opts })), err)
})

t.test('every documented option passes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const limit: Required<AdapterLimitOptions<Request>> = { rate: 1, burst: 5, cost: () => 1, maxDebt: 50, name: 'api' }
  const fairness: Required<AdapterFairnessOptions<Request, Response>> = {
    failureDelta: 0.1,
    successDelta: 0.01,
    lambdaPerSecond: 0.1,
    slowMs: 1000,
    status: 429,
    isFailure: () => false,
  }
  const abuse: Required<AdapterAbuseOptions<Request, Response>> = {
    weights: { '404': 1 },
    threshold: 10,
    halfLifeMs: 1000,
    maxScore: 40,
    refusalWeight: 0,
    score: () => 0,
  }
  const bloom: Required<NonNullable<GrudgeExpressOptions['bloom']>> = {
    registry: { mightContain: () => true },
    filter: 'users',
    item: () => 'x',
    onAbsent: () => {},
  }
  t.same(Object.keys(bloom).sort(), [...EXPRESS_BLOOM_KEYS].sort(), 'the test names every bloom option')
  // handler, message, errorResponseBuilder and useErrorHandler each answer a denial: one at a time
  type Answers = 'handler' | 'message' | 'useErrorHandler'
  const answers: Required<Pick<GrudgeExpressOptions, Answers>> = {
    handler: (_req, res) => res.status(429).end(),
    message: 'slow down',
    useErrorHandler: true,
  }
  const all: Required<Omit<GrudgeExpressOptions, Answers>> = {
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
    key: ['ip', 'tenant'],
    tenantHeader: 'x-tenant',
    ipv6Subnet: 48,
    headers: true,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    statusCode: 420,
    errorResponseBuilder: () => ({ denied: true }),
    onExceeded: () => {},
    allowList: () => false,
    skip: () => false,
    random: () => 0.5,
    targetFalsePositiveRate: 0.02,
    storeTimeoutMs: 500,
    onStoreError: 'open',
    abortStatus: 499,
    name: 'api',
    warn: () => {},
    bloom,
  }
  t.same(
    [...Object.keys(all), ...Object.keys(answers)].sort(),
    [...GRUDGE_EXPRESS_OPTION_KEYS].sort(),
    'the test names every option',
  )
  await grudge(all).close()
  const { errorResponseBuilder: _b, ...rest } = all
  for (const [k, v] of Object.entries(answers)) await grudge({ ...rest, [k]: v }).close()
})

t.test(
  'req.grudge is built when read, from that request’s own figures, after other requests were decided',
  async (t) => {
    const clock = new FakeClock(1_000_000)
    const mw = grudge({
      limit: { rate: 10, burst: 20 },
      key: (req: Request) => String(req.headers['x-k']),
      clock,
      ticker: new FakeTicker(),
    })
    t.teardown(() => mw.close())
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let entered!: () => void
    const inSlow = new Promise<void>((r) => (entered = r))
    const app = express()
    app.use(mw)
    app.get('/slow', (req: Request, res: Response) => {
      entered()
      void gate.then(() => res.json({ d: req.grudge, same: req.grudge === req.grudge }))
    })
    app.get('/fast', (req: Request, res: Response) => res.json({ d: req.grudge }))
    const { url } = await serve(t, app)
    const slow = hit(url + '/slow', { 'x-k': 'a' })
    await inSlow
    let last: Hit | undefined
    for (let i = 0; i < 3; i++) last = await hit(url + '/fast', { 'x-k': 'b' })
    t.equal((JSON.parse(last!.body) as { d: { remaining: number } }).d.remaining, 17, "b's third request")
    release()
    const body = JSON.parse((await slow).body) as { d: Record<string, unknown>; same: boolean }
    t.same(body.d, {
      admitted: true,
      limit: 20,
      remaining: 19,
      resetMs: 100,
      retryAfterMs: 0,
      score: 1,
      scores: { limit: 1 },
      key: 'fn:a',
    })
    t.ok(body.same, 'built once per request, then the same object')
  },
)
