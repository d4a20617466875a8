// Policy names that differ only in non-ASCII letters (zoë, zoé) collapsed into one
// RateLimit-Policy member ("zo?"), so the stricter policy vanished from the fields. A name
// given in options must be printable ASCII (an RFC 9651 sf-string holds nothing else) without
// `%`, and is sent verbatim; names grudge derives (route URLs) are percent-encoded (`%` as
// `%25`), so they stay distinct, and never equal a given name (which has no `%`).
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

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

t.test("'%' in a given name is refused at construction: it would be sent as %25", async (t) => {
  // '50%' was sent as "50%25"; and a given 'zo%C3%AB' would be the member of a route named /zoë
  for (const name of ['50%', 'zo%C3%AB', '%'])
    t.throws(() => grudgeExpress({ limit: { name, rate: 1, burst: 1 } }), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /option "limit\.name".*without '%'/,
    })
  t.throws(() => grudgeExpress({ name: '50%', limit: { rate: 1, burst: 1 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /option "name"/,
  })
  t.throws(
    () => grudgeExpress({ limit: { name: '50%', tiers: { free: { rate: 1, burst: 1 } }, tier: () => 'free' } }),
    {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /option "limit\.name"/,
    },
  )
  const f = Fastify()
  await t.rejects(
    async () => {
      await f.register(grudgeFastify, {
        clock: new FakeClock(0),
        ticker: new FakeTicker(),
        limit: { name: '50%', rate: 1, burst: 1 },
      })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /limit\.name/ },
  )
  await f.close().catch(() => {})
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(
    `${label}: every other printable ASCII name is sent verbatim, '"' and '\\' escaped (RFC 9651 §3.3.3)`,
    async (t) => {
      // sf-string: DQUOTE *( %x20-21 / %x23-5B / %x5D-7E / "\\" ( DQUOTE / "\\" ) ) DQUOTE
      // every printable ASCII character but '%', in order, as given and as RFC 9651 writes it
      const printable =
        ' !"#$&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~'
      const printableSent =
        '" !\\"#$&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"'
      t.equal(printable.length, 0x7e - 0x20, '94 characters: 0x20–0x7E without 0x25')
      const names = ['50 pct', 'a"b\\c', printable]
      const sent = ['"50 pct"', '"a\\"b\\\\c"', printableSent]
      for (let i = 0; i < names.length; i++) {
        const m = grudgeExpress({
          clock: new FakeClock(0),
          ticker: new FakeTicker(),
          limit: { name: names[i], rate: 1, burst: 4 },
        })
        t.teardown(() => m.close())
        const app = make()
        app.use(m)
        app.get('/', (_req, res) => {
          res.send('ok')
        })
        const r = await hit(await serve(t, app))
        t.equal(r.headers['ratelimit-policy'], `${sent[i]};q=4;w=4`, names[i])
        t.equal(r.headers['ratelimit'], `${sent[i]};r=3;t=1`)
      }
    },
  )
}

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
