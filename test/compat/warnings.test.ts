// What grudge survives is logged once through the framework's logger (issue #19):
// no policy at all, a request without a client address (every such client shares `ip:`),
// and a failing store with onStoreError 'open' (once per outage, then at most once a minute).
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import type { StoreFactory } from '../../src/limit/store.js'
import { captureLog } from './helpers/log.js'

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
  const failing: StoreFactory = () => ({
    tryConsume: () => Promise.reject(new Error('ECONNREFUSED 127.0.0.1:6399')),
    add: () => Promise.reject(new Error('down')),
    read: () => Promise.reject(new Error('down')),
    sizeBytes: () => 0,
    close: () => undefined,
  })
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudgeFastify, { clock, ticker: new FakeTicker(), store: failing, limit: { rate: 1, burst: 5 } })
  f.get('/', async () => 'ok')
  for (let i = 0; i < 5; i++) t.equal((await f.inject('/')).statusCode, 200, 'fail-open admits')
  let store = grudgeLines(lines).filter((l) => /store/.test(String(l.msg)))
  t.equal(store.length, 1, 'one line for five failures')
  t.match(store[0], { err: { message: /ECONNREFUSED/ }, failures: 1 })
  clock.advance(30_000)
  await f.inject('/')
  t.equal(grudgeLines(lines).filter((l) => /store/.test(String(l.msg))).length, 1, 'still quiet within the minute')
  clock.advance(31_000)
  await f.inject('/')
  store = grudgeLines(lines).filter((l) => /store/.test(String(l.msg)))
  t.equal(store.length, 2, 'a minute later: one more line')
  t.match(store[1], { msg: /still failing \(6 failures since the last line\)/, failures: 6 })
  await f.close()
})
