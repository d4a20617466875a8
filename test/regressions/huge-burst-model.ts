// A limit with a huge burst (rate 1e9, burst 1e9, as bench:http's "nothing rejected" server)
// made the capacity model walk burst × 16 grid points inside stats(): a Fastify server under
// load stopped answering after about 3,000 requests, its event loop spinning in the tail
// integration. The model now evaluates beyond its grid at the grid's end, an upper bound
// (tails decrease in the margin). If the fix regresses, this file times out.
import t from 'tap'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'

t.test('the false-reject model answers for a burst of 1e9', async (t) => {
  const p = sketchFalsePositiveRate(
    { levels: 4, cellsPerLevel: 65536 },
    { requestsPerSecond: 40_000, rate: 1e9, burst: 1e9, cost: 1 },
  )
  t.ok(p >= 0 && p <= 1, `a probability (${p})`)
  // a load factor of 40,000 / (65,536 × 1e9) leaves a cell nowhere near a margin of 1e9 jumps
  t.ok(p < 1e-6, 'and a tiny one at a load factor of 6e-10')
  // and at saturation the bound is still a probability near 1 rather than a hang
  const sat = sketchFalsePositiveRate(
    { levels: 1, cellsPerLevel: 1 },
    { requestsPerSecond: 3e9, rate: 1e9, burst: 1e9 },
  )
  t.ok(sat > 0.5 && sat <= 1, `saturated: ${sat}`)
})

t.test('and so does the carry-forward model, the one stats() asks for a debt meter', async (t) => {
  // the Limiter passes each meter's generations and period (spec/sizing.md §2.5): a margin of
  // 1e9 jumps must not walk a grid of that size either
  const load = { requestsPerSecond: 40_000, rate: 1e9, burst: 1e9, cost: 1, generations: 2 }
  const p = sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 65536 }, load)
  t.ok(p >= 0 && p < 1e-6, `a tiny probability (${p})`)
  const near = sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 1 }, { ...load, requestsPerSecond: 0.99e9 })
  t.ok(near >= 0 && near <= 1, `near saturation: ${near}`)
  const sat = sketchFalsePositiveRate({ levels: 1, cellsPerLevel: 1 }, { ...load, requestsPerSecond: 3e9 })
  t.ok(sat > 0.5 && sat <= 1, `saturated: ${sat}`)
})
