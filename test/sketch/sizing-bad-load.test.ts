import t from 'tap'
import { Rotator, linear } from '../../src/index.js'
import {
  abuseFalseBlockRate,
  debtMeterCellsForLoad,
  fairnessFalseThrottleRate,
  scoreCellsForLoad,
  sketchFalsePositiveRate,
} from '../../src/sketch/sizing.js'
import { LoadMeter, type GenerationLoad } from '../../src/sketch/rotator-sizing.js'
import { Murmur3Hasher } from '../../src/hash/hasher.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

// Issue 14, "Bad input": NaN or negative loads never enter the model. Every entry point of
// the model refuses them with ERR_GRUDGE_SIZING_INVALID (never a NaN rate or a NaN size),
// and the load meter of a self-sized Rotator never hands one to its sizer.

const BAD = [NaN, -1, -1e-300, -Infinity, Infinity, '5' as unknown as number, null as unknown as number]
const shape = { levels: 4, cellsPerLevel: 1024 }
const debt = { requestsPerSecond: 100, rate: 1, burst: 10, cost: 1, maxDebt: 100, hotKeys: 0 }
const score = { eventsPerSecond: 10, weight: 1, lambdaPerSecond: 0.01, maxScore: 100, hotKeys: 0 }

t.test('every load field of the debt-meter model: NaN, negative or infinite is a coded error', async (t) => {
  for (const field of Object.keys(debt) as (keyof typeof debt)[]) {
    for (const v of BAD) {
      const load = { ...debt, [field]: v }
      t.throws(() => sketchFalsePositiveRate(shape, load), { code: 'ERR_GRUDGE_SIZING_INVALID' }, `rate ${field} ${v}`)
      t.throws(
        () => debtMeterCellsForLoad(load, { levels: 4 }),
        { code: 'ERR_GRUDGE_SIZING_INVALID' },
        `cells ${field} ${v}`,
      )
    }
  }
  // the shape too
  for (const v of [NaN, -1, 0, 1.5, Infinity]) {
    t.throws(() => sketchFalsePositiveRate({ levels: 4, cellsPerLevel: v }, debt), {
      code: 'ERR_GRUDGE_SIZING_INVALID',
    })
    t.throws(() => sketchFalsePositiveRate({ levels: v, cellsPerLevel: 64 }, debt), {
      code: 'ERR_GRUDGE_SIZING_INVALID',
    })
  }
})

t.test('every load field of the score models: NaN, negative or infinite is a coded error', async (t) => {
  for (const field of Object.keys(score) as (keyof typeof score)[]) {
    for (const v of BAD) {
      const load = { ...score, [field]: v }
      const code = { code: 'ERR_GRUDGE_SIZING_INVALID' }
      t.throws(() => abuseFalseBlockRate(shape, load, 10), code, `block ${field} ${v}`)
      t.throws(() => fairnessFalseThrottleRate(shape, load), code, `throttle ${field} ${v}`)
      t.throws(() => scoreCellsForLoad(load, { levels: 4, threshold: 10 }), code, `abuse cells ${field} ${v}`)
      t.throws(() => scoreCellsForLoad(load, { levels: 4 }), code, `fairness cells ${field} ${v}`)
    }
  }
  for (const v of [NaN, -1, 0, Infinity])
    t.throws(() => scoreCellsForLoad(score, { levels: 4, threshold: v }), { code: 'ERR_GRUDGE_SIZING_INVALID' })
})

t.test('the load meter: refunds, NaN deltas and a clock that steps back give finite loads ≥ 0', async (t) => {
  const h = new Murmur3Hasher(1)
  const m = new LoadMeter(1000)
  const base = { currentCellsPerLevel: 64, levels: 4, generations: 2, decay: linear(1), reason: 'check' as const }
  h.hashKey('a')
  m.record(h, -5) // a refund is not admitted cost
  m.record(h, NaN) // cannot reach the meter from a Rotator (the Sketch refuses it first); here it must not count
  m.record(h, 3)
  const w = m.windowLoad(2000, base)!
  t.equal(w.costPerSecond, 3, 'only the positive delta counts: 3 per 1 s')
  t.ok(w.distinctKeys > 0.9 && w.distinctKeys < 1.1, `one key (${w.distinctKeys})`)
  t.equal(m.windowLoad(1000, base), undefined, 'no time passed: no measurement')
  t.equal(m.windowLoad(500, base), undefined, 'the clock stepped back: no measurement (never a negative rate)')
  const life = m.lifeLoad(500, { ...base, reason: 'rotation' })
  t.ok(Number.isFinite(life.costPerSecond) && life.costPerSecond >= 0 && life.periodMs >= 1, 'life: finite and ≥ 0')
})

t.test(
  'a self-sized Rotator hands its sizer finite loads ≥ 0 only, with refunds and a clock that steps back',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const seen: GenerationLoad[] = []
    const r = new Rotator({
      sketch: { levels: 4, decay: linear(1), hi: 10 },
      periodMs: 10_000,
      clock,
      ticker,
      seed: 3,
      sizing: {
        maxCellsPerLevel: 4096,
        sizeNextGeneration: (load) => {
          seen.push(load)
          return debtMeterCellsForLoad({ requestsPerSecond: load.costPerSecond, rate: 1, burst: 10 }, { levels: 4 })
        },
      },
    })
    let now = 0
    for (let s = 0; s < 60; s++) {
      // one second: 50 writes, a refund, then (every 7 s) the clock steps back 3 s
      for (let i = 0; i < 50; i++) r.update(`k${s}-${i}`, 1)
      r.update(`k${s}-0`, -1)
      t.throws(() => r.update('x', NaN), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE' })
      now += s % 7 === 6 ? -3000 : 1000
      clock.set(now)
      ticker.tick()
    }
    t.ok(seen.length > 5, `${seen.length} decisions`)
    for (const l of seen) {
      if (!(
        Number.isFinite(l.costPerSecond) &&
        l.costPerSecond >= 0 &&
        Number.isFinite(l.distinctKeys) &&
        l.distinctKeys >= 0 &&
        l.periodMs > 0
      )) {
        t.fail(`a bad load reached the sizer: ${JSON.stringify(l)}`)
      }
    }
    t.equal(r.sizingLimitCount, 0, 'no decision was invalid')
    r.close()
  },
)

t.test('an unknown load field is a coded error naming the closest field, never read as absent', async (t) => {
  // a typo of requestsPerSecond read as absent would be a load of 0 and a rate of 0
  const typo = { ...debt, requestPerSecond: 3000 } as unknown as typeof debt
  for (const call of [() => sketchFalsePositiveRate(shape, typo), () => debtMeterCellsForLoad(typo, { levels: 4 })])
    t.throws(call, {
      code: 'ERR_GRUDGE_SIZING_INVALID',
      message: /^load\.requestPerSecond: unknown field \(did you mean "requestsPerSecond"\?\)/,
    })
  const extra = { ...score, halfLife: 10 } as unknown as typeof score
  for (const call of [
    () => abuseFalseBlockRate(shape, extra, 5),
    () => fairnessFalseThrottleRate(shape, extra),
    () => scoreCellsForLoad(extra, { levels: 4 }),
  ])
    t.throws(call, {
      code: 'ERR_GRUDGE_SIZING_INVALID',
      message: /^load\.halfLife: unknown field \(the load's fields: eventsPerSecond, /,
    })
})
