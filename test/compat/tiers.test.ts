// Per-plan limits (issue #19 feature 1; ERL's `limit: (req) => n`, FRL's `max: (req, key) => n`):
// limit.tiers with a tier(req) chooser, each tier its own meter; an unknown tier or an async
// one that rejects takes the error path; an async tier is awaited.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { Limiter } from '../../src/limit/limiter.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const tiers = { free: { rate: 1, burst: 2 }, pro: { rate: 10, burst: 5 } }

t.test('fastify: each tier gets its own limit and its own RateLimit-Policy figures', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    key: (req) => String(req.headers['x-user']),
    limit: { tiers, tier: async (req) => Promise.resolve(String(req.headers['x-plan'])) },
  })
  f.get('/', async () => 'ok')
  const run = async (plan: string, user: string) => {
    const out: number[] = []
    for (let i = 0; i < 6; i++)
      out.push((await f.inject({ url: '/', headers: { 'x-plan': plan, 'x-user': user } })).statusCode)
    return out
  }
  t.same(await run('free', 'a'), [200, 200, 429, 429, 429, 429], 'free: burst 2')
  t.same(await run('pro', 'b'), [200, 200, 200, 200, 200, 429], 'pro: burst 5 (the async tier was awaited)')
  const r = await f.inject({ url: '/', headers: { 'x-plan': 'pro', 'x-user': 'c' } })
  t.equal(r.headers['ratelimit-policy'], '"default";q=5;w=1', "the pro tier's quota and window")
  const bad = await f.inject({ url: '/', headers: { 'x-plan': 'gold', 'x-user': 'd' } })
  t.equal(bad.statusCode, 500, 'an unknown tier is a generic 500')
  t.notMatch(bad.body, /gold|ERR_GRUDGE/, 'no internal text reaches the client')
  await f.close()
})

for (const [label, express] of EXPRESS_VERSIONS)
  t.test(`${label}: tiers, and an unknown tier goes to next(err)`, async (t) => {
    const mw = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      warn: () => {},
      limit: { tiers, tier: (req) => String(req.headers['x-plan']) },
    })
    const app = express()
    app.get('/', mw, (_req, res) => res.send('ok'))
    const url = await serve(t, app)
    t.teardown(() => mw.close())
    const free: number[] = []
    for (let i = 0; i < 3; i++) free.push((await hit(url + '/', { 'x-plan': 'free' })).status)
    t.same(free, [200, 200, 429])
    t.equal((await hit(url + '/', { 'x-plan': 'nope' })).status, 500)
  })

t.test('core: a tiered limit needs a tier; a constant cost above a burst is refused', async (t) => {
  const l = new Limiter({ clock: new FakeClock(0), ticker: new FakeTicker(), limit: { tiers } })
  t.throws(() => l.decide('k'), { code: 'ERR_GRUDGE_TIER_UNKNOWN' })
  t.throws(() => l.decide('k', 1, 'gold'), { code: 'ERR_GRUDGE_TIER_UNKNOWN' })
  t.equal((await l.decide('k', 1, 'free')).tier, 'free')
  t.equal(l.tiers?.size, 2)
  await l.close()
  // an untiered policy asked for a tier says it has none (it printed "expected one of , received")
  const plain = new Limiter({ clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 2 } })
  t.throws(() => plain.decide('k', 1, 'gold'), {
    code: 'ERR_GRUDGE_TIER_UNKNOWN',
    message: 'limit.tier: expected no tier (this policy has no tiers), received "gold"',
  })
  await plain.close()
  t.throws(() => new Limiter({ ticker: new FakeTicker(), limit: { tiers: { a: { rate: 1, burst: 2 } }, cost: 3 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /limit\.cost/,
  })
  t.throws(() => new Limiter({ ticker: new FakeTicker(), limit: { tiers: {} } }), { code: 'ERR_GRUDGE_OPTION_INVALID' })
})
