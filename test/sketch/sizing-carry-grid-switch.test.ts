import t from 'tap'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'

// Review h4 of f0edddd (the interpolation between the carry walk's grid points). The
// interpolation made the rate continuous in the margin on one grid, but the grid itself is chosen
// from the work budget, which depends on the ceiling and the period in jump units (maxDebt / B,
// period × rate / B): as B crosses a value where ⌈top / w⌉ tips the work over WORK_BUDGET, the
// walk switches between 2 and 4 cells per jump and the rate jumps. At issue 14's fresh clients on
// 4 × 512, ρ 0.5, burst 10, B lumped (what stats() states) it halves between B = 3.100 and
// 3.105, a step the HyperLogLog's noise on B (a few per cent) crosses from run to run, the
// mechanism the interpolation was meant to remove. Properties only (no pasted figures): a larger
// batch is never fewer refusals, and neighbours 0.005 apart in B move by less than 1.1×, the
// bound test/sketch/sizing-carry.test.ts holds between B = 2.9 and 3.1.

t.test("continuous in B across the walk's grid switch (ρ 0.5, 4 × 512, burst 10, B lumped)", async (t) => {
  const load = (B: number) => ({
    requestsPerSecond: 255,
    rate: 1,
    burst: 10,
    maxDebt: 100,
    generations: 2,
    requestsPerKey: B,
    requestSpacingMs: 0,
    firstRequestOnly: true,
  })
  const at = (B: number) => sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 512 }, load(B))
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
