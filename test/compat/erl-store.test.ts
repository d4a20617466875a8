// express-rate-limit with grudgeExpressStore, in the shape of ERL's own external-store tests
// (its repository's test/external/stores: limit N, N requests pass, the next is 429), then
// the Store interface one method at a time, against ERL's documented semantics.
import t, { type Test } from 'tap'
import express from 'express'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { request } from 'undici'
import { rateLimit } from 'express-rate-limit'
import { grudgeExpressStore, GrudgeExpressStore, dateClock } from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import type { PolicySketchOptions } from '../../src/limit/options.js'
import { localStore, type StoreFactory } from '../../src/limit/store.js'
import { typo, unknownOption } from '../unknown-option.js'

const express4 = createRequire(import.meta.url)('express4') as typeof express

async function serve(t: Test, app: express.Express): Promise<string> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s))
  })
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  )
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function get(url: string): Promise<{ status: number; headers: Record<string, unknown> }> {
  const r = await request(url)
  await r.body.text()
  return { status: r.statusCode, headers: r.headers }
}

for (const [name, make] of [
  ['Express 5', () => express()],
  ['Express 4', () => express4()],
] as const) {
  t.test(`${name}: limit 3 admits 3 and refuses the 4th (ERL's external-store test shape)`, async (t) => {
    const clock = new FakeClock(Date.now())
    const store = grudgeExpressStore({ clock, ticker: new FakeTicker() })
    const app = make()
    app.use(rateLimit({ windowMs: 60_000, limit: 3, store, standardHeaders: 'draft-7', legacyHeaders: false }))
    app.get('/', (_req, res) => void res.send('ok'))
    const url = await serve(t, app)
    const codes: number[] = []
    for (let i = 0; i < 4; i++) codes.push((await get(url)).status)
    t.same(codes, [200, 200, 200, 429])
    const refused = await get(url)
    t.equal(refused.headers['retry-after'], '20', 'one request fits every windowMs / limit = 20 s, not a whole window')
    t.match(String(refused.headers.ratelimit), /limit=3, remaining=0, reset=20/)
    clock.advance(20_000)
    t.equal((await get(url)).status, 200, 'one more after 20 s')
    t.equal((await get(url)).status, 429, 'and no window-edge burst')
    await store.shutdown()
  })
}

t.test('the Store interface: increment, get, decrement, resetKey, resetAll', async (t) => {
  const clock = new FakeClock(1_000_000)
  const s = new GrudgeExpressStore({ clock, ticker: new FakeTicker() })
  t.equal(s.localKeys, true, 'an in-process sketch: keys are local (ERL double-count check)')
  t.match(s.prefix, /^express-rate-limit:\d+:$/)
  s.init({ windowMs: 10_000, limit: 5 })
  const hits = async (k: string) => (await s.increment(k)).totalHits
  t.same(await s.increment('a'), { totalHits: 1, resetTime: new Date(1_002_000) }, 'reset when the debt drains: 2 s')
  for (let i = 0; i < 4; i++) await hits('a')
  t.same(await s.get('a'), { totalHits: 5, resetTime: new Date(1_010_000) })
  t.equal(await hits('a'), 6, 'refused: limit + 1, so ERL answers 429')
  t.equal(await hits('a'), 7, 'refusals keep counting')
  await s.decrement('a')
  t.equal((await s.get('a')).totalHits, 6, 'decrement takes back a refusal first')
  await s.decrement('a')
  t.equal((await s.get('a')).totalHits, 5, 'the refusals are gone: the debt is the 5 admitted')
  await s.decrement('a')
  t.equal((await s.get('a')).totalHits, 4, 'then one emission interval of debt')
  t.equal(await hits('a'), 5, 'and that request fits again')
  await s.resetKey('a')
  t.same(await s.get('a'), { totalHits: 0, resetTime: new Date(clock.now()) }, 'resetKey forgets the key')
  await hits('b')
  await s.resetAll()
  t.equal((await s.get('b')).totalHits, 0, 'resetAll forgets everyone')
  t.ok(s.sizeBytes() >= 0)
  await s.shutdown()
})

t.test('memory stays constant whatever the number of clients', async (t) => {
  const s = grudgeExpressStore({ clock: new FakeClock(0), ticker: new FakeTicker(), cellsPerLevel: 64 })
  s.init({ windowMs: 1000, limit: 2 })
  for (let i = 0; i < 3; i++) await s.increment('a') // a refusal: the refusal sketch exists too
  const bytes = s.sizeBytes()
  for (let i = 0; i < 5000; i++) await s.increment(`k${i}`)
  t.equal(s.sizeBytes(), bytes, '5000 clients, the bytes of one')
  await s.shutdown()
})

t.test('limit 0 refuses all; a function limit or a bad window is a coded error at init', async (t) => {
  const s = grudgeExpressStore({ clock: new FakeClock(0), ticker: new FakeTicker() })
  t.throws(() => s.increment('a'), { code: 'ERR_GRUDGE_OPTION_INVALID' }, 'not initialised')
  t.throws(() => s.init({ windowMs: 1000, limit: () => 3 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /one limiter per plan/,
  })
  t.throws(() => s.init({ windowMs: 0, limit: 3 }), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.throws(() => s.init({ windowMs: 1000, limit: NaN }), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  s.init({ windowMs: 1000, limit: 0 })
  t.equal((await s.increment('a')).totalHits, 1, 'limit 0: every hit is over the limit, as in ERL')
  t.throws(() => grudgeExpressStore(typo<PolicySketchOptions>({ level: 2 })), unknownOption('store.level', 'levels'))
  await s.shutdown()
})

t.test('dateClock: express-rate-limit under node:test MockTimers', async (t) => {
  const { mock } = await import('node:test')
  mock.timers.enable({ apis: ['Date'], now: 5_000_000 })
  try {
    const s = grudgeExpressStore({ clock: dateClock, ticker: new FakeTicker() })
    s.init({ windowMs: 1000, limit: 1 })
    t.same(await s.increment('a'), { totalHits: 1, resetTime: new Date(5_001_000) })
    t.equal((await s.increment('a')).totalHits, 2)
    mock.timers.tick(1000)
    t.equal((await s.increment('a')).totalHits, 1, 'a mocked second later: fits again')
    await s.shutdown()
  } finally {
    mock.timers.reset()
  }
})

// a store that answers with Promises (as a shared store does), and one that fails
function asyncStore(failure?: 'open' | 'closed'): StoreFactory {
  const local = localStore()
  return (spec) => {
    const s = local(spec)
    return {
      tryConsume: (k, c, l) =>
        Promise.resolve(failure ? { admitted: failure === 'open', score: NaN, failure } : s.tryConsume(k, c, l)),
      add: (k, d) => Promise.resolve(s.add(k, d)),
      read: (k) => Promise.resolve(s.read(k)),
      sizeBytes: () => s.sizeBytes(),
      close: () => Promise.resolve(s.close()),
    }
  }
}

t.test('a store that answers with Promises: every method awaits it', async (t) => {
  const clock = new FakeClock(0)
  const s = grudgeExpressStore({ clock, ticker: new FakeTicker(), store: asyncStore() })
  t.equal(s.localKeys, false, 'a store of our own: keys may be shared')
  s.init({ windowMs: 1000, limit: 1 })
  const first = s.increment('a')
  t.ok(first instanceof Promise)
  t.same(await first, { totalHits: 1, resetTime: new Date(1000) })
  t.same(await s.increment('a'), { totalHits: 2, resetTime: new Date(1000) })
  await s.decrement('a')
  t.equal((await s.get('a')).totalHits, 1)
  await s.decrement('a')
  t.equal((await s.get('a')).totalHits, 0)
  await s.increment('a')
  await s.increment('a')
  await s.resetKey('a')
  t.equal((await s.get('a')).totalHits, 0)
  await s.shutdown()
})

t.test('a failed shared store: open admits with no count, closed refuses', async (t) => {
  const open = grudgeExpressStore({ clock: new FakeClock(0), ticker: new FakeTicker(), store: asyncStore('open') })
  open.init({ windowMs: 1000, limit: 1 })
  t.equal((await open.increment('a')).totalHits, 0)
  const closed = grudgeExpressStore({ clock: new FakeClock(0), ticker: new FakeTicker(), store: asyncStore('closed') })
  closed.init({ windowMs: 1000, limit: 1 })
  t.same(await closed.increment('a'), { totalHits: 2, resetTime: new Date(1000) }, 'refused, retry in 1 s')
  await open.shutdown()
  await closed.shutdown()
})
