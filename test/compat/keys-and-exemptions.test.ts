// What @fastify/rate-limit and express-rate-limit users configure first (issue #19), in
// grudge's terms: `keyGenerator` is `key` (a function, sync or async, or built-in parts);
// `allowList` is an array (keys, addresses, CIDR ranges) or a predicate (sync or async);
// `skip` exempts a request (ERL); per-route options (`config.rateLimit` in FRL) are
// `config.grudge`, `false` opting a route out; a limited not-found handler carries the fields.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const base = () => ({ clock: new FakeClock(0), ticker: new FakeTicker() })

t.test(
  'fastify: a key function (sync and async) gives each user a budget; allowList array and predicates',
  async (t) => {
    for (const key of [
      (req: { headers: Record<string, unknown> }) => String(req.headers['x-user']),
      async (req: { headers: Record<string, unknown> }) => String(req.headers['x-user']),
    ]) {
      const f = Fastify()
      await f.register(grudge, { ...base(), limit: { rate: 1, burst: 1 }, key, allowList: ['fn:root'] })
      f.get('/', async () => 'ok')
      const as = (u: string) => f.inject({ url: '/', headers: { 'x-user': u } })
      t.equal((await as('al')).statusCode, 200)
      t.equal((await as('al')).statusCode, 429, 'al has spent his budget')
      t.equal((await as('bo')).statusCode, 200, 'bo has his own')
      for (let i = 0; i < 3; i++) t.equal((await as('root')).statusCode, 200, 'the allow-listed key is never limited')
      t.equal((await as('root')).headers['ratelimit'], undefined, 'and carries no figures (not counted)')
      await f.close()
    }
    for (const allowList of [
      (req: { headers: Record<string, unknown> }) => req.headers['x-internal'] === 'yes',
      async (req: { headers: Record<string, unknown> }) => req.headers['x-internal'] === 'yes',
    ]) {
      const f = Fastify()
      await f.register(grudge, { ...base(), limit: { rate: 1, burst: 1 }, allowList })
      f.get('/', async () => 'ok')
      for (let i = 0; i < 3; i++)
        t.equal((await f.inject({ url: '/', headers: { 'x-internal': 'yes' } })).statusCode, 200)
      await f.inject('/')
      t.equal((await f.inject('/')).statusCode, 429, 'others are limited')
      await f.close()
    }
  },
)

t.test('fastify: per-route config and opting out; the limited 404 carries the fields', async (t) => {
  const f = Fastify()
  await f.register(grudge, { ...base(), limit: { rate: 1, burst: 100 }, notFound: true })
  f.get('/strict', { config: { grudge: { limit: { rate: 1, burst: 1 } } } }, async () => 'ok')
  f.get('/free', { config: { grudge: false } }, async () => 'ok')
  f.get('/', async () => 'ok')
  await f.inject('/strict')
  t.equal((await f.inject('/strict')).statusCode, 429, 'the route limit')
  t.equal((await f.inject('/')).headers['ratelimit-policy'], '"default";q=100;w=100', 'the plugin limit elsewhere')
  const free = await f.inject('/free')
  t.same([free.statusCode, free.headers['ratelimit']], [200, undefined], 'opted out: no fields, no charge')
  const nf = await f.inject('/nope')
  t.equal(nf.statusCode, 404)
  t.match(nf.headers['ratelimit'], /^"default";r=\d+;t=\d+$/)
  await f.close()
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: key function, skip (sync, async), allowList array`, async (t) => {
    const m = grudgeExpress({
      ...base(),
      limit: { rate: 1, burst: 1 },
      key: (req) => String(req.headers['x-user']),
      skip: async (req) => req.path === '/health',
      allowList: ['fn:root'],
    })
    t.teardown(() => m.close())
    const a = make()
    a.use(m)
    a.get('/', (_req, res) => {
      res.send('ok')
    })
    a.get('/health', (_req, res) => {
      res.send('up')
    })
    const url = await serve(t, a)
    const as = (u: string, p = '/') => hit(url + p, { 'x-user': u })
    t.equal((await as('al')).status, 200)
    t.equal((await as('al')).status, 429)
    t.equal((await as('bo')).status, 200)
    t.equal((await as('al', '/health')).status, 200, 'skipped')
    t.equal((await as('root')).status, 200)
    t.equal((await as('root')).status, 200, 'allow-listed')
  })
}
