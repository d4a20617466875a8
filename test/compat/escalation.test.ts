// Escalation after repeated 429s (issue #19 feature 3; FRL's ban/onBanReach, RLF's blockDuration):
// abuse.refusalWeight makes each refused request count towards the abuse score.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
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
