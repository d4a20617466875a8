// Policy names that differ only in non-ASCII letters (zoë, zoé) collapsed into one
// RateLimit-Policy member ("zo?"), so the stricter policy vanished from the fields. A name
// given in options must be printable ASCII (an RFC 9651 sf-string holds nothing else); names
// grudge derives (route URLs) are percent-encoded, so they stay distinct.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('non-ASCII policy names are refused at construction', async (t) => {
  for (const name of ['zoë', 'zoé', 'tab\there', ''])
    t.throws(() => grudgeExpress({ limit: { name, rate: 1, burst: 1 } }), { code: 'ERR_GRUDGE_OPTION_INVALID' }, name)
  t.throws(() => grudgeExpress({ name: 'zoë', limit: { rate: 1, burst: 1 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /option "name"/,
  })
  const f = Fastify()
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: false })
  t.throws(() => f.grudge.hook({ limit: { name: 'zoé', rate: 1, burst: 1 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /hook\.limit\.name/,
  })
  await f.close()
})

t.test('stacked unnamed policies stay distinct members (a taken fallback name is numbered)', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 9 } })
  // unnamed hooks stacked under an unnamed route limit: a clash of defaulted names is written
  // under the hook limiter's name, which is derived (`hook:<n>`), or numbered when that is taken too
  f.get('/zoë', { config: { grudge: { limit: { rate: 1, burst: 2 } } }, preHandler: f.grudge.hook() }, async () => 'a')
  f.get('/zoé', { config: { grudge: { limit: { rate: 1, burst: 3 } } }, preHandler: f.grudge.hook() }, async () => 'b')
  const a = await f.inject('/zo%C3%AB')
  const b = await f.inject('/zo%C3%A9')
  t.equal(a.statusCode, 200)
  t.equal(a.headers['ratelimit-policy'], '"default";q=2;w=2, "default#2";q=9;w=9')
  t.equal(b.headers['ratelimit-policy'], '"default";q=3;w=3, "default#2";q=9;w=9')
  await f.close()
})
