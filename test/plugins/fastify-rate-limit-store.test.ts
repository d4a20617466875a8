import t from 'tap'
import Fastify from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { grudgeStore, GrudgeStore } from '../../plugins/fastify-rate-limit-store.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { POLICY_SKETCH_OPTION_KEYS, type PolicySketchOptions } from '../../src/limit/options.js'
import { localStore } from '../../src/limit/store.js'
import { murmur3 } from '../../src/hash/hasher.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('@fastify/rate-limit with a GrudgeStore: max per timeWindow as a debt meter', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const f = Fastify()
  await f.register(rateLimit, { max: 3, timeWindow: 3000, store: grudgeStore({ clock, ticker }) })
  f.get('/', async () => 'ok')
  const codes: number[] = []
  for (let i = 0; i < 4; i++) codes.push((await f.inject('/')).statusCode)
  t.same(codes, [200, 200, 200, 429])
  const denied = await f.inject('/')
  t.equal(denied.headers['retry-after'], '1', 'one request drains every timeWindow / max = 1 s, not a whole window')
  t.equal(denied.headers['x-ratelimit-remaining'], '0')
  clock.advance(1000)
  t.equal((await f.inject('/')).statusCode, 200)
  t.equal((await f.inject('/')).statusCode, 429, 'no window-edge burst: one per second')
  await f.close()
})

t.test('GrudgeStore directly: incr, read, child', async (t) => {
  const clock = new FakeClock(0)
  const s = new GrudgeStore(undefined, { clock, ticker: new FakeTicker() })
  const incr = (k: string) =>
    new Promise<{ current: number; ttl: number }>((resolve, reject) =>
      s.incr(k, (e, r) => (e ? reject(e) : resolve(r!)), 10_000, 5),
    )
  t.same(await incr('a'), { current: 1, ttl: 2000 })
  t.same(await incr('a'), { current: 2, ttl: 4000 })
  for (let i = 0; i < 3; i++) await incr('a')
  t.same(await incr('a'), { current: 6, ttl: 2000 }, 'denied: max + 1, ttl until one more fits')
  const read = await new Promise((resolve) => s.read('a', (_e, r) => resolve(r), 10_000, 5))
  t.same(read, { current: 5, ttl: 10_000 })
  const c = s.child({ method: 'GET', path: '/x' })
  t.ok(c instanceof GrudgeStore)
  t.ok(s.sizeBytes() > 0)
  const err = await new Promise((resolve) => s.incr('a', (e) => resolve(e), -1, 5))
  t.match(err, { code: 'ERR_GRUDGE_OPTION_INVALID' })
  await s.close()
})

t.test('unknown sketch options are refused; the options @fastify/rate-limit passes are its own', async (t) => {
  const ticker = new FakeTicker()
  t.throws(() => grudgeStore(typo<PolicySketchOptions>({ ticker, level: 2 })), unknownOption('store.level', 'levels'))
  t.throws(
    () => new GrudgeStore(undefined, typo<PolicySketchOptions>({ ticker, generation: 3 })),
    unknownOption('store.generation', 'generations'),
  )
  const all: Required<PolicySketchOptions> = {
    memory: '1MB',
    levels: 2,
    cellsPerLevel: 64,
    generations: 3,
    periodMs: 60_000,
    hasher: murmur3(),
    clock: new FakeClock(0),
    ticker,
    store: localStore(),
  }
  t.same(Object.keys(all).sort(), [...POLICY_SKETCH_OPTION_KEYS].sort(), 'the test names every option')
  const Store = grudgeStore(all)
  // what @fastify/rate-limit hands the store: its whole options object, not checked
  const s = new Store({ max: 3, timeWindow: 1000, keyGenerator: () => 'k', hook: 'onRequest', anything: true })
  const child = s.child({ url: '/a', method: 'GET' })
  await child.close()
  await s.close()
})
