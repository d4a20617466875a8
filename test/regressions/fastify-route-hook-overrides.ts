// Regression: fastify.grudge.hook(overrides) placed on a route of the plugin's own scope was
// tagged like the plugin's onRoute hooks, so onRoute stripped it and put the shared hook in
// its place: the route's stricter limit (or its opt-out) was silently ignored. Since limits
// stack (issue #19), the plugin's limiter decides the route as well (test/compat/fastify-stacked-limits).
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('a route-level hook(overrides) limits its route, beside the plugin limiter', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 100 } })
  f.get('/strict', { onRequest: f.grudge.hook({ limit: { rate: 1, burst: 1 } }) }, async () => 'ok')
  f.get('/other', async () => 'ok')
  const codes: number[] = []
  for (let i = 0; i < 3; i++) codes.push((await f.inject('/strict')).statusCode)
  t.same(codes, [200, 429, 429], 'burst 1 of the hook, not burst 100 of the plugin')
  t.equal(f.grudge.stats().requests, 6, 'each request decided by both limiters (they stack)')
  t.equal((await f.inject('/other')).statusCode, 200, 'other routes keep the plugin limiter')
  await f.close()
})

t.test('a route-level hook records outcomes for its abuse score', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(0), ticker: new FakeTicker() })
  f.post(
    '/login',
    { onRequest: f.grudge.hook({ abuse: { threshold: 1, weights: { '401': 1 } } }) },
    async (_r, reply) => reply.code(401).send('no'),
  )
  const codes: number[] = []
  for (let i = 0; i < 2; i++) codes.push((await f.inject({ method: 'POST', url: '/login' })).statusCode)
  t.same(codes, [401, 403])
  await f.close()
})
