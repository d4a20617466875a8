// The "grudge, no size option" row of `npm run bench:compare` (issue 14): a Limiter built
// with only `limit: { rate: 1, burst: 10 }` (so its default memory budget decides the
// sketch), on a fake clock. Traffic: 1,000 fresh clients per second for 150 s, each sending
// 3 requests one second apart (3,000 requests/s, none ever over its limit), plus 50 heavy
// hitters at 20 requests/s. Targets: innocent false-reject ≤ 1e-4 after the first rotation
// period, heavy hitters admitted within ±5 % of an exact per-key GCRA.
//
// `npx tsx examples/bench/no-size-option.ts` runs it at full size (≈ 600,000 requests);
// `--quick` at a tenth of the clients (the row's shape, not its figures).
import { pathToFileURL } from 'node:url'
import { Limiter } from '../../src/limit/limiter.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

/** What the row reports. */
export interface NoSizeOptionRow {
  /** Innocent requests after the first period. */
  innocentRequests: number
  /** Those refused. */
  innocentRefused: number
  /** Heavy-hitter requests admitted by grudge. */
  heavyAdmitted: number
  /** Heavy-hitter requests an exact per-key GCRA admits. */
  heavyReference: number
  /** The shape the default budget picked. */
  levels: number
  /** M. */
  cellsPerLevel: number
  /** Bytes of the debt meter's sketches. */
  memoryBytes: number
  /** The first rotation period in ms (the innocent count starts after it). */
  periodMs: number
  /** Requests decided. */
  requests: number
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Run the traffic.
 * @param clientsPerSecond fresh clients per second (1,000 full size)
 * @param durationS seconds of fresh clients (150 full size)
 * @param heavyHitters heavy keys at 20 requests/s (50 full size)
 */
export function runNoSizeOption(clientsPerSecond = 1000, durationS = 150, heavyHitters = 50): NoSizeOptionRow {
  const rate = 1
  const burst = 10
  const random = mulberry32(14)
  // events: time (ms), key id (< 0: heavy hitter −1 − h), sorted by time
  const times: number[] = []
  const ids: number[] = []
  let client = 0
  for (let s = 0; s < durationS; s++)
    for (let c = 0; c < clientsPerSecond; c++) {
      const t0 = (s + random()) * 1000
      const id = client++
      for (let k = 0; k < 3; k++) {
        times.push(t0 + k * 1000)
        ids.push(id)
      }
    }
  const endMs = (durationS + 2) * 1000
  for (let h = 0; h < heavyHitters; h++) {
    const phase = random() * 50
    for (let t = phase; t < endMs; t += 50) {
      times.push(t)
      ids.push(-1 - h)
    }
  }
  const order = Array.from(times.keys()).sort((a, b) => times[a] - times[b])
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const limiter = new Limiter({ limit: { rate, burst }, clock, ticker })
  const meter = limiter.limit!
  const periodMs = meter.periodMs
  // exact per-key GCRA for the heavy hitters (the clients never exceed their limit)
  const debt = new Float64Array(heavyHitters)
  const at = new Float64Array(heavyHitters)
  let nextTick = periodMs
  const row: NoSizeOptionRow = {
    innocentRequests: 0,
    innocentRefused: 0,
    heavyAdmitted: 0,
    heavyReference: 0,
    levels: limiter.sketch.levels,
    cellsPerLevel: limiter.sketch.cellsPerLevel,
    memoryBytes: meter.store.sizeBytes(),
    periodMs,
    requests: order.length,
  }
  for (const i of order) {
    const t = times[i]
    while (t >= nextTick) {
      clock.set(nextTick)
      ticker.tick()
      nextTick += periodMs
    }
    clock.set(t)
    const id = ids[i]
    const d = limiter.decide(id >= 0 ? `c${id}` : `h${-1 - id}`) as { admitted: boolean }
    if (id >= 0) {
      if (t >= periodMs) {
        row.innocentRequests++
        if (!d.admitted) row.innocentRefused++
      }
    } else {
      const h = -1 - id
      debt[h] = Math.max(0, debt[h] - ((t - at[h]) * rate) / 1000)
      at[h] = t
      if (debt[h] + 1 <= burst) {
        debt[h] += 1
        row.heavyReference++
      }
      if (d.admitted) row.heavyAdmitted++
    }
  }
  void limiter.close()
  return row
}

/** The row as text. */
export function formatNoSizeOption(r: NoSizeOptionRow): string {
  const fr = r.innocentRefused / Math.max(1, r.innocentRequests)
  const heavy = r.heavyAdmitted / Math.max(1, r.heavyReference) - 1
  return (
    `| grudge, no size option (${r.levels} × ${r.cellsPerLevel.toLocaleString('en-US')} from the default budget, ${(r.memoryBytes / 1048576).toFixed(1)} MiB) ` +
    `| ${fr.toExponential(2)} (${r.innocentRefused} of ${r.innocentRequests.toLocaleString('en-US')}) ` +
    `| ${heavy >= 0 ? '+' : ''}${(heavy * 100).toFixed(1)} % (${r.heavyAdmitted} vs ${r.heavyReference}) |`
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const quick = process.argv.includes('--quick')
  const r = quick ? runNoSizeOption(100, 120, 5) : runNoSizeOption()
  console.log(
    '| limiter | innocent false-reject after the first period | heavy hitters admitted vs exact GCRA |\n|---|---:|---:|',
  )
  console.log(formatNoSizeOption(r))
}
