// `npx tsx scripts/score-sizing-sim.ts [--quick] [--heavy]`: the score models of spec/sizing.md §3 (abuse
// false-block) and §4 (fairness false-throttle) against the real policies, an AbuseScore and a
// FeedbackScore (each an in-process Rotator of Sketches, exponential decay, Min aggregator), on
// a fake clock. Background events of fresh keys arrive as a Poisson process at
// ν = a·M·λ per second (a: events per cell per time constant 1/λ), each adding its weight w
// (abuse: `record(key, w)`; fairness: `record(key, true)`, +failureDelta). Probes of other fresh
// keys arrive as a second Poisson process; after a warm-up of two rotation periods the script
// counts the probes blocked (abuse: score ≥ threshold) or throttled (fairness: u < score, u
// uniform) and prints the measured rate beside abuseFalseBlockRate / fairnessFalseThrottleRate at
// the offered load. The table in spec/sizing.md §6.2 is this script's output.
import { pathToFileURL } from 'node:url'
import { AbuseScore } from '../src/limit/abuse-score.js'
import { FeedbackScore } from '../src/limit/feedback-score.js'
import { abuseFalseBlockRate, fairnessFalseThrottleRate } from '../src/sketch/sizing.js'
import { agrees, simSketch } from './sizing-sim.js'
import { mulberry32 } from '../test/fixtures/mulberry32.js'

/** One point of the sweep. */
export interface ScorePoint {
  /** Which policy: the abuse score (false-block) or the fairness score (false-throttle). */
  policy: 'abuse' | 'fairness'
  /** L. */
  levels: number
  /** M. */
  cellsPerLevel: number
  /** a = ν / (M·λ): background events per cell per time constant. */
  eventsPerCell: number
  /** w: the abuse weight of one event, or fairness's failureDelta (in (0, 1]). */
  weight: number
  /** Abuse only: the threshold T (maxScore is the default 4·T). */
  threshold?: number
  /** Probes measured after the warm-up. */
  probes: number
  /** PRNG seed. */
  seed: number
}

/** What one point measured. */
export interface ScoreResult extends ScorePoint {
  /** Background events per second, ν. */
  eventsPerSecond: number
  /** Probes blocked or throttled. */
  hits: number
  /** hits / probes. */
  measured: number
  /** The model's rate at the offered load. */
  predicted: number
}

/** Abuse half-life in the sweep (ms): any value gives the same table in units of 1/λ. */
const HALF_LIFE_MS = 10_000
/** Fairness decay in the sweep: the policy's default. */
const FAIRNESS_LAMBDA = 0.1

/** Run one point: Poisson background events and Poisson probes through a real policy on a FakeClock. */
export function simulateScore(p: ScorePoint): ScoreResult {
  const { clock, ticker, sketch } = simSketch(p.levels, p.cellsPerLevel, p.seed)
  const random = mulberry32(p.seed)
  let lambda: number
  let periodMs: number
  let event: (key: string) => void
  let probe: (key: string) => boolean
  let predict: (eventsPerSecond: number) => number
  let close: () => void
  const shape = { levels: p.levels, cellsPerLevel: p.cellsPerLevel }
  if (p.policy === 'abuse') {
    const threshold = p.threshold ?? 10
    const abuse = new AbuseScore(
      { weights: { '500': p.weight }, threshold, halfLifeMs: HALF_LIFE_MS },
      sketch,
      'abuse:sim',
    )
    lambda = Math.LN2 / (HALF_LIFE_MS / 1000)
    periodMs = abuse.periodMs
    event = (key) => void abuse.record(key, p.weight)
    probe = (key) => !(abuse.check(key) as { admitted: boolean }).admitted
    predict = (nu) =>
      abuseFalseBlockRate(
        shape,
        { eventsPerSecond: nu, weight: p.weight, lambdaPerSecond: lambda, maxScore: abuse.maxScore },
        threshold,
      )
    close = () => void abuse.close()
  } else {
    const fairness = new FeedbackScore(
      { failureDelta: p.weight, lambdaPerSecond: FAIRNESS_LAMBDA },
      sketch,
      'fairness:sim',
    )
    lambda = FAIRNESS_LAMBDA
    periodMs = fairness.periodMs
    event = (key) => void fairness.record(key, true)
    probe = (key) => !(fairness.check(key, random()) as { admitted: boolean }).admitted
    predict = (nu) =>
      fairnessFalseThrottleRate(shape, { eventsPerSecond: nu, weight: p.weight, lambdaPerSecond: lambda, maxScore: 1 })
    close = () => void fairness.close()
  }
  const nu = p.eventsPerCell * p.cellsPerLevel * lambda
  const eventPerMs = nu / 1000
  // probes spread over 200 time constants after the warm-up, so the background is sampled in many states
  const measureMs = (200 / lambda) * 1000
  const probePerMs = p.probes / measureMs
  const warmMs = 2 * periodMs
  const endMs = warmMs + measureMs
  let nextEvent = -Math.log(1 - random()) / eventPerMs
  let nextProbe = warmMs - Math.log(1 - random()) / probePerMs
  let nextTickMs = periodMs
  let keys = 0
  let probes = 0
  let hits = 0
  for (;;) {
    const t = Math.min(nextEvent, nextProbe)
    if (t >= endMs) break
    while (t >= nextTickMs) {
      clock.set(nextTickMs)
      ticker.tick()
      nextTickMs += periodMs
    }
    clock.set(t)
    if (nextEvent <= nextProbe) {
      event(`e${keys++}`)
      nextEvent += -Math.log(1 - random()) / eventPerMs
    } else {
      probes++
      if (probe(`p${keys++}`)) hits++
      nextProbe += -Math.log(1 - random()) / probePerMs
    }
  }
  close()
  return { ...p, probes, eventsPerSecond: nu, hits, measured: hits / Math.max(1, probes), predicted: predict(nu) }
}

/** The sweep of spec/sizing.md §6.2: L 2 to 6, a from 0.5 to 20, thresholds 1 to 8 weights. */
export const SCORE_SWEEP: readonly Omit<ScorePoint, 'probes' | 'seed' | 'cellsPerLevel'>[] = [
  { policy: 'abuse', levels: 2, eventsPerCell: 0.5, weight: 1, threshold: 1 },
  { policy: 'abuse', levels: 3, eventsPerCell: 1, weight: 1, threshold: 1 },
  { policy: 'abuse', levels: 2, eventsPerCell: 1, weight: 1, threshold: 2 },
  { policy: 'abuse', levels: 3, eventsPerCell: 2, weight: 1, threshold: 3 },
  { policy: 'abuse', levels: 4, eventsPerCell: 4, weight: 1, threshold: 5 },
  { policy: 'abuse', levels: 6, eventsPerCell: 4, weight: 1, threshold: 3 },
  { policy: 'abuse', levels: 5, eventsPerCell: 8, weight: 1, threshold: 8 },
  { policy: 'abuse', levels: 2, eventsPerCell: 8, weight: 2, threshold: 20 },
  { policy: 'fairness', levels: 2, eventsPerCell: 1, weight: 0.1 },
  { policy: 'fairness', levels: 3, eventsPerCell: 0.5, weight: 0.3 },
  { policy: 'fairness', levels: 3, eventsPerCell: 4, weight: 0.1 },
  { policy: 'fairness', levels: 4, eventsPerCell: 2, weight: 0.2 },
  { policy: 'fairness', levels: 2, eventsPerCell: 2, weight: 0.5 },
  { policy: 'fairness', levels: 4, eventsPerCell: 10, weight: 0.1 },
  { policy: 'fairness', levels: 6, eventsPerCell: 20, weight: 0.05 },
  { policy: 'fairness', levels: 5, eventsPerCell: 0.5, weight: 0.1 },
]

/**
 * Fairness under a heavy load (spec/sizing.md §6.2, "Heavy load"): a = 100 to 10^4, where the
 * false-throttle rate tends to 1 (the model's quadrature capped it at 0.99223). Run at M = 16
 * (the events per point grow as a·M); the admitted share 1 − rate is printed beside the rate.
 */
export const HEAVY_SCORE_SWEEP: readonly Omit<ScorePoint, 'probes' | 'seed' | 'cellsPerLevel'>[] = [
  { policy: 'fairness', levels: 2, eventsPerCell: 100, weight: 0.1 },
  { policy: 'fairness', levels: 3, eventsPerCell: 1000, weight: 0.1 },
  { policy: 'fairness', levels: 4, eventsPerCell: 1000, weight: 1 },
  { policy: 'fairness', levels: 2, eventsPerCell: 10000, weight: 0.5 },
]

function heavy(): void {
  const cellsPerLevel = 16
  const probes = 100_000
  const lines = [
    '| policy | L | M | a = ν/(Mλ) | w | probes | hits | measured | predicted | agree | 1 − rate measured / predicted |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  let agree = 0
  let seed = 101
  for (const s of HEAVY_SCORE_SWEEP) {
    const r = simulateScore({ ...s, cellsPerLevel, probes, seed: seed++ })
    if (agrees(r)) agree++
    lines.push(
      `| ${r.policy} | ${r.levels} | ${r.cellsPerLevel} | ${r.eventsPerCell} | ${r.weight} | ${r.probes} | ${r.hits} | ${r.measured.toPrecision(5)} | ${r.predicted.toPrecision(5)} | ${agrees(r) ? 'yes' : 'NO'} | ${(1 - r.measured).toExponential(2)} / ${(1 - r.predicted).toExponential(2)} |`,
    )
    console.log(lines[lines.length - 1])
  }
  console.log('\n' + lines.join('\n'))
  console.log(`\nM = ${cellsPerLevel}, ${probes} probes per point: ${agree} of ${HEAVY_SCORE_SWEEP.length} agree.`)
}

function main(): void {
  // --heavy: the heavy-load fairness points (M = 16)
  if (process.argv.includes('--heavy')) return heavy()
  const quick = process.argv.includes('--quick')
  const cellsPerLevel = quick ? 128 : 1024
  const probes = quick ? 20_000 : 200_000
  const lines = [
    '| policy | L | M | a = ν/(Mλ) | w | threshold | probes | hits | measured | predicted | agree |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  let agree = 0
  let seed = 1
  for (const s of SCORE_SWEEP) {
    const r = simulateScore({ ...s, cellsPerLevel, probes, seed: seed++ })
    if (agrees(r)) agree++
    lines.push(
      `| ${r.policy} | ${r.levels} | ${r.cellsPerLevel} | ${r.eventsPerCell} | ${r.weight} | ${r.threshold ?? '–'} | ${r.probes} | ${r.hits} | ${r.measured.toExponential(2)} | ${r.predicted.toExponential(2)} | ${agrees(r) ? 'yes' : 'NO'} |`,
    )
    console.log(lines[lines.length - 1])
  }
  console.log('\n' + lines.join('\n'))
  console.log(`\nM = ${cellsPerLevel}, ${probes} probes per point: ${agree} of ${SCORE_SWEEP.length} agree.`)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
