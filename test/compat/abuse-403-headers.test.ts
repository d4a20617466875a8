// A 403 from the abuse policy (issue #16): it is decided before the debt meter is charged, so
// it has no quota figures. What it carries, and what the README states: Retry-After (when the
// block lifts), no RateLimit / RateLimit-Policy members (no figures are invented). A 429 carries
// both, and so does a 404 of a limited not-found handler.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('403: Retry-After only; 404 of the not-found handler: the RateLimit fields', async (t) => {
  const f = Fastify()
  await f.register(grudge, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    notFound: true,
    limit: { rate: 1, burst: 100 },
    abuse: { weights: { '404': 5 }, threshold: 10, halfLifeMs: 60_000 },
  })
  const nf = await f.inject('/nope')
  t.equal(nf.statusCode, 404)
  t.equal(nf.headers['ratelimit-policy'], '"default";q=100;w=100', 'a 404 carries the fields')
  t.equal(nf.headers['ratelimit'], '"default";r=99;t=1')
  await f.inject('/nope')
  const blocked = await f.inject('/nope')
  t.equal(blocked.statusCode, 403)
  t.equal(
    blocked.headers['retry-after'],
    '1',
    'score 10 at threshold 10: blocked until 1 ms past halfLife · log2(1) = 0, sent as 1 s',
  )
  t.notOk('ratelimit' in blocked.headers, 'no quota figures on a 403')
  t.match(blocked.json(), { statusCode: 403, error: 'Forbidden' })
  await f.close()
})
