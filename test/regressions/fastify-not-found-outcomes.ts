// Regression: the not-found handler is no route, so onRoute never attached the outcome hook
// to it. With `notFound: true` and an abuse score, 404s of probed URLs (/wp-admin, /.env:
// the typical scan) were limited but never scored, so a scanner was never blocked.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('notFound: true — 404s of the not-found handler feed the abuse score', async (t) => {
  const f = Fastify()
  await f.register(grudge, {
    clock: new FakeClock(1_000_000),
    ticker: new FakeTicker(),
    abuse: { threshold: 1, weights: { '404': 0.5 } },
    notFound: true,
  })
  const codes: number[] = []
  for (let i = 0; i < 4; i++) codes.push((await f.inject(`/probe-${i}`)).statusCode)
  // 0.5 + 0.5 reaches the threshold 1: the third probe is blocked
  t.same(codes, [404, 404, 403, 403])
  const blocked = await f.inject('/probe-x')
  t.ok(Number(blocked.headers['retry-after']) >= 1, 'the block carries Retry-After')
  await f.close()
})

t.test('a route response is scored once, not again by the not-found scope hook', async (t) => {
  const f = Fastify()
  await f.register(grudge, {
    clock: new FakeClock(1_000_000),
    ticker: new FakeTicker(),
    abuse: { threshold: 1, weights: { '401': 0.4 } },
    notFound: true,
  })
  f.get('/login', async (_req, reply) => reply.code(401).send('no'))
  const codes: number[] = []
  for (let i = 0; i < 4; i++) codes.push((await f.inject('/login')).statusCode)
  // 0.4, 0.8, 1.2: blocked from the fourth request (a double count would block the third)
  t.same(codes, [401, 401, 401, 403])
  await f.close()
})
