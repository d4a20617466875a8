// peek / reset / forgive (issue #19 feature 2; ERL's get and resetKey, RLF's get/delete/reward).
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { Limiter } from '../../src/limit/limiter.js'
import { request } from 'undici'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

t.test('fastify: peek reads without consuming; reset and forgive lower the debt', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 3 } })
  f.get('/', async () => 'ok')
  for (let i = 0; i < 3; i++) await f.inject('/')
  t.equal((await f.inject('/')).statusCode, 429)
  const key = 'ip:127.0.0.1'
  const s = await f.grudge.peek(key)
  t.equal(s.limit?.debt, 3)
  t.equal(s.limit?.remaining, 0)
  t.equal((await f.grudge.peek(key)).limit?.debt, 3, 'peek consumed nothing')
  await f.grudge.forgive(key, 1)
  t.equal((await f.grudge.peek(key)).limit?.debt, 2, 'forgive(key, 1) lowers by 1')
  t.equal((await f.inject('/')).statusCode, 200)
  await f.grudge.reset(key)
  t.equal((await f.grudge.peek(key)).limit?.debt, 0, 'reset: the key reads 0')
  await t.rejects(f.grudge.forgive(key, -1), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await t.rejects(f.grudge.forgive(key, 1, { policy: 'abuse' }), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.throws(() => f.grudge.route('GET /nope'), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await f.close()
})

t.test('fastify: an argument that is neither a key string nor a request is refused, not read as ip:', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 3 } })
  for (const bad of [42, undefined, null, true])
    await t.rejects(
      f.grudge.peek(bad as never),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /option "key"/ },
      String(bad),
    )
  await t.rejects(f.grudge.forgive(42 as never, 1), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await t.rejects(f.grudge.reset(undefined as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await f.close()
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(
    `${label}: peek reads without consuming; forgive(amount) lowers partially; reset lets a refused key through`,
    async (t) => {
      const m = grudgeExpress({
        clock: new FakeClock(0),
        ticker: new FakeTicker(),
        warn: () => {},
        limit: { rate: 1, burst: 3 },
      })
      t.teardown(() => m.close())
      const app = make()
      // before the middleware, so not limited: the request forms of peek and reset
      app.get('/state', async (req, res) => {
        res.json(await m.peek(req))
      })
      app.post('/reset', async (req, res) => {
        await m.reset(req)
        res.send('reset')
      })
      app.use(m)
      app.get('/', (_req, res) => {
        res.send('ok')
      })
      const url = await serve(t, app)
      const codes = async (n: number) => {
        const out: number[] = []
        for (let i = 0; i < n; i++) out.push((await hit(url)).status)
        return out
      }
      const debt = async () => (await m.peek(key)).limit?.debt
      const key = 'ip:127.0.0.1'
      t.same(await codes(4), [200, 200, 200, 429], 'a burst of 3, then refused')
      t.match(await m.peek(key), { key, limit: { tier: undefined, debt: 3, limit: 3, remaining: 0, resetMs: 3000 } })
      for (let i = 0; i < 3; i++) t.equal(await debt(), 3, 'peek consumed nothing')
      const viaRequest = JSON.parse((await hit(`${url}/state`)).body) as { key: string; limit: { debt: number } }
      t.match(viaRequest, { key, limit: { debt: 3 } }, 'peek(req) derives the same key')
      t.same(await codes(1), [429], 'still refused: peeking gave nothing back')

      await m.forgive(key, 0.5)
      t.equal(await debt(), 2.5, 'forgive(key, 0.5) lowers by 0.5')
      t.same(await codes(1), [429], '2.5 + 1 > 3: still refused')
      await m.forgive(key, 0.5)
      t.equal(await debt(), 2)
      t.same(await codes(2), [200, 429], 'room for exactly one')

      await m.reset('ip:10.0.0.1')
      t.equal(await debt(), 3, 'resetting another key leaves this one')
      await m.reset(key)
      t.equal(await debt(), 0, 'reset: the key reads 0')
      t.same(await codes(4), [200, 200, 200, 429], 'the whole burst again')
      t.equal(await debt(), 3, 'refused again')
      const r = await request(`${url}/reset`, { method: 'POST' })
      t.equal(await r.body.text(), 'reset')
      t.equal(await debt(), 0, 'reset(req) derives the same key')
      t.same(await codes(1), [200])
    },
  )

  t.test(`${label}: bad input to peek, reset and forgive is a coded rejection, and changes nothing`, async (t) => {
    const m = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      warn: () => {},
      limit: { rate: 1, burst: 3 },
    })
    t.teardown(() => m.close())
    const app = make()
    app.use(m)
    app.get('/', (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, app)
    for (let i = 0; i < 3; i++) await hit(url)
    const key = 'ip:127.0.0.1'
    const invalid = (what: RegExp) => ({ code: 'ERR_GRUDGE_OPTION_INVALID', message: what })
    // neither a key string nor a request: once read as `ip:`, or a TypeError
    for (const bad of [42, undefined, null, true]) {
      await t.rejects(m.peek(bad as never), invalid(/option "key"/), `peek(${String(bad)})`)
      await t.rejects(m.reset(bad as never), invalid(/option "key"/), `reset(${String(bad)})`)
      await t.rejects(m.forgive(bad as never, 1), invalid(/option "key"/), `forgive(${String(bad)}, 1)`)
    }
    for (const amount of [0, -1, NaN, Infinity, '1'])
      await t.rejects(
        m.forgive(key, amount as never),
        invalid(/option "amount": expected a finite number > 0/),
        `amount ${String(amount)}`,
      )
    await t.rejects(m.forgive(key, 1, { policy: 'abuse' }), invalid(/it has no abuse/))
    await t.rejects(m.reset(key, { policy: 'nope' as never }), invalid(/option "policy"/))
    await t.rejects(m.reset(key, 'limit' as never), invalid(/option "reset options"/))
    await t.rejects(m.peek(key, 'free' as never), invalid(/option "peek options"/))
    t.equal((await m.peek(key)).limit?.debt, 3, 'nothing was lowered')

    const tiered = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      warn: () => {},
      limit: { tiers: { free: { rate: 1, burst: 2 }, pro: { rate: 10, burst: 20 } }, tier: () => 'free' },
    })
    t.teardown(() => tiered.close())
    await t.rejects(tiered.peek(key), { code: 'ERR_GRUDGE_TIER_UNKNOWN' }, 'a key string needs its tier')
    await t.rejects(tiered.peek(key, { tier: 'gold' }), { code: 'ERR_GRUDGE_TIER_UNKNOWN' })
    await t.rejects(tiered.forgive(key, 1, { tier: 'gold' }), { code: 'ERR_GRUDGE_TIER_UNKNOWN' })
    t.match(await tiered.peek(key, { tier: 'pro' }), { limit: { tier: 'pro', debt: 0, limit: 20 } })
  })
}

t.test('core: reset across generations, and the bound on keys sharing cells', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  // a tiny sketch so keys collide: 1 level of 16 cells
  const l = new Limiter({
    clock,
    ticker,
    levels: 1,
    cellsPerLevel: 16,
    generations: 3,
    limit: { rate: 0.001, burst: 1000 },
  })
  const truth = new Map<string, number>()
  for (let i = 0; i < 64; i++) {
    const k = `k${i}`
    const c = 1 + (i % 5)
    l.decide(k, c)
    truth.set(k, c)
  }
  const before = new Map<string, number>()
  for (const k of truth.keys()) before.set(k, (await l.peek(k)).limit!.debt)
  const e = before.get('k0')!
  await l.reset('k0')
  t.equal((await l.peek('k0')).limit!.debt, 0, 'the reset key reads 0')
  ticker.tick()
  t.equal((await l.peek('k0')).limit!.debt, 0, 'still 0 once a younger generation decides')
  for (const [k, d] of truth) {
    if (k === 'k0') continue
    const after = (await l.peek(k)).limit!.debt
    t.ok(after >= d - e - 1e-9, `${k}: under-estimated by at most E (${after} ≥ ${d} − ${e})`)
  }
  await l.close()
})
