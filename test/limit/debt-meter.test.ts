import t from 'tap'
import { DebtMeter, type DebtVerdict } from '../../src/limit/debt-meter.js'
import { resolveSketchOptions } from '../../src/limit/options.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { sipHash } from '../../src/index.js'
import { DEBT_METER_OPTION_KEYS, type DebtMeterOptions } from '../../src/limit/debt-meter.js'
import { typo, unknownOption } from '../unknown-option.js'
import { localStore, type StoreFactory } from '../../src/limit/store.js'

function meter(
  opts: { rate: number; burst: number; maxDebt?: number; cost?: number },
  sketch: Record<string, unknown> = {},
) {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const m = new DebtMeter(opts, resolveSketchOptions({ clock, ticker, hasher: sipHash(7), ...sketch }), 'test')
  return { m, clock, ticker, consume: (k: string, c?: number) => m.consume(k, c) as DebtVerdict }
}

t.test('step table: a token bucket of burst 3 draining 1/s (the GCRA reading of golang.org/x/time/rate)', async (t) => {
  const { clock, consume } = meter({ rate: 1, burst: 3 })
  const rows: { nowMs: number; cost?: number; admitted: boolean; remaining: number; retryAfterMs: number }[] = [
    { nowMs: 0, admitted: true, remaining: 2, retryAfterMs: 0 },
    { nowMs: 0, admitted: true, remaining: 1, retryAfterMs: 0 },
    { nowMs: 0, admitted: true, remaining: 0, retryAfterMs: 0 },
    { nowMs: 0, admitted: false, remaining: 0, retryAfterMs: 1000 },
    { nowMs: 500, admitted: false, remaining: 0, retryAfterMs: 500 },
    { nowMs: 1000, admitted: true, remaining: 0, retryAfterMs: 0 },
    { nowMs: 3000, cost: 3, admitted: false, remaining: 2, retryAfterMs: 1000 },
    { nowMs: 4000, cost: 3, admitted: true, remaining: 0, retryAfterMs: 0 },
    { nowMs: 3500, admitted: false, remaining: 0, retryAfterMs: 1000 }, // clock gone back: nothing drains
    { nowMs: 100_000, admitted: true, remaining: 2, retryAfterMs: 0 },
  ]
  for (const row of rows) {
    clock.set(row.nowMs)
    const v = consume('k', row.cost)
    t.equal(v.admitted, row.admitted, `t=${row.nowMs} admitted`)
    t.equal(v.remaining, row.remaining, `t=${row.nowMs} remaining`)
    t.equal(v.retryAfterMs, row.retryAfterMs, `t=${row.nowMs} retryAfterMs`)
  }
})

t.test(
  'defaults: maxDebt 10 × burst; the default period satisfies (N − 1)·periodMs ≥ maxDebt / rate · 1000',
  async (t) => {
    for (const [rate, burst, generations] of [
      [2, 5, 3],
      [0.001, 1, 2],
      [1000, 10, 4],
      [1 / 86_400, 7, 3],
    ] as const) {
      const { m } = meter({ rate, burst }, { generations })
      t.equal(m.maxDebt, 10 * burst)
      t.ok((generations - 1) * m.periodMs >= (m.maxDebt / rate) * 1000, `rate ${rate} burst ${burst} N ${generations}`)
    }
    t.throws(() => meter({ rate: 2, burst: 5 }, { generations: 3, periodMs: 12_499 }), {
      code: 'ERR_GRUDGE_ROTATOR_AMNESTY',
    })
    t.doesNotThrow(() => meter({ rate: 2, burst: 5 }, { generations: 3, periodMs: 12_500 }))
    t.throws(() => meter({ rate: 1, burst: 2, cost: 3 }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /limit\.cost/ })
    // burst below the default cost of 1: the option that was set is burst, so the message names it
    t.throws(() => meter({ rate: 1, burst: 0.5 }), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /^option "limit\.burst": expected a number ≥ 1 .*received 0\.5$/,
    })
    t.doesNotThrow(() => meter({ rate: 1, burst: 0.5, cost: 0.5 }), 'a fractional burst with a cost ≤ burst is fine')
  },
)

t.test(
  'rotation: a key pinned at its limit across rotations is admitted exactly as by an exact token bucket (carry-forward)',
  async (t) => {
    const { m, clock, ticker, consume } = meter({ rate: 1, burst: 2 })
    consume('k')
    consume('k')
    t.notOk(consume('k').admitted)
    // The bound, from spec/rotator.md (Carry-forward, "Soundness"): for a single key without
    // collisions G₀ equals the exact bucket E, so rotations forgive nothing. E here: debt 2
    // (= burst) after t = 0; each second drains rate · 1 s = 1, so of the two requests sent
    // per second the first brings the debt back to 2 and the second would take it to 3 > burst.
    // Over 200 s that is exactly 200 admitted, whatever the number of rotations (before the
    // carry-forward fix a promoted generation gave back up to one burst per rotation).
    let admitted = 0
    let rotations = 0
    for (let s = 1; s <= 200; s++) {
      clock.advance(1000)
      if (s % Math.ceil(m.periodMs / 1000) === 0) {
        ticker.tick()
        rotations++
      }
      if (consume('k').admitted) admitted++
      if (consume('k').admitted) admitted++
    }
    t.ok(rotations >= 5, `the run crosses rotations: ${rotations}`)
    t.equal(admitted, 200, 'one admitted per second of drain: 200 s × 1/s')
  },
)

t.test(
  'key-rotation flood ceiling (L=4, M=1000, rate 2, burst 5): hi = 10·burst holds it to about M·rate; hi = burst lets ~1.6× through',
  async (t) => {
    const steady = (maxDebt: number): number => {
      const { clock, consume } = meter({ rate: 2, burst: 5, maxDebt }, { levels: 4, cellsPerLevel: 1000 })
      let admitted = 0
      for (let s = 0; s < 30; s++) {
        for (let i = 0; i < 5000; i++) {
          clock.advance(0.2) // 5,000 requests per simulated second, each under a fresh key
          if (consume(`${s}.${i}`).admitted && s >= 10) admitted++
        }
      }
      return admitted / 20 // per second over the steady 20 s
    }
    const deep = steady(50)
    const shallow = steady(5)
    t.ok(deep <= 1.05 * 1000 * 2, `hi = 50: ${deep}/s ≤ 1.05 × M·rate = 2100/s`)
    t.ok(
      deep >= 0.9 * 1000 * 2,
      `hi = 50: ${deep}/s ≥ 0.9 × M·rate (the drain of M cells is the ceiling, not far below it)`,
    )
    t.ok(shallow >= 1.4 * deep, `hi = burst: ${shallow}/s ≥ 1.4 × ${deep}/s`)
  },
)

t.test('10^6 fresh keys do not evict a blocked key (an LRU of 10^5 entries would)', async (t) => {
  const { clock, consume } = meter({ rate: 0.01, burst: 5 }, { levels: 4, cellsPerLevel: 4096, generations: 2 })
  for (let i = 0; i < 5; i++) consume('victim-of-its-own-flood')
  t.notOk(consume('victim-of-its-own-flood').admitted, 'blocked')
  // the attacker: 10^6 fresh keys over 10 simulated seconds
  for (let i = 0; i < 1_000_000; i++) {
    if ((i & 0xffff) === 0) clock.advance(650)
    consume('a' + i)
  }
  t.notOk(consume('victim-of-its-own-flood').admitted, 'still blocked: its cells only ever gained debt')
  // contrast: an LRU map bounded at 10^5 entries has forgotten it
  // (every key is touched once, so least recently used = oldest inserted)
  const lru = new Map<string, number>([['victim-of-its-own-flood', 5]])
  const order = ['victim-of-its-own-flood']
  let head = 0
  for (let i = 0; i < 1_000_000; i++) {
    lru.set('a' + i, 1)
    order.push('a' + i)
    if (lru.size > 100_000) lru.delete(order[head++])
  }
  t.notOk(lru.has('victim-of-its-own-flood'), 'the LRU evicted the blocked key')
})

t.test('fresh keys read as a full bucket', async (t) => {
  const { consume } = meter({ rate: 1, burst: 4 })
  const v = consume('never-seen')
  t.ok(v.admitted)
  t.equal(v.remaining, 3)
})

t.test('an unknown option throws naming its path and the closest option; every option passes', async (t) => {
  const sketch = resolveSketchOptions({ ticker: new FakeTicker() })
  t.throws(
    () => new DebtMeter(typo<DebtMeterOptions>({ rate: 1, burst: 2, maxdebt: 20 }), sketch, 'x'),
    unknownOption('limit.maxdebt', 'maxDebt'),
  )
  t.throws(
    () => new DebtMeter(typo<DebtMeterOptions>({ rate: 1, burst: 2, burts: 10 }), sketch, 'x', 'policy.'),
    unknownOption('policy.burts', 'burst'),
  )
  const all: Required<DebtMeterOptions> = { rate: 1, burst: 2, cost: 1, maxDebt: 20, name: 'api' }
  t.same(Object.keys(all).sort(), [...DEBT_METER_OPTION_KEYS].sort(), 'the test names every option')
  await new DebtMeter(all, sketch, 'x').close()
})

t.test(
  'charge, straight on the local Rotator, answers as consume does through tryConsume; a replaced tryConsume is used',
  async (t) => {
    // two meters under the same seed and clock: one charged (the limiter's path), one consumed
    const clock = new FakeClock(0)
    const sketch = resolveSketchOptions({ clock, ticker: new FakeTicker(), hasher: sipHash(7) })
    const a = new DebtMeter({ rate: 2, burst: 3 }, { ...sketch, store: seeded(1) }, 'a')
    const b = new DebtMeter({ rate: 2, burst: 3 }, { ...sketch, store: seeded(1) }, 'b')
    const steps = [0, 0, 0, 0, 0, 250, 400, 400, 2000, 2100, 2100, 2100, 2100]
    for (const nowMs of steps) {
      clock.set(nowMs)
      const charged = { ...(a.charge('k', nowMs === 2100 ? 1.5 : undefined) as DebtVerdict) }
      const consumed = b.consume('k', nowMs === 2100 ? 1.5 : undefined) as DebtVerdict
      t.same(charged, consumed, `at ${nowMs} ms`)
    }
    // a store built by localStore() whose tryConsume was replaced in place keeps its own path
    let asked = 0
    const replaced = new DebtMeter(
      { rate: 1, burst: 1 },
      {
        ...sketch,
        store: (spec) => {
          const s = localStore()(spec)
          const own = s.tryConsume.bind(s)
          s.tryConsume = (k, c, l) => {
            asked++
            return own(k, c, l)
          }
          return s
        },
      },
      'c',
    )
    t.equal((replaced.charge('k') as DebtVerdict).admitted, true)
    t.equal((replaced.charge('k') as DebtVerdict).admitted, false)
    t.equal(asked, 2, 'the replaced tryConsume decided both')
  },
)

/** A local store whose sketches share one master seed, so two meters place keys alike. */
function seeded(seed: number): StoreFactory {
  const local = localStore()
  return (spec) => local({ ...spec, sketch: { ...spec.sketch, seed } })
}
