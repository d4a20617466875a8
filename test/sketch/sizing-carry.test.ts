import t from 'tap'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'
import { carryForwardGrid, carryForwardRate } from '../../src/sketch/sizing-carry.js'

// The carry-forward model of spec/sizing.md §2.5 (src/sketch/sizing-carry.ts).

t.test('at burst = cost the carry lifts nothing: the M/D/1 utilization', async (t) => {
  // a floor is the key's min + cost with min ≤ burst − cost = 0, so a younger cell becomes
  // max(W + c, c) = W + c: the plain queue, whose busy share is its admitted load (Erlang:
  // P(W > 0) = utilization). A fresh key is refused iff all L cells are busy, p = ρ(1 − p^L)
  // per cell (refused requests add nothing), rate p^L.
  for (const [rho, L] of [
    [0.05, 2],
    [0.2, 3],
  ]) {
    let p = rho
    for (let k = 0; k < 50; k++) p = rho * (1 - Math.pow(p, L))
    const r = carryForwardRate(rho, L, 0, 10, 2, 10, 0)
    t.ok(Math.abs(r / Math.pow(p, L) - 1) < 0.03, `ρ ${rho} L ${L}: ${r} vs ${Math.pow(p, L)}`)
  }
})

t.test('the carry raises the rate where the margin is several jumps (ρ 0.9, burst 10)', async (t) => {
  const load = { requestsPerSecond: 0.9 * 1024, rate: 1, burst: 10 }
  const shape = { levels: 2, cellsPerLevel: 1024 }
  const stationary = sketchFalsePositiveRate(shape, load)
  const carried = sketchFalsePositiveRate(shape, { ...load, generations: 2 })
  // spec/sizing.md §6: the DebtMeter measured 2.6e-2 here, the stationary model 7.5e-3
  t.ok(carried > 2 * stationary, `carry ${carried} vs stationary ${stationary}`)
  t.ok(carried > 1.3e-2 && carried < 5.2e-2, `within 2× of the measured 2.6e-2: ${carried}`)
})

t.test('hot keys only add refusals', async (t) => {
  const a = carryForwardRate(0.5, 3, 2, 30, 2, 30, 0)
  const b = carryForwardRate(0.5, 3, 2, 30, 2, 30, 0.1)
  t.ok(b > a, `${b} > ${a}`)
  t.ok(carryForwardRate(0.5, 3, 2, 30, 2, 30, 1) > 0.99, 'every cell hot: every request refused')
})

t.test('the grid shrinks with the figures and the jump is coarsened past it (bounded work)', async (t) => {
  t.equal(carryForwardGrid(0.5, 10, 2, 10), 8)
  t.ok(carryForwardGrid(0.9, 100, 2, 100) <= 2)
  t.equal(carryForwardGrid(0.9, 1e10, 2, 1e10), 0)
  // a margin of 1e9 jumps, a long period and 16 generations still answer (a probability)
  for (const r of [
    carryForwardRate(0.9, 4, 1e9 - 1, 1e10, 2, 1e10, 0),
    carryForwardRate(0.9, 4, 9, 100, 2, 3.6e6, 0),
    carryForwardRate(0.9, 4, 9, 100, 16, 100 / 15, 0),
  ])
    t.ok(r >= 0 && r <= 1, `${r}`)
})

t.test('generations and periodMs are checked', async (t) => {
  const shape = { levels: 2, cellsPerLevel: 64 }
  const load = { requestsPerSecond: 10, rate: 1, burst: 5 }
  for (const generations of [1, 2.5, 65536, NaN, '2'])
    t.throws(() => sketchFalsePositiveRate(shape, { ...load, generations: generations as number }), {
      code: 'ERR_GRUDGE_SIZING_INVALID',
    })
  for (const periodMs of [0, -1, NaN, Infinity])
    t.throws(() => sketchFalsePositiveRate(shape, { ...load, generations: 2, periodMs }), {
      code: 'ERR_GRUDGE_SIZING_INVALID',
    })
  t.throws(() => sketchFalsePositiveRate(shape, { ...load, periodMs: 1000 }), { code: 'ERR_GRUDGE_SIZING_INVALID' })
  // the default period is the amnesty guard's shortest (maxDebt / rate / (N − 1))
  t.equal(
    sketchFalsePositiveRate(shape, { ...load, generations: 2 }),
    sketchFalsePositiveRate(shape, { ...load, generations: 2, periodMs: 50_000 }),
  )
})

/** stats()'s figure for issue 14's fresh clients on 4 × 512 at ρ 0.5 (burst 10), B requests per key lumped. */
const issue14At = (B: number): number =>
  sketchFalsePositiveRate(
    { levels: 4, cellsPerLevel: 512 },
    {
      requestsPerSecond: 255,
      rate: 1,
      burst: 10,
      maxDebt: 100,
      generations: 2,
      requestsPerKey: B,
      requestSpacingMs: 0,
      firstRequestOnly: true,
    },
  )

t.test('continuous in the margin: between grid points the rate is interpolated, not stepped', async (t) => {
  // the margin 9 / B jumps crosses 3 at B = 3, on the grid the work budget allows here (2 cells
  // per jump with the lower margins' reads: a step of half a jump)
  const at = issue14At
  let prev = at(2.9)
  let worst = 1
  for (let B = 2.905; B <= 3.1 + 1e-9; B += 0.005) {
    const r = at(B)
    // a larger batch is a smaller margin in its jumps: never fewer refusals
    if (!(r >= prev * (1 - 1e-9))) t.fail(`B ${B.toFixed(3)}: ${r} < ${prev} at the step before`)
    worst = Math.max(worst, r / prev)
    prev = r
  }
  // a step of 0.005 in B is 0.17 % of the margin: the tail's slope there (about 13× per half jump,
  // 2.2e-5 / 1.68e-6 between the grid points 2 and 3) moves it by a few per cent, not 12×
  t.ok(worst < 1.1, `the largest ratio between neighbours 0.005 apart: ${worst.toFixed(4)}`)
  // on a grid point nothing changes: the margin 3 is walked once, and just beside it reads the same
  const m = 3
  const onGrid = carryForwardRate(0.5, 4, m, 100 / 3, 2, 100 / 3, 0)
  const beside = carryForwardRate(0.5, 4, m - 1e-6, 100 / 3, 2, 100 / 3, 0)
  t.ok(Math.abs(beside / onGrid - 1) < 1e-4, `margin 3: ${onGrid}, 3 − 1e-6: ${beside}`)
})

// Review h4 of f0edddd (the interpolation between the carry walk's grid points). The
// interpolation made the rate continuous in the margin on one grid, but the grid itself is chosen
// from the work budget, which depends on the ceiling and the period in jump units (maxDebt / B,
// period × rate / B): as B crosses a value where ⌈top / w⌉ tips the work over WORK_BUDGET, the
// walk switches between 2 and 4 cells per jump and the rate jumps. At issue 14's fresh clients on
// 4 × 512, ρ 0.5, burst 10, B lumped (what stats() states) it halves between B = 3.100 and
// 3.105, a step the HyperLogLog's noise on B (a few per cent) crosses from run to run, the
// mechanism the interpolation was meant to remove. Properties only (no pasted figures): a larger
// batch is never fewer refusals, and neighbours 0.005 apart in B move by less than 1.1×, the
// bound the test above holds between B = 2.9 and 3.1.

t.test("continuous in B across the walk's grid switch (ρ 0.5, 4 × 512, burst 10, B lumped)", async (t) => {
  const at = issue14At
  let prev = at(3.05)
  let worst = 1
  let drops = 0
  for (let i = 1; i <= 20; i++) {
    const B = 3.05 + i * 0.005
    const r = at(B)
    if (!(r >= prev * (1 - 1e-9))) drops++
    worst = Math.max(worst, r / prev, prev / r)
    prev = r
  }
  const todo = { todo: 'the grid switch is not smoothed (review h4)' }
  t.equal(drops, 0, 'no step of B down in the rate', todo)
  t.ok(worst < 1.1, `the largest ratio between neighbours 0.005 apart: ${worst.toFixed(3)}`, todo)
})
