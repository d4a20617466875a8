// Regression: the plugin kept references to the caller's nested policy objects and built
// the limiters of routes added later (config.grudge overrides) from them, so mutating the
// options after registration changed the limits of those routes — options are meant to be
// parsed once at registration and frozen.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('options mutated after registration do not reach routes added later', async (t) => {
  const options = {
    clock: new FakeClock(1_000_000),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    abuse: { threshold: 1, weights: { '401': 1 } as Record<string, number> },
  }
  const f = Fastify()
  await f.register(grudge, options)
  options.limit.burst = 100
  options.abuse.weights['401'] = 0
  f.get('/r', { config: { grudge: { key: 'route' } } }, async (_req, reply) => reply.code(401).send('no'))
  const codes: number[] = []
  for (let i = 0; i < 3; i++) codes.push((await f.inject('/r')).statusCode)
  // burst 1 as registered; the 401 scored 1 (weight as registered) so the key is blocked
  t.same(codes, [401, 403, 403])
  await f.close()
})
