// The 8-byte cell (src/sketch/cells.ts, spec/sketch.md §2): a Float32 score rounded up when
// stored and a Uint32 time in whole ms. References: IEEE 754 rounding through DataView
// (fixtures/f32.ts), the decay of spec/sketch.md §4 in float64, and per-key exact scores.
import t from 'tap'
import fc from 'fast-check'
import { F32_MAX, cellBounds, roundUpF32 } from '../../src/sketch/cells.js'
import { exponential, linear } from '../../src/sketch/decay.js'
import { Sketch } from '../../src/sketch/sketch.js'
import { FakeClock } from '../../src/testing/index.js'
import { f32Up } from './fixtures/f32.js'
import { mulberry32 } from '../fixtures/mulberry32.js'

t.test('a stored score is the smallest Float32 at or above it', async (t) => {
  fc.assert(
    fc.property(fc.double({ min: -F32_MAX, max: F32_MAX, noNaN: true }), (x) => {
      const up = roundUpF32(x)
      return up >= x && up === f32Up(x) && Math.fround(up) === up
    }),
    { seed: 18, numRuns: 20_000 },
  )
  t.equal(roundUpF32(0.1), 0.10000000149011612, '0.1 → the Float32 above it')
  t.equal(roundUpF32(-0.1), -0.09999999403953552, '−0.1 → the Float32 above it (toward 0)')
  t.equal(roundUpF32(1e-50), 2 ** -149, 'below the smallest subnormal: the smallest subnormal')
  t.equal(roundUpF32(5), 5, 'a Float32 value stays')
  t.equal(roundUpF32(F32_MAX), F32_MAX, 'the largest Float32 stays')
  t.same(cellBounds(-0.1, 0.1), { lo: -0.09999999403953552, hi: 0.09999999403953552 }, 'bounds toward 0')
  t.same(cellBounds(-Number.MAX_VALUE, Number.MAX_VALUE), { lo: -F32_MAX, hi: F32_MAX }, 'saturation')
})

t.test('a score at the default hi saturates at the largest Float32, never Infinity', async (t) => {
  const s = new Sketch({ levels: 2, cellsPerLevel: 8, seed: 1, clock: new FakeClock(0) })
  s.update('k', 1e300)
  t.equal(s.estimate('k'), F32_MAX)
  s.update('k', 1e300)
  t.equal(s.estimate('k'), F32_MAX)
})

t.test("'min' stays one-sided: never below any key's exact score, with collisions, both decays", async (t) => {
  for (const decay of [exponential(0.05), linear(2)]) {
    const clock = new FakeClock(1_700_000_000_000)
    // 2 × 32 cells for 200 keys: most cells are shared, so estimates run above the exact scores
    const s = new Sketch({ levels: 2, cellsPerLevel: 32, decay, hi: 1e6, seed: 3, clock })
    const exact = new Map<string, { v: number; at: number }>()
    const rnd = mulberry32(18)
    const r = decay.ratePerSecond / 1000
    const truth = (k: string): number => {
      const e = exact.get(k)
      if (e === undefined) return 0
      const dt = clock.now() - e.at
      return decay.kind === 'exponential' ? e.v * Math.exp(-r * dt) : Math.max(0, e.v - r * dt)
    }
    let below = 0
    let checks = 0
    for (let i = 0; i < 20_000; i++) {
      clock.advance(Math.floor(rnd() * 50))
      const k = `key${Math.floor(rnd() * 200)}`
      if (rnd() < 0.5) {
        const d = rnd() * 10
        const v = truth(k) + d
        exact.set(k, { v, at: clock.now() })
        s.update(k, d)
      } else {
        checks++
        if (s.estimate(k) < truth(k) * (1 - 1e-12)) below++
      }
    }
    t.equal(below, 0, `${decay.kind}: ${checks} estimates, none below the exact score`)
  }
})

t.test('a cell read every ms under a slow decay decays as the exact score does: a read stores nothing', async (t) => {
  // exponential: a 10 h half-life decays a score of 100 by 1.9e-6 per ms, under its ulp (7.6e-6)
  const clock = new FakeClock(0)
  const lambda = Math.LN2 / 36_000
  const e = new Sketch({ levels: 2, cellsPerLevel: 16, decay: exponential(lambda), hi: 1e6, seed: 4, clock })
  // linear: 0.1 per second drains 1e-4 per ms, under the ulp of 3,000 (2.4e-4)
  const l = new Sketch({ levels: 2, cellsPerLevel: 16, decay: linear(0.1), hi: 1e6, seed: 4, clock })
  e.update('k', 100)
  l.update('k', 3000)
  for (let ms = 1; ms <= 60_000; ms++) {
    clock.set(ms)
    e.estimate('k')
    l.tryUpdate('k', 1, 0) // refused: a read, as a denied request's check is
  }
  // a read stores nothing (spec/sketch.md §2): after 60,000 reads each one still decays the
  // stored 100 and 3,000 over the whole 60 s in float64, to the exact score (float64 rounding:
  // 1e-12 relative). A read that stored its rounded-up decay each ms would cancel it: both
  // would still read 100 and 3,000
  const close = (got: number, exact: number, what: string): void => {
    t.ok(Math.abs(got - exact) <= 1e-12 * exact, `${what}: ${got} ≈ ${exact}`)
  }
  close(e.estimate('k'), 100 * Math.exp(-lambda * 60), 'exponential after 60,000 reads')
  close(l.estimate('k'), 3000 - 6, 'linear after 60,000 reads')
})
