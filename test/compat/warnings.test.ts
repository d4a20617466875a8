// What grudge survives is logged once through the framework's logger (issue #19; Fastify's
// logger, Express's `warn` option, on Express 4 and 5): no policy at all, a request without a
// client address (every such client shares `ip:`), and a failing store with onStoreError
// 'open' (once per outage, then at most once a minute; a new outage, after a minute without a
// failure, is logged at once).
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { localStore, type StoreFactory } from '../../src/limit/store.js'
import { captureLog } from './helpers/log.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const grudgeLines = (lines: Record<string, unknown>[]) =>
  lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('grudge:'))

t.test('fastify: registering without a policy warns (it is not refused: routes may bring their own)', async (t) => {
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker() })
  t.match(grudgeLines(lines), [{ msg: /without a policy/ }])
  await f.close()
})

t.test('express: a middleware without a policy warns', async (t) => {
  const warned: string[] = []
  const l = grudgeExpress({ warn: (m) => warned.push(m) })
  t.match(warned, [/without a policy/])
  await l.close()
})

/**
 * An in-process store whose calls fail while `down` is set, with `error` (a Redis outage):
 * up, it is the local store, so the middleware writes figures again.
 */
function flakyStore(): { store: StoreFactory; state: { down: boolean; error: Error } } {
  const state = { down: true, error: new Error('ECONNREFUSED 127.0.0.1:6399') }
  const local = localStore()
  const store: StoreFactory = (spec) => {
    const s = local(spec)
    const fail = () => Promise.reject(state.error)
    return {
      tryConsume: (k, c, l) => (state.down ? fail() : s.tryConsume(k, c, l)),
      add: (k, d) => (state.down ? fail() : s.add(k, d)),
      read: (k) => (state.down ? fail() : s.read(k)),
      sizeBytes: () => s.sizeBytes(),
      close: () => s.close(),
    }
  }
  return { store, state }
}

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: a middleware without a policy warns once, at construction, and passes requests on`, async (t) => {
    const warned: string[] = []
    const m = grudgeExpress({ clock: new FakeClock(0), ticker: new FakeTicker(), warn: (w) => warned.push(w) })
    t.teardown(() => m.close())
    t.same(warned.length, 1, 'before any request')
    t.match(
      warned[0],
      /^grudge: a middleware without a policy \(limit, fairness, abuse\) or bloom check limits nothing$/,
    )
    const app = make()
    app.use(m)
    app.get('/', (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, app)
    for (let i = 0; i < 3; i++) {
      const r = await hit(url)
      t.same([r.status, r.body, r.headers['ratelimit']], [200, 'ok', undefined], 'not limited, no fields')
    }
    t.equal(warned.length, 1, 'no more lines per request')
    const quiet: string[] = []
    await grudgeExpress({ limit: { rate: 1, burst: 1 }, warn: (w) => quiet.push(w) }).close()
    t.same(quiet, [], 'a middleware with a policy says nothing')
  })

  t.test(`${label}: a request without a client address warns once through warn, and is keyed ip:`, async (t) => {
    const warned: string[] = []
    const m = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      limit: { rate: 1, burst: 5 },
      warn: (w) => warned.push(w),
    })
    t.teardown(() => m.close())
    const app = make()
    // a proxy setup that loses the address: req.ip and the socket's address both undefined
    app.use((req, _res, next) => {
      if (req.headers['x-lost'] === 'yes') {
        Object.defineProperty(req, 'ip', { value: undefined })
        Object.defineProperty(req.socket, 'remoteAddress', { value: undefined, configurable: true })
      }
      next()
    })
    app.use(m)
    app.get('/', (req, res) => {
      res.send(req.grudge?.key)
    })
    const url = await serve(t, app)
    const first = await hit(url)
    t.equal(first.body, 'ip:127.0.0.1', 'an addressed request')
    t.same(warned, [], 'says nothing')
    const keys: string[] = []
    for (let i = 0; i < 3; i++) keys.push((await hit(url, { 'x-lost': 'yes' })).body)
    t.same(keys, ['ip:', 'ip:', 'ip:'], 'the shared fallback key')
    t.equal(warned.length, 1, 'warned once for three requests')
    t.match(warned[0], /^grudge: a request has no client address .* share the key 'ip:' .*trust proxy/)
  })

  t.test(
    `${label}: a failing store with onStoreError open is logged through warn once per outage, with the error`,
    async (t) => {
      const clock = new FakeClock(0)
      const { store, state } = flakyStore()
      const warned: string[] = []
      const m = grudgeExpress({
        clock,
        ticker: new FakeTicker(),
        store,
        onStoreError: 'open',
        limit: { rate: 1, burst: 5 },
        warn: (w) => warned.push(w),
      })
      t.teardown(() => m.close())
      const app = make()
      app.use(m)
      app.get('/', (_req, res) => {
        res.send('ok')
      })
      const url = await serve(t, app)
      const storeLines = () => warned.filter((w) => /store/.test(w))
      for (let i = 0; i < 25; i++) {
        const r = await hit(url)
        t.same([r.status, r.headers['ratelimit']], [200, undefined], 'fail-open admits, without invented figures')
      }
      t.equal(storeLines().length, 1, 'one line for 25 failures: no flood')
      t.match(
        storeLines()[0],
        /^grudge: the store failed; onStoreError decides \(open: .*\): Error: ECONNREFUSED 127\.0\.0\.1:6399$/,
      )
      clock.advance(30_000)
      await hit(url)
      t.equal(storeLines().length, 1, 'still quiet within the minute')
      clock.advance(31_000)
      await hit(url)
      t.equal(storeLines().length, 2, 'a minute later: one more line')
      t.match(storeLines()[1], /^grudge: the store is still failing \(26 failures since the last line\).*ECONNREFUSED/)
      // the store answers again: figures come back, and a minute without a failure ends the outage
      state.down = false
      t.match((await hit(url)).headers['ratelimit'], /^"default";r=\d+;t=\d+$/, 'recovered: figures again')
      clock.advance(61_000)
      t.equal((await hit(url)).status, 200)
      t.equal(storeLines().length, 2, 'recovery itself says nothing')
      state.down = true
      state.error = new Error('ETIMEDOUT 127.0.0.1:6399')
      for (let i = 0; i < 5; i++) await hit(url)
      t.equal(storeLines().length, 3, 'a new outage: one new line at once, for its five failures')
      t.match(
        storeLines()[2],
        /^grudge: the store failed; onStoreError decides .*: Error: ETIMEDOUT 127\.0\.0\.1:6399$/,
      )
      t.equal(warned.length, 3, 'nothing else was logged')
    },
  )
}

t.test('fastify: a request without a client address warns once and is keyed ip:', async (t) => {
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 5 } })
  // the app's onRequest hooks run before the route's own (grudge's): the address is gone by then
  f.addHook('onRequest', (req, _reply, done) => {
    Object.defineProperty(req, 'ip', { value: undefined })
    done()
  })
  f.get('/', async (req) => req.grudge?.key)
  const keys: string[] = []
  for (let i = 0; i < 2; i++) keys.push((await f.inject({ url: '/', remoteAddress: '' })).body)
  t.same(keys, ['ip:', 'ip:'], 'the shared fallback key')
  t.equal(grudgeLines(lines).filter((l) => /no client address/.test(String(l.msg))).length, 1, 'warned once')
  await f.close()
})

t.test('fastify: a failing store with onStoreError open is logged once per outage, with the error', async (t) => {
  const clock = new FakeClock(0)
  const { store, state } = flakyStore()
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudgeFastify, { clock, ticker: new FakeTicker(), store, limit: { rate: 1, burst: 5 } })
  f.get('/', async () => 'ok')
  const storeLines = () => grudgeLines(lines).filter((l) => /store/.test(String(l.msg)))
  for (let i = 0; i < 5; i++) t.equal((await f.inject('/')).statusCode, 200, 'fail-open admits')
  t.equal(storeLines().length, 1, 'one line for five failures')
  t.match(storeLines()[0], { err: { message: /ECONNREFUSED/ }, failures: 1 })
  clock.advance(30_000)
  await f.inject('/')
  t.equal(storeLines().length, 1, 'still quiet within the minute')
  clock.advance(31_000)
  await f.inject('/')
  t.equal(storeLines().length, 2, 'a minute later: one more line')
  t.match(storeLines()[1], { msg: /still failing \(6 failures since the last line\)/, failures: 6 })
  // recovered, a minute without a failure, then a new outage: logged at once, with its error
  state.down = false
  t.match((await f.inject('/')).headers['ratelimit'], /^"default";r=\d+;t=\d+$/, 'recovered: figures again')
  clock.advance(61_000)
  await f.inject('/')
  state.down = true
  state.error = new Error('ETIMEDOUT 127.0.0.1:6399')
  for (let i = 0; i < 5; i++) await f.inject('/')
  t.equal(storeLines().length, 3, 'a new outage: one new line at once, for its five failures')
  t.match(storeLines()[2], { msg: /the store failed;/, err: { message: /ETIMEDOUT/ }, failures: 1 })
  await f.close()
})
