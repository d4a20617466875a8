// Escalation after repeated 429s (issue #19 feature 3; FRL's ban/onBanReach, RLF's blockDuration):
// abuse.refusalWeight makes each refused request count towards the abuse score (Fastify, and
// Express 4 and 5 with peek, forgive and reset of the score).
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

async function app(clock: FakeClock, refusalWeight: number) {
  const f = Fastify()
  await f.register(grudgeFastify, {
    clock,
    ticker: new FakeTicker(),
    key: (req) => String(req.headers['x-user']),
    limit: { rate: 1, burst: 2 },
    abuse: { threshold: 3, refusalWeight, halfLifeMs: 60_000, weights: {} },
  })
  f.get('/', async () => 'ok')
  return f
}

t.test('a client hammering past its limit gets 403 after N refusals, and decay forgives it', async (t) => {
  const clock = new FakeClock(0)
  const f = await app(clock, 1)
  const codes: number[] = []
  for (let i = 0; i < 7; i++) codes.push((await f.inject({ url: '/', headers: { 'x-user': 'h' } })).statusCode)
  t.same(codes, [200, 200, 429, 429, 429, 403, 403], '3 refusals reach threshold 3: then 403')
  clock.advance(120_000) // two half-lives: 3 → 0.75
  t.equal((await f.inject({ url: '/', headers: { 'x-user': 'h' } })).statusCode, 200, 'forgiven after decay')
  await f.close()
})

t.test('an innocent client at its limit never escalates; without refusalWeight nobody does', async (t) => {
  const clock = new FakeClock(0)
  const f = await app(clock, 1)
  for (let i = 0; i < 50; i++) {
    t.equal((await f.inject({ url: '/', headers: { 'x-user': 'i' } })).statusCode, 200)
    clock.advance(1000) // exactly its rate
  }
  const g = await app(new FakeClock(0), 0)
  const codes: number[] = []
  for (let i = 0; i < 10; i++) codes.push((await g.inject({ url: '/', headers: { 'x-user': 'h' } })).statusCode)
  t.notOk(codes.includes(403), 'refusalWeight 0: 429s only')
  await f.close()
  await g.close()
})

function expressApp(t: Test, make: (typeof EXPRESS_VERSIONS)[number][1], clock: FakeClock, refusalWeight: number) {
  const m = grudgeExpress({
    clock,
    ticker: new FakeTicker(),
    warn: () => {},
    key: (req) => String(req.headers['x-user']),
    limit: { rate: 1, burst: 2 },
    abuse: { threshold: 3, refusalWeight, halfLifeMs: 60_000, weights: {} },
  })
  t.teardown(() => m.close())
  const app = make()
  app.use(m)
  app.get('/', (_req, res) => {
    res.send('ok')
  })
  return { m, url: serve(t, app) }
}

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: a client hammering past its limit gets 403 after N refusals, and decay forgives it`, async (t) => {
    const clock = new FakeClock(0)
    const { m, url: u } = expressApp(t, make, clock, 1)
    const url = await u
    const as = async (user: string) => (await hit(url, { 'x-user': user })).status
    const codes: number[] = []
    for (let i = 0; i < 7; i++) codes.push(await as('h'))
    t.same(codes, [200, 200, 429, 429, 429, 403, 403], '3 refusals reach threshold 3: then 403')
    t.match(await m.peek('fn:h'), { abuse: { score: 3, blocked: true } }, 'the 403s add nothing: only refusals count')
    t.equal(await as('other'), 200, 'another client is not affected')
    clock.advance(60_000) // one half-life: 3 → 1.5
    t.match(await m.peek('fn:h'), { abuse: { score: 1.5, blocked: false } })
    clock.advance(60_000) // two: 0.75
    t.equal(await as('h'), 200, 'forgiven after decay')
  })

  t.test(`${label}: forgive lowers the abuse score, and reset clears it`, async (t) => {
    const clock = new FakeClock(0)
    const { m, url: u } = expressApp(t, make, clock, 1)
    const url = await u
    const as = async () => (await hit(url, { 'x-user': 'h' })).status
    for (let i = 0; i < 6; i++) await as()
    t.equal(await as(), 403, 'blocked')
    await m.forgive('fn:h', 1, { policy: 'abuse' })
    t.match(await m.peek('fn:h'), { abuse: { score: 2, blocked: false }, limit: { debt: 2 } })
    t.same([await as(), await as()], [429, 403], 'unblocked, still over the limit: one more refusal blocks again')
    await m.reset('fn:h')
    t.match(await m.peek('fn:h'), { abuse: { score: 0 }, limit: { debt: 0 } }, 'reset: every policy')
    t.same([await as(), await as()], [200, 200])
  })

  t.test(`${label}: an innocent client at its limit never escalates; without refusalWeight nobody does`, async (t) => {
    const clock = new FakeClock(0)
    const { url: u } = expressApp(t, make, clock, 1)
    const url = await u
    for (let i = 0; i < 20; i++) {
      t.equal((await hit(url, { 'x-user': 'i' })).status, 200)
      clock.advance(1000) // exactly its rate
    }
    const { m, url: u0 } = expressApp(t, make, new FakeClock(0), 0)
    const url0 = await u0
    const codes: number[] = []
    for (let i = 0; i < 10; i++) codes.push((await hit(url0, { 'x-user': 'h' })).status)
    t.same(codes, [200, 200, 429, 429, 429, 429, 429, 429, 429, 429], 'refusalWeight 0: 429s only')
    t.match(await m.peek('fn:h'), { abuse: { score: 0 } })
  })
}
