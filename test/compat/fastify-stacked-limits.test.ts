// Stacked limits in Fastify, as Express users stack middleware (issue #19): a route hook
// `fastify.grudge.hook({ limit })` under a plugin-wide limit is enforced together with it,
// and the RateLimit fields list one member per policy (draft-ietf-httpapi-ratelimit-headers-10
// §4: a List of policies, names unique within the field).
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const MINUTE_MS = 60_000
const DAY_S = 86_400

t.test('"3 a minute and 5 a day" on one route: both enforced, both listed', async (t) => {
  const clock = new FakeClock(0)
  const f = Fastify()
  await f.register(grudge, { clock, ticker: new FakeTicker(), limit: false })
  f.get(
    '/report',
    {
      preHandler: [
        f.grudge.hook({ limit: { name: 'minute', rate: 3 / 60, burst: 3 } }),
        f.grudge.hook({ limit: { name: 'day', rate: 5 / DAY_S, burst: 5 } }),
      ],
    },
    async () => 'ok',
  )
  const first = await f.inject('/report')
  t.equal(first.statusCode, 200)
  t.equal(first.headers['ratelimit-policy'], `"minute";q=3;w=60, "day";q=5;w=${DAY_S}`, 'both policies, in order')
  t.match(first.headers['ratelimit'], /^"minute";r=2;t=\d+, "day";r=4;t=\d+$/)
  t.equal((await f.inject('/report')).statusCode, 200)
  t.equal((await f.inject('/report')).statusCode, 200)
  const perMinute = await f.inject('/report')
  t.equal(perMinute.statusCode, 429, 'the 4th in a minute is refused by the minute policy')
  t.match(perMinute.headers['ratelimit'], /^"minute";r=0;t=\d+$/, 'the day policy is not consulted once minute denies')
  clock.advance(MINUTE_MS)
  t.equal((await f.inject('/report')).statusCode, 200, '4th of the day, a minute later')
  t.equal((await f.inject('/report')).statusCode, 200, '5th of the day')
  const perDay = await f.inject('/report')
  t.equal(perDay.statusCode, 429, 'the 6th of the day is refused by the day policy although the minute one admits')
  t.match(perDay.headers['ratelimit'], /^"minute";r=\d;t=\d+, "day";r=0;t=\d+$/)
  t.ok(
    Number(perDay.headers['retry-after']) > 3600,
    `Retry-After is the day's wait (${perDay.headers['retry-after']} s)`,
  )
  await f.close()
})

t.test('a global limit and a stricter login limit: the global one still applies on /login', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 4 } })
  f.post(
    '/login',
    { preHandler: f.grudge.hook({ limit: { name: 'login', rate: 1 / 60, burst: 2 } }) },
    async () => 'in',
  )
  f.get('/other', async () => 'ok')
  const login = await f.inject({ method: 'POST', url: '/login' })
  t.equal(login.statusCode, 200)
  t.equal(login.headers['ratelimit-policy'], '"default";q=4;w=4, "login";q=2;w=120')
  t.equal(login.headers['ratelimit'], '"default";r=3;t=1, "login";r=1;t=60')
  t.equal((await f.inject({ method: 'POST', url: '/login' })).statusCode, 200)
  const strict = await f.inject({ method: 'POST', url: '/login' })
  t.equal(strict.statusCode, 429, 'the login limit (2) refuses the 3rd login')
  t.match(strict.headers['ratelimit'], /"login";r=0/)
  // the global budget was charged by the three logins: one unit is left for the client
  t.equal((await f.inject('/other')).headers['ratelimit'], '"default";r=0;t=4')
  const global = await f.inject('/other')
  t.equal(global.statusCode, 429, 'the global limit counted the login requests')
  await f.close()
})

t.test('unnamed stacked policies stay distinct members; hook() of the plugin limiter charges once', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 10 } })
  f.get('/a', { onRequest: f.grudge.hook({ limit: { rate: 1, burst: 3 } }) }, async () => 'ok')
  f.get('/same', { preHandler: f.grudge.hook() }, async () => 'ok')
  const a = await f.inject('/a')
  const members = String(a.headers['ratelimit-policy']).split(', ')
  t.equal(members.length, 2, 'two members')
  t.equal(members[0], '"default";q=10;w=10', 'the plugin policy first')
  t.match(members[1], /^"hook:\d+";q=3;w=3$/, "a defaulted name that clashes is written under the limiter's name")
  // hook() without overrides is the plugin's own limiter: placed beside the plugin's hook it
  // decides once, so the plugin budget drops by one per request (ERL refuses double counting)
  const r1 = await f.inject('/same')
  const r2 = await f.inject('/same')
  t.equal(r1.headers['ratelimit'], '"default";r=8;t=2', 'one unit per request (after /a took one)')
  t.equal(r2.headers['ratelimit'], '"default";r=7;t=3')
  await f.close()
})

t.test('config.grudge: false opts the route out of the plugin limit, its own hook still applies', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 1 } })
  f.get(
    '/own',
    { config: { grudge: false }, onRequest: f.grudge.hook({ limit: { name: 'own', rate: 1, burst: 2 } }) },
    async () => 'ok',
  )
  const r = await f.inject('/own')
  t.equal(r.headers['ratelimit-policy'], '"own";q=2;w=2')
  t.equal((await f.inject('/own')).statusCode, 200, 'the plugin limit (burst 1) is not applied')
  t.equal((await f.inject('/own')).statusCode, 429)
  await f.close()
})
