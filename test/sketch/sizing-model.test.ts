import t from 'tap'
import { agrees, simulate } from '../../scripts/sizing-sim.js'

// The debt-meter model of spec/sizing.md §2 against a real Sketch (linear decay, min
// aggregator, tryUpdate) fed Poisson fresh keys on a fake clock, at small sizes. Each point
// must agree within 2× (or 1e-6 absolute), as the full sweep of scripts/sizing-sim.ts does.
// The points are chosen so that the refusals counted are many (≥ 100): at M = 128 the
// statistical error is then ≤ 10 % (1σ), far inside 2×.
const POINTS = [
  { rho: 0.2, levels: 2, burst: 1 },
  { rho: 0.5, levels: 3, burst: 1 },
  { rho: 0.9, levels: 4, burst: 3 },
  { rho: 1.5, levels: 5, burst: 10 },
]

t.test('predicted false-reject rates agree with a real Sketch', async (t) => {
  let seed = 11
  for (const p of POINTS) {
    const r = simulate({ ...p, cellsPerLevel: 128, measureS: 300, seed: seed++, engine: 'sketch' })
    t.ok(r.refused >= 100, `enough refusals to measure (${r.refused})`)
    t.ok(agrees(r), `ρ ${p.rho} L ${p.levels} burst ${p.burst}: measured ${r.measured} predicted ${r.predicted}`)
  }
})

t.test('and with the DebtMeter (a Rotator with carry-forward) where the carry is small', async (t) => {
  const r = simulate({ rho: 0.5, levels: 3, burst: 1, cellsPerLevel: 128, measureS: 300, seed: 3, engine: 'meter' })
  t.ok(agrees(r), `measured ${r.measured} predicted ${r.predicted}`)
})

t.test('agrees() is the stated tolerance', async (t) => {
  t.ok(agrees({ predicted: 1e-3, measured: 1.9e-3 }))
  t.notOk(agrees({ predicted: 1e-3, measured: 2.1e-3 }))
  t.ok(agrees({ predicted: 0, measured: 9e-7 }))
  t.notOk(agrees({ predicted: 0, measured: 2e-6 }))
})
