// standardHeaders (issue #19, feature 5), with express-rate-limit's draft names. The expected
// fields are those its source/headers.ts writes for each draft (draft-6: RateLimit-Policy
// `<q>;w=<w>` and RateLimit-Limit/-Remaining/-Reset; draft-7: RateLimit-Policy and one
// `limit=…, remaining=…, reset=…`; draft-8: named `"<name>";q=…;w=…` / `"<name>";r=…;t=…`,
// here without its optional pk parameter), and for draft-10 the draft's own examples
// (`"default";q=100;w=10`, `"default";r=50;t=30`). The default stays draft-10, byte for byte.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'
import type { StandardHeadersDraft } from '../../src/http/headers.js'

const FIELDS = ['ratelimit-policy', 'ratelimit', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']
const pick = (h: Record<string, unknown>) =>
  Object.fromEntries(FIELDS.filter((n) => h[n] !== undefined).map((n) => [n, h[n]]))

// burst 10 restored in 10 s (rate 1/s); after one request: 9 left, drained in 1 s
const EXPECTED: Record<StandardHeadersDraft | 'default', Record<string, string>> = {
  default: { 'ratelimit-policy': '"default";q=10;w=10', ratelimit: '"default";r=9;t=1' },
  'draft-10': { 'ratelimit-policy': '"default";q=10;w=10', ratelimit: '"default";r=9;t=1' },
  'draft-8': { 'ratelimit-policy': '"default";q=10;w=10', ratelimit: '"default";r=9;t=1' },
  'draft-7': { 'ratelimit-policy': '10;w=10', ratelimit: 'limit=10, remaining=9, reset=1' },
  'draft-6': {
    'ratelimit-policy': '10;w=10',
    'ratelimit-limit': '10',
    'ratelimit-remaining': '9',
    'ratelimit-reset': '1',
  },
}

const base = () => ({ clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 10 } })

t.test('fastify: each draft writes its fields; the default is draft-10', async (t) => {
  for (const [draft, want] of Object.entries(EXPECTED)) {
    const f = Fastify()
    await f.register(grudge, {
      ...base(),
      ...(draft === 'default' ? {} : { standardHeaders: draft as StandardHeadersDraft }),
    })
    f.get('/', async () => 'ok')
    t.same(pick((await f.inject('/')).headers), want, draft)
    await f.close()
  }
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: each draft writes its fields; false writes none but the legacy ones and Retry-After`, async (t) => {
    for (const [draft, want] of Object.entries(EXPECTED)) {
      const a = make()
      const m = grudgeExpress({
        ...base(),
        ...(draft === 'default' ? {} : { standardHeaders: draft as StandardHeadersDraft }),
      })
      t.teardown(() => m.close())
      a.get('/', m, (_req, res) => {
        res.send('ok')
      })
      t.same(pick((await hit(await serve(t, a))).headers), want, draft)
    }
    const a = make()
    const m = grudgeExpress({ ...base(), limit: { rate: 1, burst: 1 }, standardHeaders: false, legacyHeaders: true })
    t.teardown(() => m.close())
    a.get('/', m, (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, a)
    const ok = await hit(url)
    t.same(pick(ok.headers), {}, 'no IETF field')
    t.equal(ok.headers['x-ratelimit-limit'], '1')
    const no = await hit(url)
    t.same(
      [no.status, no.headers['retry-after'], no.headers['x-ratelimit-reset']],
      [429, '1', '1'],
      'X-RateLimit-Reset in delta seconds',
    )
  })
}

t.test('standardHeaders: true is refused (it means draft-6 in express-rate-limit); unknown drafts too', async (t) => {
  t.throws(() => grudgeExpress({ standardHeaders: true as never }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /standardHeaders.*'draft-6'/,
  })
  t.throws(() => grudgeExpress({ standardHeaders: 'draft-9' as never }), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await t.rejects(
    async () => {
      await Fastify().register(grudge, { standardHeaders: true as never })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID' },
  )
})

t.test('stacked limits in drafts 6 and 7: every policy listed, the tightest described', async (t) => {
  for (const draft of ['draft-6', 'draft-7'] as const) {
    const f = Fastify()
    await f.register(grudge, {
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1, burst: 100 },
      standardHeaders: draft,
    })
    f.get(
      '/login',
      { preHandler: f.grudge.hook({ limit: { name: 'login', rate: 1 / 60, burst: 3 } }) },
      async () => 'ok',
    )
    const h = (await f.inject('/login')).headers
    t.equal(h['ratelimit-policy'], '100;w=100, 3;w=180', `${draft}: both policies`)
    if (draft === 'draft-7')
      t.equal(h['ratelimit'], 'limit=3, remaining=2, reset=60', 'the login policy: fewest remaining')
    else t.same([h['ratelimit-limit'], h['ratelimit-remaining'], h['ratelimit-reset']], ['3', '2', '60'])
    await f.close()
  }
})

t.test('huge and tiny figures stay plain integers of at most 15 digits in every draft', async (t) => {
  for (const draft of ['draft-6', 'draft-7', 'draft-8', 'draft-10'] as const) {
    const f = Fastify()
    await f.register(grudge, {
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1e-16, burst: 2 },
      standardHeaders: draft,
      periodMs: 1e30,
    })
    f.get('/', async () => 'ok')
    const h = (await f.inject('/')).headers
    const figures = FIELDS.flatMap((n) => String(h[n] ?? '').match(/\d[\d.e+]*/g) ?? [])
    t.ok(figures.length >= 3, `${draft}: ${figures.join(' ')}`)
    for (const x of figures) t.match(x, /^\d{1,15}$/, `${draft}: ${x}`)
    t.ok(figures.includes('999999999999999'), `${draft}: the window of 2e16 s clamped`)
    await f.close()
  }
})
