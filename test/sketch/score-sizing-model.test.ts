import t from 'tap'
import { simulateScore } from '../../scripts/score-sizing-sim.js'
import { agrees } from '../../scripts/sizing-sim.js'

// The score models of spec/sizing.md §3 (abuse false-block) and §4 (fairness false-throttle)
// against a real AbuseScore and FeedbackScore (Rotators of Sketches, exponential decay, Min
// aggregator) fed Poisson background events on a fake clock, at small sizes, as the full
// sweep of scripts/score-sizing-sim.ts does. Points are chosen so the hits counted are many
// (≥ 100): the statistical error is then ≤ 10 % (1σ), far inside 2×.
const POINTS = [
  { policy: 'abuse', levels: 2, eventsPerCell: 0.5, weight: 1, threshold: 1 },
  { policy: 'abuse', levels: 6, eventsPerCell: 4, weight: 1, threshold: 3 },
  { policy: 'abuse', levels: 2, eventsPerCell: 8, weight: 2, threshold: 20 },
  { policy: 'fairness', levels: 2, eventsPerCell: 1, weight: 0.1 },
  { policy: 'fairness', levels: 4, eventsPerCell: 10, weight: 0.1 },
] as const

t.test('predicted false-block and false-throttle rates agree with the real policies', async (t) => {
  let seed = 21
  for (const p of POINTS) {
    const r = simulateScore({ ...p, cellsPerLevel: 128, probes: 10_000, seed: seed++ })
    t.ok(r.hits >= 100, `enough hits to measure (${r.hits})`)
    t.ok(
      agrees(r),
      `${p.policy} L ${p.levels} a ${p.eventsPerCell} w ${p.weight}: measured ${r.measured} predicted ${r.predicted}`,
    )
  }
})

t.test('a fresh key meets no background when nothing is scored', async (t) => {
  const r = simulateScore({
    policy: 'abuse',
    levels: 2,
    eventsPerCell: 1e-9,
    weight: 1,
    threshold: 1,
    cellsPerLevel: 16,
    probes: 1000,
    seed: 5,
  })
  t.equal(r.hits, 0)
  t.ok(r.predicted < 1e-6, `predicted ${r.predicted}`)
})
