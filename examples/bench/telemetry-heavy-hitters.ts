// spec/sizing.md §7, "What it leaves out": heavy hitters inside an overload. The runTraffic loop
// of examples/bench/no-size-option.ts at a fixed 4 × 2,048 with 50 heavy hitters at 20 requests/s
// beside fresh clients at ρ 1 and ρ 0.5 (ρ = 3 × clients per second / M), on a fake clock (counts,
// not timings: it may run on a busy machine). At second 150 it prints stats()'s offered ρ, B and
// prediction beside the refused share of the fresh clients measured over seconds 0–149 (the
// window) and 130–149 (its last 20 s); then issue 14's own point (1,000 fresh clients/s on
// 4 × 4,096, no hitters) in three runs.
//
// `npx tsx examples/bench/telemetry-heavy-hitters.ts` (about 1 s of CPU per point).
import { pathToFileURL } from 'node:url'
import { runTraffic, type TrafficTimeline } from './no-size-option.js'
import type { LimiterStats } from '../../src/limit/telemetry.js'

/** One measured point. */
export interface HeavyInOverloadRow {
  /** The fresh clients' offered ρ. */
  rho: number
  /** stats() at second 150: offered ρ, B, the prediction. */
  statsRho: number
  requestsPerKey: number
  predicted: number
  /** Refused share of the fresh clients over seconds 0–149 and 130–149. */
  measuredWindow: number
  measuredLast20: number
}

function share(tl: TrafficTimeline, from: number, to: number): number {
  let n = 0
  let r = 0
  for (let s = from; s < to; s++) {
    n += tl.requests[s]
    r += tl.refused[s]
  }
  return r / Math.max(1, n)
}

/**
 * Run one point.
 * @param rho the fresh clients' ρ on `cellsPerLevel` cells (clients per second = ρ × M / 3)
 * @param heavyHitters heavy keys at 20 requests/s (50)
 * @param cellsPerLevel M (2,048), at 4 levels
 * @param durationS the second of the stats (150)
 */
export function heavyInOverload(
  rho: number,
  heavyHitters = 50,
  cellsPerLevel = 2048,
  durationS = 150,
): HeavyInOverloadRow {
  let st: LimiterStats | undefined
  const { timeline, limiter } = runTraffic(() => Math.round((rho * cellsPerLevel) / 3), durationS, heavyHitters, {
    levels: 4,
    cellsPerLevel,
    onSecond: (s, l) => {
      if (s === durationS) st = l.telemetry.stats()
    },
  })
  void limiter.close()
  if (st === undefined) throw new Error('no stats at the last second')
  return {
    rho,
    statsRho: st.loadFactor,
    requestsPerKey: st.requestsPerKey,
    predicted: st.falsePositiveRate,
    measuredWindow: share(timeline, 0, durationS),
    measuredLast20: share(timeline, durationS - 20, durationS),
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log('| fresh ρ | stats ρ | B | predicted | measured (window / last 20 s) |')
  console.log('| --- | --- | --- | --- | --- |')
  for (const rho of [1, 0.5]) {
    const r = heavyInOverload(rho)
    console.log(
      `| ${rho} | ${r.statsRho.toFixed(3)} | ${r.requestsPerKey.toFixed(2)} | ${r.predicted.toExponential(2)} | ` +
        `${r.measuredWindow.toExponential(2)} / ${r.measuredLast20.toExponential(2)} |`,
    )
  }
  // issue 14's own point without hitters (1,000 fresh clients/s on 4 × 4,096, ρ 0.73), three runs
  // (random seeds): the stand-in figure stats() states against the rate over all requests
  // (spec/sizing.md §7; README "Sizing")
  const rho = 3000 / 4096
  console.log(`\nissue 14's point, no heavy hitters, 4 × 4,096, ρ ${rho.toFixed(3)}, 3 runs:`)
  console.log('| run | B | predicted | measured (window / last 20 s) | predicted ÷ last 20 s |')
  console.log('| --- | --- | --- | --- | --- |')
  for (let run = 1; run <= 3; run++) {
    const r = heavyInOverload(rho, 0, 4096)
    console.log(
      `| ${run} | ${r.requestsPerKey.toFixed(2)} | ${r.predicted.toExponential(2)} | ` +
        `${r.measuredWindow.toExponential(2)} / ${r.measuredLast20.toExponential(2)} | ${(r.predicted / r.measuredLast20).toFixed(2)} |`,
    )
  }
}
