import t from 'tap'
import { buildLimiter, parseLimiterOptions } from '../../src/http/options.js'
import type { StoreFactory } from '../../src/limit/store.js'
import { localStore } from '../../src/limit/store.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('parseLimiterOptions is pure: it checks every policy without opening a store or a timer', async (t) => {
  let opened = 0
  const base = localStore()
  const counting: StoreFactory = (spec) => {
    opened++
    return base(spec)
  }
  const ticker = new FakeTicker()
  const clock = new FakeClock(0)
  const c = parseLimiterOptions({
    clock,
    ticker,
    store: counting,
    limit: { rate: 1, burst: 2, cost: () => 1 },
    fairness: { status: 429, isFailure: () => false },
    abuse: { threshold: 3, score: () => 1 },
  })
  t.equal(opened, 0, 'no store opened')
  t.equal(ticker.size, 0, 'no timer started')
  t.ok(Object.isFrozen(c) && Object.isFrozen(c.limiter) && Object.isFrozen(c.limiter.limit))
  t.equal(c.fairnessStatus, 429)
  t.same(c.headers, { ietf: true, draft: 'draft-10', legacy: false, retryAfter: true })
  t.equal(c.limiter.limit && c.limiter.limit.cost, undefined, 'a cost function is the adapter’s, not the core’s')
  t.notOk(c.limiter.fairness && 'status' in c.limiter.fairness, 'nor is fairness.status')
  const l = buildLimiter(c, 'x', undefined)
  t.equal(opened, 3, 'building the limiter opens one store per policy')
  t.equal(l.name, 'x')
  await l.close()
})

t.test('parseLimiterOptions throws the core policies’ errors at parse time, named by path', async (t) => {
  const ticker = new FakeTicker()
  t.throws(() => parseLimiterOptions({ ticker, limit: { rate: 0, burst: 1 } }, 'config.grudge.'), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"config\.grudge\.limit\.rate"/,
  })
  t.throws(() => parseLimiterOptions({ ticker, limit: { rate: 1, burst: 10 }, periodMs: 10 }), {
    code: 'ERR_GRUDGE_ROTATOR_AMNESTY',
  })
  t.throws(() => parseLimiterOptions({ ticker, fairness: { status: 500 as never } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"fairness\.status"/,
  })
  t.throws(() => parseLimiterOptions({ ticker, abuse: { maxScore: 1, threshold: 2 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"abuse\.maxScore"/,
  })
  t.throws(() => parseLimiterOptions({ ticker, storeTimeoutMs: -1 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"storeTimeoutMs"/,
  })
  t.same(parseLimiterOptions({ ticker, headers: false }).headers, false)
  t.same(parseLimiterOptions({ ticker, legacyHeaders: true }).headers, {
    ietf: true,
    draft: 'draft-10',
    legacy: true,
    retryAfter: true,
  })
})
