import t from 'tap'
import Fastify from 'fastify'
import rateLimit from '@fastify/rate-limit'
import { grudgeStore, GrudgeStore } from '../../plugins/fastify-rate-limit-store.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

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
