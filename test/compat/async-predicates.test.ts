// Async skip, allowList and key (issue #19): ERL awaits `skip` and `keyGenerator`, FRL awaits
// `allowList` and `keyGenerator`. A Promise is truthy; it used to be read as "not true" and
// ignored (skip) — now every thenable is awaited, and a rejection takes the error path.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
// a thenable that is not a native Promise (another Promise library)
const thenable = <T>(v: T) => ({ then: (ok: (v: T) => void) => ok(v) })

t.test('fastify: async skip, async allowList and a thenable skip are awaited', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    skip: async (req) => {
      await sleep(1)
      return req.headers['x-skip'] === 'yes'
    },
    allowList: async (_req, key) => {
      await sleep(1)
      return key === 'fn:vip'
    },
    key: async (req) => {
      await sleep(1)
      return String(req.headers['x-user'] ?? 'anon')
    },
  })
  f.get('/', async () => 'ok')
  const codes: number[] = []
  for (let i = 0; i < 3; i++) codes.push((await f.inject({ url: '/', headers: { 'x-skip': 'yes' } })).statusCode)
  t.same(codes, [200, 200, 200], 'an async skip resolving true skips')
  t.equal((await f.inject('/')).statusCode, 200)
  t.equal((await f.inject('/')).statusCode, 429, 'an async skip resolving false limits (it is not ignored)')
  for (let i = 0; i < 3; i++) t.equal((await f.inject({ url: '/', headers: { 'x-user': 'vip' } })).statusCode, 200)
  await f.close()

  const g = Fastify()
  await g.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    skip: () => thenable(true) as unknown as Promise<boolean>,
  })
  g.get('/', async () => 'ok')
  for (let i = 0; i < 3; i++) t.equal((await g.inject('/')).statusCode, 200, 'a non-native thenable is awaited')
  await g.close()
})

t.test('fastify: a rejecting skip takes the error path', async (t) => {
  const f = Fastify({ logger: false })
  await f.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    skip: () => Promise.reject(new Error('skip failed')),
  })
  f.get('/', async () => 'ok')
  t.equal((await f.inject('/')).statusCode, 500)
  await f.close()
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: async skip and allowList are awaited`, async (t) => {
    const app = make()
    const mw = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1, burst: 1 },
      skip: async (req) => {
        await sleep(1)
        return req.headers['x-skip'] === 'yes'
      },
      allowList: async (req) => {
        await sleep(1)
        return req.headers['x-vip'] === 'yes'
      },
    })
    t.teardown(() => mw.close())
    app.use(mw)
    app.get('/', (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, app)
    for (let i = 0; i < 3; i++) t.equal((await hit(url + '/', { 'x-skip': 'yes' })).status, 200, 'skipped')
    for (let i = 0; i < 3; i++) t.equal((await hit(url + '/', { 'x-vip': 'yes' })).status, 200, 'allowed')
    t.equal((await hit(url + '/')).status, 200)
    t.equal((await hit(url + '/')).status, 429, 'an async skip resolving false limits')
  })
}

// FRL's `allowList` and ERL's `skip` act on any truthy answer (`if (await skip(req))`), and
// FRL's `keyGenerator` may answer a number (`() => 42`). A ported `skip: (req) =>
// req.headers['x-internal']` answers a string: read as "not exactly true" it limited silently.
// Typed as boolean for TypeScript users; a JavaScript port passes strings and numbers.
const truthySkip = (h: Record<string, unknown>) => h['x-internal'] as boolean
const truthyAllow = (h: Record<string, unknown>) => (h['x-vip'] === undefined ? 0 : 1) as unknown as boolean

t.test(
  'fastify: truthy skip and allowList answers exempt, falsy ones limit; a numeric key is its decimal',
  async (t) => {
    const f = Fastify()
    await f.register(grudgeFastify, {
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1, burst: 1 },
      skip: (req) => truthySkip(req.headers),
      allowList: async (req) => truthyAllow(req.headers),
    })
    f.get('/', async () => 'ok')
    for (let i = 0; i < 3; i++)
      t.equal((await f.inject({ url: '/', headers: { 'x-internal': 'yes' } })).statusCode, 200, 'a string skips')
    for (let i = 0; i < 3; i++)
      t.equal((await f.inject({ url: '/', headers: { 'x-vip': '1' } })).statusCode, 200, 'an async 1 allows')
    t.equal((await f.inject('/')).statusCode, 200)
    t.equal((await f.inject('/')).statusCode, 429, 'undefined and 0 limit')
    await f.close()

    const g = Fastify()
    await g.register(grudgeFastify, {
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1, burst: 1 },
      key: ((req: { headers: Record<string, unknown> }) => (req.headers['x-n'] === '1' ? 42 : thenable(7))) as never,
    })
    g.get('/', async (req) => req.grudge?.key ?? '')
    const a = await g.inject({ url: '/', headers: { 'x-n': '1' } })
    t.equal(a.statusCode, 200, 'a numeric key is not an error')
    t.equal((await g.inject({ url: '/', headers: { 'x-n': '1' } })).statusCode, 429, 'the number 42 is one key')
    t.equal((await g.inject('/')).statusCode, 200, 'a thenable of 7 is another key')
    t.equal((await g.inject('/')).statusCode, 429)
    await g.close()
  },
)

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: truthy skip and allowList answers exempt; a numeric key works`, async (t) => {
    const app = make()
    const mw = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1, burst: 1 },
      skip: (req) => truthySkip(req.headers),
      allowList: (req) => truthyAllow(req.headers),
      key: (() => 42) as never,
    })
    t.teardown(() => mw.close())
    app.use(mw)
    app.get('/', (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, app)
    for (let i = 0; i < 3; i++) t.equal((await hit(url + '/', { 'x-internal': 'yes' })).status, 200, 'skipped')
    for (let i = 0; i < 3; i++) t.equal((await hit(url + '/', { 'x-vip': 'yes' })).status, 200, 'allowed')
    t.equal((await hit(url + '/')).status, 200, 'a numeric key is not a 500')
    t.equal((await hit(url + '/')).status, 429, 'falsy answers limit, on the one key 42')
  })
}
