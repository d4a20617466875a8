import t from 'tap'
import Fastify from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { grudgeStore, GrudgeStore, dateClock } from '../../plugins/fastify-rate-limit-store.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { POLICY_SKETCH_OPTION_KEYS, type PolicySketchOptions } from '../../src/limit/options.js'
import { localStore, type StoreFactory } from '../../src/limit/store.js'
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
  t.same(read, { current: 6, ttl: 10_000 }, 'a peek counts the refusal too (max + refusals), the debt is 10 s')
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

const incrOf =
  (s: GrudgeStore, windowMs: number, max: number) =>
  (k: string | number): Promise<{ current: number; ttl: number }> =>
    new Promise((resolve, reject) => s.incr(k, (e, r) => (e ? reject(e) : resolve(r!)), windowMs, max))

t.test('max 0 refuses every request with 429, as LocalStore (it answered 500 with our option text)', async (t) => {
  const f = Fastify()
  await f.register(rateLimit, { max: () => 0, timeWindow: 1000, store: grudgeStore({ ticker: new FakeTicker() }) })
  f.get('/', async () => 'ok')
  const r = await f.inject('/')
  t.equal(r.statusCode, 429)
  t.equal(r.headers['x-ratelimit-limit'], '0')
  t.equal(r.headers['retry-after'], '1', 'the wait shown is one window')
  await f.close()
})

t.test('a numeric keyGenerator result is a key (FRL examples use () => 42)', async (t) => {
  const clock = new FakeClock(0)
  const f = Fastify()
  await f.register(rateLimit, {
    max: 1,
    timeWindow: 1000,
    keyGenerator: () => 42,
    store: grudgeStore({ clock, ticker: new FakeTicker() }),
  })
  f.get('/', async () => 'ok')
  t.equal((await f.inject('/')).statusCode, 200)
  t.equal((await f.inject('/')).statusCode, 429)
  const s = new GrudgeStore(undefined, { clock, ticker: new FakeTicker() })
  const incr = incrOf(s, 1000, 1)
  await incr(7)
  t.equal((await incr('7')).current, 2, 'the number 7 and the string "7" are the same key, as in a Map of String(key)')
  await f.close()
  await s.close()
})

t.test('ban and onBanReach fire: refusals grow current (FRL: 403 once current − max > ban)', async (t) => {
  const clock = new FakeClock(0)
  const f = Fastify()
  const banned: string[] = []
  await f.register(rateLimit, {
    max: 1,
    ban: 1,
    timeWindow: 1000,
    onBanReach: (_req, key) => banned.push(key),
    store: grudgeStore({ clock, ticker: new FakeTicker() }),
  })
  f.get('/', async () => 'ok')
  const codes: number[] = []
  for (let i = 0; i < 4; i++) codes.push((await f.inject('/')).statusCode)
  t.same(codes, [200, 429, 403, 403], 'FRL README: ban after `ban` refusals')
  t.same(banned, ['127.0.0.1', '127.0.0.1'])
  clock.advance(4000)
  t.equal(
    (await f.inject('/')).statusCode,
    200,
    'refusals drain (one per emission interval) and the debt too: forgiven',
  )
  await f.close()
})

t.test('refusals do not delay the next admission unless continueExceeding / exponentialBackoff', async (t) => {
  const clock = new FakeClock(0)
  const s = new GrudgeStore({}, { clock, ticker: new FakeTicker() })
  const incr = incrOf(s, 1000, 2)
  await incr('a')
  await incr('a')
  for (let i = 0; i < 5; i++) t.equal((await incr('a')).ttl, 500, 'each refusal: one emission interval to wait')
  t.equal((await incr('a')).current, 2 + 6, 'current = max + refusals counted')
  clock.advance(500)
  t.equal((await incr('a')).current, 2, 'admitted after 500 ms: refusals added no debt')
  await s.close()
})

t.test('continueExceeding: each refusal puts the next admission a whole window away (FRL README)', async (t) => {
  const clock = new FakeClock(0)
  const s = new GrudgeStore({ continueExceeding: true }, { clock, ticker: new FakeTicker() })
  const incr = incrOf(s, 5000, 1)
  t.equal((await incr('a')).ttl, 5000)
  t.same(await incr('a'), { current: 2, ttl: 5000 })
  clock.advance(3000)
  t.equal((await incr('a')).ttl, 5000, 'renewed: 5 s again from this refusal')
  clock.advance(3000)
  const r = await incr('a')
  t.ok(r.current > 1 && r.ttl === 5000, 'still refused at 6 s, where a plain window would admit')
  clock.advance(5000)
  t.equal((await incr('a')).current, 1, 'admitted after a whole window of quiet')
  const child = s.child({ url: '/x', method: 'GET' })
  const ci = incrOf(child, 5000, 1)
  await ci('b')
  t.equal((await ci('b')).ttl, 5000, 'a child inherits continueExceeding')
  const plain = s.child({ url: '/y', continueExceeding: false })
  const pi = incrOf(plain, 5000, 1)
  await pi('b')
  clock.advance(1000)
  t.equal((await pi('b')).ttl, 4000, 'a route that turns it off')
  await s.close()
})

t.test('exponentialBackoff: the n-th refusal in a row waits timeWindow · 2^(n−1) (FRL README), enforced', async (t) => {
  const clock = new FakeClock(0)
  const s = new GrudgeStore({ exponentialBackoff: true }, { clock, ticker: new FakeTicker() })
  const incr = incrOf(s, 500, 2)
  await incr('a')
  await incr('a')
  const ttls: number[] = []
  for (let i = 0; i < 4; i++) ttls.push((await incr('a')).ttl)
  t.same(ttls, [500, 1000, 2000, 4000])
  clock.advance(3999)
  t.ok((await incr('a')).current > 2, 'refused before the wait it reported')
  const s2 = new GrudgeStore({ exponentialBackoff: true }, { clock, ticker: new FakeTicker() })
  const i2 = incrOf(s2, 500, 2)
  await i2('b')
  await i2('b')
  for (let i = 0; i < 3; i++) await i2('b')
  clock.advance(2000)
  t.equal((await i2('b')).current, 2, 'after the whole 2 s wait: admitted (current ≤ max)')
  t.equal((await i2('b')).ttl, 500, 'the refusal run was forgiven: the next refusal waits the base window again')
  await s.close()
  await s2.close()
})

t.test('memory is bounded: a per-key computed max shares one meter per window class', async (t) => {
  const s = new GrudgeStore(undefined, { clock: new FakeClock(0), ticker: new FakeTicker(), cellsPerLevel: 64 })
  // a refusal in the class first, so that both of its sketches (debt and refusals) exist
  const refuse = async (w: number) => {
    await incrOf(s, w, 1)('refused')
    t.ok((await incrOf(s, w, 1)('refused')).current > 1)
  }
  await refuse(60_000)
  const one = s.sizeBytes()
  for (let max = 1; max <= 1000; max++) await incrOf(s, 60_000, max)(`k${max}`)
  t.equal(s.sizeBytes(), one, '1000 distinct maxes: the bytes of one')
  await refuse(1025)
  const two = s.sizeBytes()
  t.ok(two > one, 'a window of another class (2^11 ms) has sketches of its own')
  for (const w of [1500, 2000, 2048]) await incrOf(s, w, 3)('x')
  t.equal(s.sizeBytes(), two, 'windows 1025…2048 ms share that class')
  await s.close()
})

t.test('dateClock: the store follows Date.now(), so node:test MockTimers drive it', async (t) => {
  const { mock } = await import('node:test')
  mock.timers.enable({ apis: ['Date'], now: 1_000_000 })
  try {
    const s = new GrudgeStore(undefined, { clock: dateClock, ticker: new FakeTicker() })
    const incr = incrOf(s, 1000, 1)
    await incr('a')
    t.equal((await incr('a')).ttl, 1000)
    mock.timers.tick(1000)
    t.equal((await incr('a')).current, 1, 'a mocked second later: admitted')
    await s.close()
  } finally {
    mock.timers.reset()
  }
})

t.test('a window or max out of range is a coded error through the callback', async (t) => {
  const s = new GrudgeStore(undefined, { clock: new FakeClock(0), ticker: new FakeTicker() })
  for (const [w, m] of [
    [0, 1],
    [1000, NaN],
    [1000, -1],
    [2 ** 65, 1],
  ] as const) {
    const err = await new Promise((resolve) => s.incr('a', (e) => resolve(e), w, m))
    t.match(err, { code: 'ERR_GRUDGE_OPTION_INVALID' }, `${w}, ${m}`)
    const readErr = await new Promise((resolve) => s.read('a', (e) => resolve(e), w, m))
    t.match(readErr, { code: 'ERR_GRUDGE_OPTION_INVALID' }, `read ${w}, ${m}`)
  }
  await s.close()
})

t.test('a store that answers with Promises, and one that fails: the callback gets the answer', async (t) => {
  const local = localStore()
  const asyncStore: StoreFactory = (spec) => {
    const s = local(spec)
    return {
      tryConsume: (k, c, l) => Promise.resolve(s.tryConsume(k, c, l)),
      add: (k, d) => Promise.resolve(s.add(k, d)),
      read: (k) => Promise.resolve(s.read(k)),
      sizeBytes: () => s.sizeBytes(),
      close: () => Promise.resolve(s.close()),
    }
  }
  const s = new GrudgeStore(
    { continueExceeding: true },
    { clock: new FakeClock(0), ticker: new FakeTicker(), store: asyncStore },
  )
  const incr = incrOf(s, 1000, 1)
  t.same(await incr('a'), { current: 1, ttl: 1000 })
  t.same(await incr('a'), { current: 2, ttl: 1000 })
  t.same(await new Promise((resolve) => s.read('a', (_e, r) => resolve(r), 1000, 1)), { current: 2, ttl: 1000 })
  await s.close()
  const failing: StoreFactory = (spec) => ({
    ...asyncStore(spec),
    tryConsume: () => Promise.resolve({ admitted: false, score: NaN, failure: 'closed' as const }),
    read: () => Promise.reject(new Error('down')),
  })
  const f = new GrudgeStore(undefined, { clock: new FakeClock(0), ticker: new FakeTicker(), store: failing })
  t.same(await incrOf(f, 1000, 1)('a'), { current: 2, ttl: 1000 }, 'closed: refused, retry in 1 s')
  const err = await new Promise((resolve) => f.read('a', (e) => resolve(e), 1000, 1))
  t.match(err, { message: 'down' }, 'a rejected read reaches the callback as an error')
  await f.close()
})
