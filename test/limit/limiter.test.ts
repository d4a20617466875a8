import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import type { Decision } from '../../src/limit/decision.js'
import type { StoreFactory } from '../../src/limit/store.js'
import { localStore } from '../../src/limit/store.js'
import { longPeriodTicker } from '../../src/clock.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { LIMITER_OPTION_KEYS, type LimiterOptions } from '../../src/limit/limiter.js'
import { Telemetry } from '../../src/limit/telemetry.js'
import { sipHash } from '../../src/index.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('policies run abuse → fairness → limit; a denial does not charge later policies', async (t) => {
  const clock = new FakeClock(0)
  const l = new Limiter({
    clock,
    ticker: new FakeTicker(),
    random: () => 0.5,
    limit: { rate: 1, burst: 2 },
    abuse: { threshold: 1 },
  })
  l.record('k', { failed: false, abuseDelta: 1 })
  const d = l.decide('k') as Decision
  t.equal(d.policy, 'abuse')
  t.equal(d.limit, undefined, 'no debt figures: the meter was not consulted')
  const other = l.decide('k2') as Decision
  t.ok(other.admitted)
  t.equal(other.remaining, 1)
  t.equal(l.telemetry.stats().policies.limit.admitted, 1)
})

t.test('the in-process path is synchronous; a Promise-returning store gives a Promise', async (t) => {
  const clock = new FakeClock(0)
  const sync = new Limiter({ clock, ticker: new FakeTicker(), limit: { rate: 1, burst: 1 } })
  t.notOk(sync.decide('k') instanceof Promise)
  const base = localStore()
  const asyncStore: StoreFactory = (spec) => {
    const s = base(spec)
    return { ...s, tryConsume: async (k, c, lim) => s.tryConsume(k, c, lim) }
  }
  const l = new Limiter({ clock, ticker: new FakeTicker(), store: asyncStore, limit: { rate: 1, burst: 1 } })
  const p = l.decide('k')
  t.ok(p instanceof Promise)
  t.ok((await p).admitted)
  t.equal((await l.decide('k')).policy, 'limit')
})

t.test('a store that never answers in time: its own timeout decides open/closed (bounded wait)', async (t) => {
  // a store wrapper in the spirit of the Redis store: answer within timeoutMs or fall back
  const clock = new FakeClock(0)
  const slow =
    (mode: 'open' | 'closed'): StoreFactory =>
    () => ({
      tryConsume: () =>
        new Promise((resolve) =>
          setTimeout(() => resolve({ admitted: mode === 'open', score: NaN, failure: mode }), 20),
        ),
      add: () => 0,
      read: () => 0,
      sizeBytes: () => 0,
      close: () => undefined,
    })
  const open = new Limiter({ clock, ticker: new FakeTicker(), store: slow('open'), limit: { rate: 1, burst: 1 } })
  const o = await open.decide('k')
  t.ok(o.admitted)
  t.same([o.limit, o.remaining, o.resetMs], [undefined, undefined, undefined], 'fail-open: no invented figures')
  const closed = new Limiter({ clock, ticker: new FakeTicker(), store: slow('closed'), limit: { rate: 1, burst: 1 } })
  const c = await closed.decide('k')
  t.equal(c.admitted, false)
  t.equal(c.policy, 'store')
  t.equal(c.retryAfterMs, 1000)
})

t.test('longPeriodTicker runs a task by the clock, so periods beyond the timer range work', async (t) => {
  const clock = new FakeClock(0)
  const inner = new FakeTicker()
  let runs = 0
  const h = longPeriodTicker(inner, clock).every(100 * 86_400_000, () => runs++)
  t.same(inner.periods(), [3_600_000], 'the inner timer wakes at most hourly')
  clock.advance(99 * 86_400_000)
  inner.tick()
  t.equal(runs, 0)
  clock.advance(86_400_000)
  inner.tick()
  t.equal(runs, 1)
  clock.advance(250 * 86_400_000)
  inner.tick()
  t.equal(runs, 3, 'two more whole periods passed')
  h.cancel()
  t.equal(inner.size, 0)
})

t.test('invalid costs are errors, not silent admits', async (t) => {
  const l = new Limiter({ clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 2 } })
  t.throws(() => l.decide('k', 3), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /limit\.cost/ })
  t.throws(() => l.decide('k', NaN), { code: 'ERR_GRUDGE_OPTION_INVALID' })
})

t.test('a store that never answers or rejects: storeTimeoutMs bounds the wait and onStoreError decides', async (t) => {
  const clock = new FakeClock(0)
  const hanging: StoreFactory = () => ({
    tryConsume: () => new Promise(() => undefined), // never settles
    add: () => 0,
    read: () => 0,
    sizeBytes: () => 0,
    close: () => undefined,
  })
  const rejecting: StoreFactory = () => ({
    ...hanging(null as never),
    tryConsume: () => Promise.reject(new Error('ECONNRESET')),
  })
  const open = new Limiter({
    clock,
    ticker: new FakeTicker(),
    store: hanging,
    storeTimeoutMs: 20,
    limit: { rate: 1, burst: 1 },
  })
  const o = await open.decide('k')
  t.ok(o.admitted, 'fail-open after the timeout')
  t.same([o.limit, o.remaining, o.resetMs], [undefined, undefined, undefined], 'no invented figures')
  const closed = new Limiter({
    clock,
    ticker: new FakeTicker(),
    store: hanging,
    storeTimeoutMs: 20,
    onStoreError: 'closed',
    limit: { rate: 1, burst: 1 },
  })
  const c = await closed.decide('k')
  t.equal(c.policy, 'store')
  t.equal(c.retryAfterMs, 1000)
  const r = new Limiter({
    clock,
    ticker: new FakeTicker(),
    store: rejecting,
    onStoreError: 'closed',
    limit: { rate: 1, burst: 1 },
  })
  t.equal((await r.decide('k')).policy, 'store', 'a rejection follows onStoreError')
  t.throws(() => new Limiter({ storeTimeoutMs: 0 }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /storeTimeoutMs/ })
})

t.test('one synchronous decision reads the clock once (all its sketch operations share one instant)', async (t) => {
  let reads = 0
  const base = new FakeClock(5000)
  const counting = {
    now: () => {
      reads++
      return base.now()
    },
  }
  const l = new Limiter({
    clock: counting,
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 5 },
    abuse: {},
    fairness: {},
    random: () => 0.5,
  })
  reads = 0
  l.decide('k')
  t.equal(reads, 1)
  reads = 0
  l.record('k', { failed: true, abuseDelta: 1 })
  t.equal(reads, 1)
  t.equal(l.clock.now(), 5000, 'unpinned afterwards: reads the clock again')
})

t.test(
  'a denial reports one wait: decision.resetMs = retryAfterMs, whole seconds (Retry-After and t= are written from it)',
  async (t) => {
    const clock = new FakeClock(0)
    const l = new Limiter({ clock, ticker: new FakeTicker(), limit: { rate: 1, burst: 1 } })
    t.ok((l.decide('k') as Decision).admitted)
    clock.advance(500) // debt 0.5: the next request fits in 500 ms, announced as 1 s
    const d = l.decide('k') as Decision
    t.notOk(d.admitted)
    t.equal(d.retryAfterMs, 1000)
    t.equal(d.resetMs, 1000, 'the reset figure is the announced wait, not the raw 500 ms')
  },
)

t.test('an unknown option of the limiter or a policy throws naming its path; every option passes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  t.throws(
    () => new Limiter(typo<LimiterOptions>({ ticker, limt: { rate: 1, burst: 2 } })),
    unknownOption('limt', 'limit'),
  )
  t.throws(
    () => new Limiter({ ticker, limit: typo({ rate: 1, burts: 10 }) }),
    unknownOption('limit.burts', 'burst'),
    'the policy names the option by its path',
  )
  t.throws(() => new Limiter({ ticker, fairness: typo({ slowms: 10 }) }), unknownOption('fairness.slowms', 'slowMs'))
  t.throws(() => new Limiter({ ticker, abuse: typo({ treshold: 3 }) }), unknownOption('abuse.treshold', 'threshold'))
  t.throws(
    () => new Limiter({ ticker, limit: typo({ rate: 1, burst: 2, cots: 1 }) }, 'route.'),
    unknownOption('route.limit.cots', 'cost'),
    'under the caller’s prefix',
  )
  const all: Required<LimiterOptions> = {
    memory: '1MB',
    levels: 2,
    cellsPerLevel: 16,
    generations: 3,
    periodMs: 60_000,
    hasher: sipHash(),
    clock,
    ticker,
    store: localStore(),
    name: 'api',
    limit: { rate: 1, burst: 2, cost: 1, maxDebt: 20, name: 'per-ip' },
    fairness: { failureDelta: 0.2, successDelta: 0.01, lambdaPerSecond: 0.1, slowMs: 1000 },
    abuse: { weights: { '404': 1 }, threshold: 5, halfLifeMs: 1000, maxScore: 10 },
    random: () => 0.5,
    telemetry: new Telemetry({ clock }),
    storeTimeoutMs: 100,
    onStoreError: 'closed',
  }
  t.same(Object.keys(all).sort(), [...LIMITER_OPTION_KEYS].sort(), 'the test names every option')
  const l = new Limiter(all)
  t.ok((l.decide('k') as Decision).admitted)
  await l.close()
})
