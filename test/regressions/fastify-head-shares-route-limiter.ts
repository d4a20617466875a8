// Regression: a route with its own `config.grudge` limits got one limiter per onRoute call,
// and Fastify calls onRoute again for the HEAD route it derives from every GET route. The
// HEAD route (which runs the same handler) therefore had a second, separate budget: with
// burst 1, GET then HEAD both reached the costly handler.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('the derived HEAD route shares the GET route’s own limiter', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(1_000_000), ticker: new FakeTicker() })
  let runs = 0
  f.get('/report', { config: { grudge: { limit: { rate: 1, burst: 1 } } } }, async () => {
    runs++
    return 'report'
  })
  const codes: number[] = []
  for (const method of ['GET', 'HEAD', 'GET'] as const)
    codes.push((await f.inject({ method, url: '/report' })).statusCode)
  t.same(codes, [200, 429, 429], 'one budget of 1 for GET and HEAD together')
  t.equal(runs, 1, 'the handler ran once')
  await f.close()
})

t.test('two routes declared with one config object still get a limiter each', async (t) => {
  const f = Fastify()
  await f.register(grudge, { clock: new FakeClock(1_000_000), ticker: new FakeTicker() })
  const strict = { config: { grudge: { limit: { rate: 1, burst: 1 } } } }
  f.get('/a', strict, async () => 'a')
  f.get('/b', strict, async () => 'b')
  t.equal((await f.inject('/a')).statusCode, 200)
  t.equal((await f.inject('/b')).statusCode, 200, '/b has its own budget')
  t.equal((await f.inject('/a')).statusCode, 429)
  await f.close()
})
