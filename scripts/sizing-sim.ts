// `npx tsx scripts/sizing-sim.ts [--quick] [--cells M] [--only K] [--overload | --clustered]`: the debt-meter capacity model of
// spec/sizing.md §2 against the real DebtMeter (an in-process Rotator of Sketches) on a fake
// clock, and against one Sketch that never rotates (the stationary model's object). Fresh
// keys arrive as a Poisson process, each sending one request of `cost`; after a warm-up of two
// rotation periods the script counts the requests refused (every one of them is innocent: a
// fresh key has no debt of its own) and prints, per point, the measured rate beside
// sketchFalsePositiveRate at the offered load: for the Sketch the stationary model (§2.4), for
// the DebtMeter the carry-forward model of its Rotator (§2.5, `generations` and `periodMs`
// given). The table in spec/sizing.md §6 is this script's output.
import { pathToFileURL } from 'node:url'
import { DebtMeter } from '../src/limit/debt-meter.js'
import { resolveSketchOptions } from '../src/limit/options.js'
import { murmur3 } from '../src/hash/hasher.js'
import { sketchFalsePositiveRate } from '../src/sketch/sizing.js'
import { FakeClock, FakeTicker } from '../src/testing/index.js'
import { Sketch } from '../src/sketch/sketch.js'
import { linear } from '../src/sketch/decay.js'
import { mulberry32 } from '../test/fixtures/mulberry32.js'

/** One point of the sweep. */
export interface SimPoint {
  /** Offered load factor: fresh keys' cost per second / (M × rate). */
  rho: number
  /** L. */
  levels: number
  /** M. */
  cellsPerLevel: number
  /** The debt meter's burst (rate 1/s, cost 1). */
  burst: number
  /** The debt ceiling, ≥ burst; default 10 × burst (the debt meter's default). */
  maxDebt?: number
  /** Measured span in s after the warm-up. */
  measureS: number
  /** PRNG seed. */
  seed: number
  /** What decides: one Sketch (the model's object, in steady state) or the DebtMeter (a Rotator of 2 generations with carry-forward). */
  engine: 'sketch' | 'meter'
  /** B, requests each fresh key sends (an integer ≥ 1); default 1. */
  requestsPerKey?: number
  /** The spacing of a key's requests in s (≥ 0); default 0 (all at once). */
  spacingS?: number
}

/** What one point measured. */
export interface SimResult extends SimPoint {
  /** The admitted load factor measured. */
  rhoAdmitted: number
  /** Requests in the measured span. */
  requests: number
  /** Refused requests in the measured span. */
  refused: number
  /** refused / requests: of the keys' first requests (a fresh key's, the model's object, §2.6). */
  measured: number
  /** Refused over all requests, the keys' later ones included (their own debt lowers their margin). */
  measuredAll: number
  /** All requests in the measured span, the keys' later ones included. */
  allRequests: number
  /** Of them refused. */
  refusedAll: number
  /** sketchFalsePositiveRate of a key's first request (`firstRequestOnly`) at the offered load (with the Rotator's generations and period for the DebtMeter). */
  predicted: number
  /** sketchFalsePositiveRate over all of a key's requests (the default), measuredAll's model; = predicted for B = 1. */
  predictedAll: number
}

/**
 * The policies' sketch options of one simulated point: a fixed shape, murmur3 seeded by the
 * point's seed, on a fake clock and ticker that the simulation moves. Shared by both
 * simulations (scripts/score-sizing-sim.ts).
 */
export function simSketch(
  levels: number,
  cellsPerLevel: number,
  seed: number,
): { clock: FakeClock; ticker: FakeTicker; sketch: ReturnType<typeof resolveSketchOptions> } {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const sketch = resolveSketchOptions({ levels, cellsPerLevel, clock, ticker, hasher: murmur3(seed) })
  return { clock, ticker, sketch }
}

/** A binary min-heap of a key's pending requests: [time ms, key, index], by time. */
class Pending {
  private readonly h: [number, number, number][] = []
  get size(): number {
    return this.h.length
  }
  peek(): number {
    return this.h[0][0]
  }
  push(e: [number, number, number]): void {
    const h = this.h
    h.push(e)
    for (let i = h.length - 1; i > 0;) {
      const p = (i - 1) >> 1
      if (h[p][0] <= h[i][0]) break
      ;[h[p], h[i]] = [h[i], h[p]]
      i = p
    }
  }
  pop(): [number, number, number] {
    const h = this.h
    const top = h[0]
    const last = h.pop() as [number, number, number]
    if (h.length > 0) {
      h[0] = last
      for (let i = 0; ;) {
        const l = 2 * i + 1
        let m = i
        if (l < h.length && h[l][0] < h[m][0]) m = l
        if (l + 1 < h.length && h[l + 1][0] < h[m][0]) m = l + 1
        if (m === i) break
        ;[h[m], h[i]] = [h[i], h[m]]
        i = m
      }
    }
    return top
  }
}

/** Run one point: Poisson fresh keys (each B requests s apart) through a real DebtMeter on a FakeClock. */
export function simulate(p: SimPoint): SimResult {
  const rate = 1
  const cost = 1
  const maxDebt = p.maxDebt ?? 10 * p.burst
  const { clock, ticker, sketch } = simSketch(p.levels, p.cellsPerLevel, p.seed)
  let consume: (key: string, nowMs: number) => boolean
  let periodMs: number
  let close = (): void => {}
  let rotation: { generations: number; periodMs: number } | undefined
  if (p.engine === 'meter') {
    const meter = new DebtMeter({ rate, burst: p.burst, cost, maxDebt }, sketch, 'limit:sim')
    periodMs = meter.periodMs
    rotation = { generations: sketch.generations, periodMs }
    consume = (key) => (meter.consume(key) as { admitted: boolean }).admitted
    close = () => void meter.close()
  } else {
    const s = new Sketch({
      levels: p.levels,
      cellsPerLevel: p.cellsPerLevel,
      decay: linear(rate),
      lo: 0,
      hi: maxDebt,
      aggregator: 'min',
      seed: p.seed,
    })
    // no rotation: the warm-up is the Rotator's period, the time for the debts to settle
    periodMs = (maxDebt / rate) * 1000
    consume = (key, nowMs) => s.tryUpdateAt(nowMs, key, cost, p.burst)
  }
  const random = mulberry32(p.seed)
  const perKey = p.requestsPerKey ?? 1
  const spacingMs = (p.spacingS ?? 0) * 1000
  const perMs = (p.rho * p.cellsPerLevel * rate) / cost / 1000
  // keys arrive at perMs / B, each then sends B requests spacingMs apart
  const keysPerMs = perMs / perKey
  const pending = new Pending()
  const warmMs = 2 * periodMs
  const endMs = warmMs + p.measureS * 1000
  let t: number
  let nextKeyMs = -Math.log(1 - random()) / keysPerMs
  let nextTickMs = periodMs
  let key = 0
  let requests = 0
  let refused = 0
  let all = 0
  let refusedAll = 0
  let admittedCost = 0
  for (;;) {
    let k: number
    let j = 0
    if (pending.size > 0 && pending.peek() <= nextKeyMs) [t, k, j] = pending.pop()
    else {
      t = nextKeyMs
      k = key++
      nextKeyMs += -Math.log(1 - random()) / keysPerMs
    }
    if (t >= endMs) break
    if (j + 1 < perKey) pending.push([t + spacingMs, k, j + 1])
    if (p.engine === 'meter') {
      while (t >= nextTickMs) {
        clock.set(nextTickMs)
        ticker.tick()
        nextTickMs += periodMs
      }
      clock.set(t)
    }
    const admitted = consume(`k${k}`, t)
    if (t < warmMs) continue
    all++
    if (admitted) admittedCost += cost
    else refusedAll++
    if (j > 0) continue
    requests++
    if (!admitted) refused++
  }
  close()
  const rhoAdmitted = admittedCost / (p.measureS * p.cellsPerLevel * rate)
  const shape = { levels: p.levels, cellsPerLevel: p.cellsPerLevel }
  const load = {
    requestsPerSecond: perMs * 1000,
    rate,
    burst: p.burst,
    cost,
    maxDebt,
    ...rotation,
    requestsPerKey: perKey,
    requestSpacingMs: spacingMs,
  }
  const predicted = sketchFalsePositiveRate(shape, { ...load, firstRequestOnly: true })
  const predictedAll = sketchFalsePositiveRate(shape, load)
  return {
    ...p,
    rhoAdmitted,
    requests,
    refused,
    measured: refused / Math.max(1, requests),
    measuredAll: refusedAll / Math.max(1, all),
    allRequests: all,
    refusedAll,
    predicted,
    predictedAll,
  }
}

/** Whether predicted and measured agree: within 2× of each other, or within 1e-6 absolute. */
export function agrees(r: Pick<SimResult, 'predicted' | 'measured'>): boolean {
  if (Math.abs(r.predicted - r.measured) <= 1e-6) return true
  return r.measured > 0 && r.predicted > 0 && r.predicted / r.measured <= 2 && r.measured / r.predicted <= 2
}

/**
 * The sweep of spec/sizing.md: ρ from 0.05 to 2, L from 1 to 6, bursts 1 to 20. The last point
 * (ρ 2, L 1) is the carry-forward's hand-over figure of §2.5 (0.69 stated, never measured
 * before), where one level alone decides: a Sketch's rate there is held in [1/2, 2/3] by rate
 * conservation (1/(1 + ρ) ≤ 1 − rate ≤ L/ρ, §2.5 _Heavy load_), the model's is above it.
 */
export const SWEEP: readonly Omit<SimPoint, 'measureS' | 'seed' | 'cellsPerLevel' | 'engine'>[] = [
  { rho: 0.05, levels: 2, burst: 1 },
  { rho: 0.2, levels: 2, burst: 1 },
  { rho: 0.5, levels: 2, burst: 2 },
  { rho: 0.5, levels: 3, burst: 1 },
  { rho: 0.8, levels: 4, burst: 5 },
  { rho: 0.9, levels: 2, burst: 10 },
  { rho: 0.9, levels: 4, burst: 3 },
  { rho: 1, levels: 3, burst: 10 },
  { rho: 1.2, levels: 4, burst: 10 },
  { rho: 1.5, levels: 5, burst: 10 },
  { rho: 2, levels: 6, burst: 10 },
  { rho: 0.7, levels: 6, burst: 2 },
  { rho: 0.3, levels: 4, burst: 2 },
  { rho: 2, levels: 2, burst: 20 },
  { rho: 2, levels: 1, burst: 5 },
]

/**
 * Overloaded points (spec/sizing.md §6.1, "Overload"): ρ = 2 to 300, where a level cannot drain
 * what it is fed and the model above ρ = 32 is the heavy-load limit of §2.5. Run at a small M
 * (the requests per point grow as ρ·M) with `maxDebt` at the burst as well as the default.
 */
export const OVERLOAD_SWEEP: readonly Omit<SimPoint, 'measureS' | 'seed' | 'cellsPerLevel' | 'engine'>[] = [
  { rho: 2, levels: 4, burst: 2, maxDebt: 2 },
  { rho: 5, levels: 2, burst: 1 },
  { rho: 5, levels: 4, burst: 10 },
  { rho: 32, levels: 3, burst: 2, maxDebt: 2 },
  { rho: 32, levels: 6, burst: 10 },
  { rho: 300, levels: 4, burst: 2, maxDebt: 2 },
  { rho: 300, levels: 2, burst: 10 },
  { rho: 300, levels: 1, burst: 5 },
]

/**
 * Clustered points (spec/sizing.md §6.1, "Clustered arrivals"): each fresh key sends B = 3 or 10
 * requests, 0, 1 or 2 s apart (issue 14's clients send 3, 1 s apart, at rate 1, burst 10), ρ 0.05
 * to 2, L 2 to 6. The script measures two rates: the keys' first requests' (beside the model's
 * `firstRequestOnly` figure) and all requests' (beside its default, the mean over a key's requests,
 * the later ones carrying the key's own debt: spec/sizing.md §2.6 _Over all requests_).
 */
export const CLUSTER_SWEEP: readonly Omit<SimPoint, 'measureS' | 'seed' | 'cellsPerLevel' | 'engine'>[] = [
  { rho: 0.73, levels: 4, burst: 10, requestsPerKey: 3, spacingS: 1 },
  { rho: 0.73, levels: 4, burst: 10, requestsPerKey: 3, spacingS: 0 },
  { rho: 0.5, levels: 2, burst: 10, requestsPerKey: 10, spacingS: 1 },
  { rho: 0.5, levels: 3, burst: 10, requestsPerKey: 10, spacingS: 0 },
  { rho: 0.3, levels: 2, burst: 10, requestsPerKey: 10, spacingS: 1 },
  { rho: 0.3, levels: 2, burst: 5, requestsPerKey: 3, spacingS: 0 },
  { rho: 0.9, levels: 6, burst: 10, requestsPerKey: 3, spacingS: 1 },
  { rho: 1, levels: 3, burst: 10, requestsPerKey: 3, spacingS: 1 },
  { rho: 1.2, levels: 4, burst: 10, requestsPerKey: 10, spacingS: 0 },
  { rho: 1.5, levels: 5, burst: 10, requestsPerKey: 10, spacingS: 1 },
  { rho: 0.05, levels: 2, burst: 2, requestsPerKey: 3, spacingS: 2 },
  { rho: 0.05, levels: 2, burst: 3, requestsPerKey: 3, spacingS: 0 },
  { rho: 0.05, levels: 2, burst: 2, requestsPerKey: 3, spacingS: 1 },
  { rho: 2, levels: 6, burst: 10, requestsPerKey: 3, spacingS: 1 },
]

function clustered(argv: readonly string[], flag: (name: string) => number | undefined): void {
  const cellsPerLevel = flag('--cells') ?? 1024
  const measureS = argv.includes('--quick') ? 200 : 1000
  const only = flag('--only')
  const sweep = only === undefined ? CLUSTER_SWEEP : CLUSTER_SWEEP.slice(only - 1, only)
  const lines = [
    '| ρ | L | M | burst | B | spacing s | first requests | refused | measured (first) | predicted (first) | agree | requests | refused | measured (all requests) | predicted (all) | agree | predicted without B |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  let agreeMeter = 0
  let agreeAll = 0
  let seed = 200 + (only ?? 1)
  for (const s of sweep) {
    const m = simulate({ ...s, cellsPerLevel, measureS, seed: seed++, engine: 'meter' })
    const single = sketchFalsePositiveRate(
      { levels: m.levels, cellsPerLevel },
      { requestsPerSecond: m.rho * cellsPerLevel, rate: 1, burst: m.burst, cost: 1, generations: 2 },
    )
    if (agrees(m)) agreeMeter++
    const all = agrees({ predicted: m.predictedAll, measured: m.measuredAll })
    if (all) agreeAll++
    lines.push(
      `| ${m.rho} | ${m.levels} | ${cellsPerLevel} | ${m.burst} | ${m.requestsPerKey} | ${m.spacingS} | ${m.requests} | ${m.refused} | ${m.measured.toExponential(2)} | ${m.predicted.toExponential(2)} | ${agrees(m) ? 'yes' : 'NO'} | ${m.allRequests} | ${m.refusedAll} | ${m.measuredAll.toExponential(2)} | ${m.predictedAll.toExponential(2)} | ${all ? 'yes' : 'NO'} | ${single.toExponential(2)} |`,
    )
    console.log(lines[lines.length - 1])
  }
  console.log('\n' + lines.join('\n'))
  console.log(
    `\nM = ${cellsPerLevel}, ${measureS} s measured per point. DebtMeter: first requests ${agreeMeter} of ${sweep.length} agree, all requests ${agreeAll} of ${sweep.length}.`,
  )
}

/** 1 − rate, to 3 digits: under an overload the admitted share is the figure that moves. */
function share(rate: number): string {
  return (1 - rate).toExponential(2)
}

function overload(argv: readonly string[], flag: (name: string) => number | undefined): void {
  const cellsPerLevel = flag('--cells') ?? 64
  const measureS = argv.includes('--quick') ? 50 : 200
  const only = flag('--only')
  const sweep = only === undefined ? OVERLOAD_SWEEP : OVERLOAD_SWEEP.slice(only - 1, only)
  const lines = [
    '| ρ | L | M | burst | maxDebt | requests | refused (DebtMeter) | measured (DebtMeter) | predicted | agree | admitted share measured / predicted | measured (Sketch) | predicted (stationary) | agree | admitted share measured / predicted |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  let agreeMeter = 0
  let agreeSketch = 0
  let seed = 100 + (only ?? 1)
  for (const s of sweep) {
    const r = simulate({ ...s, cellsPerLevel, measureS, seed, engine: 'sketch' })
    const m = simulate({ ...s, cellsPerLevel, measureS, seed: seed++, engine: 'meter' })
    if (agrees(m)) agreeMeter++
    if (agrees(r)) agreeSketch++
    lines.push(
      `| ${m.rho} | ${m.levels} | ${m.cellsPerLevel} | ${m.burst} | ${m.maxDebt ?? 10 * m.burst} | ${m.requests} | ${m.refused} | ${m.measured.toPrecision(4)} | ${m.predicted.toPrecision(4)} | ${agrees(m) ? 'yes' : 'NO'} | ${share(m.measured)} / ${share(m.predicted)} | ${r.measured.toPrecision(4)} | ${r.predicted.toPrecision(4)} | ${agrees(r) ? 'yes' : 'NO'} | ${share(r.measured)} / ${share(r.predicted)} |`,
    )
    console.log(lines[lines.length - 1])
  }
  console.log('\n' + lines.join('\n'))
  console.log(
    `\nM = ${cellsPerLevel}, ${measureS} s measured per point. DebtMeter: ${agreeMeter} of ${sweep.length} agree; Sketch: ${agreeSketch} of ${sweep.length}.`,
  )
}

function main(): void {
  // --quick: M = 128, 400 s; --cells M: another M; --only K: the K-th point of the sweep alone (1-based)
  const argv = process.argv
  const quick = argv.includes('--quick')
  const flag = (name: string): number | undefined => {
    const i = argv.indexOf(name)
    return i < 0 ? undefined : Number(argv[i + 1])
  }
  // --overload: the overloaded sweep (M = 64, 200 s; --quick 50 s)
  if (argv.includes('--overload')) return overload(argv, flag)
  // --clustered: keys of B requests s apart (M = 1024, 1000 s; --quick 200 s)
  if (argv.includes('--clustered')) return clustered(argv, flag)
  const cellsPerLevel = flag('--cells') ?? (quick ? 128 : 1024)
  const measureS = quick ? 400 : 2000
  const only = flag('--only')
  const sweep = only === undefined ? SWEEP : SWEEP.slice(only - 1, only)
  const lines = [
    '| ρ | L | M | burst | requests | refused (DebtMeter) | measured (DebtMeter) | predicted (carry-forward) | agree | measured (Sketch) | predicted (stationary) | agree |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ]
  let agreeMeter = 0
  let agreeSketch = 0
  let seed = only ?? 1
  for (const s of sweep) {
    const r = simulate({ ...s, cellsPerLevel, measureS, seed, engine: 'sketch' })
    const m = simulate({ ...s, cellsPerLevel, measureS, seed: seed++, engine: 'meter' })
    if (agrees(m)) agreeMeter++
    if (agrees(r)) agreeSketch++
    lines.push(
      `| ${m.rho} | ${m.levels} | ${m.cellsPerLevel} | ${m.burst} | ${m.requests} | ${m.refused} | ${m.measured.toExponential(2)} | ${m.predicted.toExponential(2)} | ${agrees(m) ? 'yes' : 'NO'} | ${r.measured.toExponential(2)} | ${r.predicted.toExponential(2)} | ${agrees(r) ? 'yes' : 'NO'} |`,
    )
    console.log(lines[lines.length - 1])
  }
  console.log('\n' + lines.join('\n'))
  console.log(
    `\nM = ${cellsPerLevel}, ${measureS} s measured per point. DebtMeter: ${agreeMeter} of ${sweep.length} agree; Sketch: ${agreeSketch} of ${sweep.length}.`,
  )
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
