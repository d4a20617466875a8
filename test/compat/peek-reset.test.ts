// peek / reset / forgive (issue #19 feature 2; ERL's get and resetKey, RLF's get/delete/reward).
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { Limiter } from '../../src/limit/limiter.js'

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

t.test('express: middleware.peek(req-less key) and reset', async (t) => {
  const mw = grudgeExpress({
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    warn: () => {},
    limit: { rate: 1, burst: 2 },
  })
  const l = (mw as unknown as { peek: typeof mw.peek }).peek
  t.equal((await l('ip:1.2.3.4')).limit?.debt, 0)
  await mw.close()
})

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
