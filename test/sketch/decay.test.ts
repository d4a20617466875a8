import t from 'tap'
import fc from 'fast-check'
import { applyDecay, exponential, halfLife, linear, none, checkDecay } from '../../src/sketch/decay.js'
import { Sketch } from '../../src/sketch/sketch.js'
import { FakeClock } from '../../src/testing/index.js'

t.test('exponential(0.1): 1.0 over 100 ms is e^(−0.01) = 0.9900498337 (±1e-9)', async (t) => {
  t.ok(Math.abs(applyDecay(1, exponential(0.1), 100) - 0.9900498337) < 1e-9)
  // half-life: ln 2 / λ seconds
  t.ok(Math.abs(applyDecay(8, halfLife(2000), 2000) - 4) < 1e-12, 'halfLife(2000 ms) halves in 2 s')
  t.ok(Math.abs(applyDecay(8, halfLife(2000), 6000) - 1) < 1e-12, 'and eighths in 6 s')
})

t.test('linear moves toward 0 by rate·Δt and never crosses it', async (t) => {
  const d = linear(10) // 0.01 per ms
  const rows: Array<[number, number, number]> = [
    // [score, elapsedMs, expected]
    [10, 500, 5],
    [10, 1000, 0],
    [10, 5000, 0],
    [-10, 500, -5],
    [-10, 5000, 0],
    [0, 5000, 0],
    [10, 0, 10],
    [10, -100, 10], // time going backwards: elapsed counts as 0
    [10, NaN, 10],
  ]
  for (const [score, dt, expected] of rows) t.equal(applyDecay(score, d, dt), expected, `${score} over ${dt} ms`)
  t.equal(applyDecay(7, none(), 1e9), 7, 'none() keeps the score')
  t.equal(applyDecay(7, exponential(1), -5), 7, 'exponential ignores negative elapsed time')
})

t.test('decay factories validate and freeze', async (t) => {
  for (const bad of [0, -1, NaN, Infinity]) {
    t.throws(
      () => exponential(bad),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /lambdaPerSecond/ },
      `exponential(${bad})`,
    )
    t.throws(() => linear(bad), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /ratePerSecond/ }, `linear(${bad})`)
    t.throws(() => halfLife(bad), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /halfLifeMs/ }, `halfLife(${bad})`)
  }
  t.ok(Object.isFrozen(exponential(1)) && Object.isFrozen(linear(1)) && Object.isFrozen(none()))
  t.throws(() => checkDecay('fast'), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /option "decay"/ })
  t.equal(checkDecay(undefined).kind, 'none', 'absent decay is none()')
})

const lambda = fc.double({ min: 1e-3, max: 10, noNaN: true })
const rate = fc.double({ min: 1e-3, max: 1000, noNaN: true })
const dt = fc.double({ min: 0, max: 1e6, noNaN: true })
const score = fc.double({ min: -1e6, max: 1e6, noNaN: true })
const close = (a: number, b: number, rel: number, abs: number) =>
  Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b)) + abs

t.test('decay composition law: decaying over t1 then t2 equals decaying over t1 + t2', async (t) => {
  fc.assert(
    fc.property(lambda, score, dt, dt, (l, s, t1, t2) => {
      const d = exponential(l)
      // 1e-300 absolute: near the subnormal range a relative bound means nothing
      return close(applyDecay(applyDecay(s, d, t1), d, t2), applyDecay(s, d, t1 + t2), 1e-12, 1e-300)
    }),
    { seed: 1, numRuns: 2000 },
  )
  fc.assert(
    fc.property(rate, score, dt, dt, (r, s, t1, t2) => {
      const d = linear(r)
      return close(applyDecay(applyDecay(s, d, t1), d, t2), applyDecay(s, d, t1 + t2), 1e-12, 1e-9)
    }),
    { seed: 2, numRuns: 2000 },
  )
  t.pass('2000 exponential (relative 1e-12) and 2000 linear (1e-12 relative + 1e-9 absolute) cases')
})

t.test('the same law holds for a sketch cell read in between (lazy decay)', async (t) => {
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.double({ min: 0.01, max: 5, noNaN: true }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      (exp, r, t1, t2) => {
        const decay = exp ? exponential(r) : linear(r)
        const c1 = new FakeClock(0)
        const c2 = new FakeClock(0)
        const a = new Sketch({ seed: 5, decay, hi: 1e6, lo: -1e6, clock: c1 })
        const b = new Sketch({ seed: 5, decay, hi: 1e6, lo: -1e6, clock: c2 })
        a.update('k', 1000)
        b.update('k', 1000)
        c1.advance(t1)
        a.estimate('k') // writes the decayed score back
        c1.advance(t2)
        c2.advance(t1 + t2)
        return close(a.estimate('k'), b.estimate('k'), 1e-12, 1e-9)
      },
    ),
    { seed: 3, numRuns: 500 },
  )
  t.pass('500 cases, exponential and linear')
})
