// The debt meter's capacity model with the Rotator's carry-forward (spec/sizing.md §2.5,
// spec/rotator.md §1). A Rotator of N generations decides on the oldest, G₀; an admitted
// request adds its cost to G₀'s L cells and raises each of its cells in every younger
// generation to max(cell + cost, A), A = G₀'s aggregate (the min of its L cells) after the
// write. A generation is born empty, is floored so for (N − 1) periods, then decides for one
// period with plain adds. Its cells are therefore never stationary: the carry lifts them while
// young, and they relax while they decide. The stationary model of sizing.ts (one Sketch that
// never rotates) measures 3.4× too low for it at ρ 0.9, burst 10.
//
// So this model follows the distribution of one cell of each generation through time, in the
// mean-field approximation of the count-min analyses (Cormode & Muthukrishnan 2005: a key's
// L cells, one per level under independent hashes, are independent of each other and of the
// key), until the rotation cycle repeats itself (a periodic regime), and averages the
// false-reject rate of a fresh key over the deciding generation's period. One cell is the
// content process of a dam with Poisson jumps and a constant drain (the M/D/1 workload, Lindley's
// recursion W' = max(0, W + c − r·τ); Prabhu, "Queues and Inventories", 1965, on finite dams),
// here with two changes: above the margin an arrival is admitted only if another of the key's
// cells has room (the feedback of sizing.ts §2.3), and in a younger generation an arrival
// lifts the cell to c + max(W, m), m the min of the key's L cells in G₀.
//
// Discretization. Content is kept in cells of width Δ = c / n (cell j holds (j − 1)Δ < W ≤ jΔ,
// cell 0 the atom W = 0) and time in steps Δ / r, so the drain moves every cell down by
// exactly one: transport is exact, and one arrival's jump is exactly n cells. What a step can
// get wrong is second order in the arrivals per step π = ρ / n and is kept small so:
// arrivals per step are Poisson (0 … k jumps, not one), a test at a uniform time inside the
// step sees the arrivals that came before it (the mean of the states before and after them)
// and a content that has drained part of a cell (the cell that straddles the margin counts
// half). At n = 4 the stationary case (N = 1) agrees with the level-crossing solution of
// sizing.ts to 10 % at every point of spec/sizing.md §6.
//
// Cost. O(periods × steps × N × K) with K = hi / Δ cells, bounded by WORK_BUDGET per walk
// whatever the figures, and an evaluation walks once, or twice for a margin between grid points
// (`betweenGridPoints`): at most 2 × WORK_BUDGET. n is lowered first (8, 4, 2, 1), then the jump itself is coarsened (one
// jump of c·f for every f requests), which keeps ρ and raises the variance of the arrivals,
// so it can only overstate the rate (an upper bound, as the grid clamp of sizing.ts).

/** Cell-steps of work one walk may take in all (each a few arithmetic operations: a few ms); an evaluation walks at most twice. */
const WORK_BUDGET = 1e6
/** Periods walked at most beyond the N it takes every generation to be born empty and decide. */
const MAX_EXTRA_PERIODS = 4
/** Relative change of the period's mean rate below which the cycle repeats. */
const PERIOD_TOLERANCE = 2e-3

/** Poisson terms 0 … k kept for a step of mean `lambda` (the tail beyond k, under 1e-5, is lumped at k), at most 12. */
function poissonTerms(lambda: number): number {
  let k = 1
  let term = Math.exp(-lambda)
  let cum = term
  while (k < 12) {
    term *= lambda / k
    cum += term
    if (1 - cum < 1e-5) break
    k++
  }
  return k
}

/**
 * The false-reject rate of a fresh key under a debt-meter Rotator with carry-forward, per
 * request, averaged over the deciding generation's period in the periodic regime.
 * Everything is in jump units (content / cost, time × rate / cost). The finest grid of 8, 4, 2
 * or 1 cells per jump that fits the work budget is walked (the error is first order in the
 * cell width; §6 of spec/sizing.md lists the grid of each point).
 * @param rho ρ, load factor of one level, in (0, ∞)
 * @param levels L ≥ 1
 * @param marginJ the margin (burst − cost) / cost ≥ 0
 * @param topJ the ceiling maxDebt / cost > marginJ
 * @param generations N ≥ 2
 * @param periodJ the rotation period × rate / cost > 0
 * @param hot the share of a level's cells that hot keys hold full, in [0, 1]
 * @returns a probability in [0, 1]
 * @internal
 */
export function carryForwardRate(
  rho: number,
  levels: number,
  marginJ: number,
  topJ: number,
  generations: number,
  periodJ: number,
  hot: number,
): number {
  return carryForwardRates(rho, levels, marginJ, topJ, generations, periodJ, hot, [])[0]
}

/**
 * `carryForwardRate` and, from the same walk, the rate at lower margins: the chance that
 * all L cells of a key are over `queriesJ[i]` (jump units, each in [0, marginJ]) at a uniform
 * time of the deciding period, the cells' distribution being the one fed with the feedback at
 * `marginJ` (the other keys' first requests). What a key's later request meets when its own
 * earlier debt D sits in each of its cells: the margin marginJ − D (spec/sizing.md §2.6
 * _Over all requests_). Each query adds two passes over the deciding generation's cells per
 * step (the states before and after the step's arrivals, averaged), counted in the work budget.
 * @returns [the rate at marginJ, the rate at each query], probabilities in [0, 1]
 * @internal
 */
export function carryForwardRates(
  rho: number,
  levels: number,
  marginJ: number,
  topJ: number,
  generations: number,
  periodJ: number,
  hot: number,
  queriesJ: readonly number[],
): number[] {
  const periods = generations + MAX_EXTRA_PERIODS
  const extra = queriesJ.length > 0 ? 2 : 0
  // cell-steps of one walk at cell width w (jumps of j cells)
  const workAt = (w: number, j: number): number =>
    periods * (generations * (1 + poissonTerms(rho / j)) + extra) * Math.ceil(topJ / w) * Math.ceil(periodJ / w)
  let n = 8
  while (n > 1 && workAt(1 / n, n) > WORK_BUDGET) n >>= 1
  const walkAt = (w: number, j: number): number[] =>
    betweenGridPoints(w, marginJ, queriesJ, (m, qs) =>
      walkQueries(rho, levels, m, topJ, generations, periodJ, hot, w, j, periods, qs),
    )
  if (workAt(1 / n, n) > WORK_BUDGET) {
    // coarsen the jump: cells of width w > 1 jump, one jump of w·c per w requests
    const w = Math.sqrt((periods * (generations * (1 + poissonTerms(rho)) + extra) * topJ * periodJ) / WORK_BUDGET)
    return walkAt(w, 1)
  }
  return walkAt(1 / n, n)
}

/**
 * The rates at margins between grid points, interpolated geometrically between the two grid
 * points around each (the tail is exponential in the margin in the Cramér regime, Asmussen &
 * Albrecher, _Ruin Probabilities_, 2010, Thm IV.5.2, so its logarithm is near linear between
 * them): a walk reads a margin as its grid cell, so the rate was a step function of it. A step
 * of one jump (the grid at the work budget's coarsest) moved stats()'s prediction 12× between
 * B = 3.00 and 3.01 requests per key at ρ 0.5 on 4 × 512 (1.38e-7 → 1.68e-6: the margin 9 / B
 * jumps crossed 3), where the HyperLogLog's noise puts a measured B of 3 on either side. A
 * margin on the grid is walked once, as before; one between grid points takes two walks (the
 * feedback at the margin shapes the cells), the lower margins `qs` read at both their grid
 * points in each walk.
 * @param w the grid's cell width, jump units
 * @param marginJ the margin, jump units
 * @param queriesJ the lower margins, jump units
 * @param run one walk at a margin on the grid, its answer [rate, ...rates at the margins asked]
 * @returns [rate, ...rates at queriesJ]
 */
function betweenGridPoints(
  w: number,
  marginJ: number,
  queriesJ: readonly number[],
  run: (marginJ: number, queriesJ: number[]) => number[],
): number[] {
  const cell = (q: number): number => Math.floor(q / w + 1e-9)
  const frac = (q: number): number => Math.max(0, q / w - cell(q))
  const n = queriesJ.length
  const qs = queriesJ.map((q) => cell(q) * w)
  for (let i = 0; i < n; i++) qs.push(qs[i] + w)
  const X = cell(marginJ)
  const f = frac(marginJ) > 1e-9 ? frac(marginJ) : 0
  const lo = run(X * w, qs)
  const hi = f === 0 ? lo : run((X + 1) * w, qs)
  const out = [between(lo[0], hi[0], f)]
  for (let i = 0; i < n; i++) {
    const fq = frac(queriesJ[i])
    out.push(between(between(lo[1 + i], lo[1 + n + i], fq), between(hi[1 + i], hi[1 + n + i], fq), f))
  }
  return out
}

/** a^(1 − f)·b^f, or (1 − f)·a + f·b when either is 0 (so f → 0 and f → 1 give a and b). */
function between(a: number, b: number, f: number): number {
  if (f === 0) return a
  if (a > 0 && b > 0) return Math.exp((1 - f) * Math.log(a) + f * Math.log(b))
  return (1 - f) * a + f * b
}

/**
 * The cells per jump {@link carryForwardRate} walks for these figures: 8, 4, 2 or 1, or 0 when the
 * jump itself is coarsened (an upper bound).
 * @internal
 */
export function carryForwardGrid(rho: number, topJ: number, generations: number, periodJ: number): number {
  const periods = generations + MAX_EXTRA_PERIODS
  const workAt = (w: number, j: number): number =>
    periods * generations * (1 + poissonTerms(rho / j)) * Math.ceil(topJ / w) * Math.ceil(periodJ / w)
  let n = 8
  while (n > 1 && workAt(1 / n, n) > WORK_BUDGET) n >>= 1
  return workAt(1 / n, n) > WORK_BUDGET ? 0 : n
}

/** One walk of the cycle on a grid of cells of width `w` jumps, a jump being `J` cells. */
export function walk(
  rho: number,
  L: number,
  marginJ: number,
  topJ: number,
  N: number,
  periodJ: number,
  hot: number,
  w: number,
  J: number,
  periods: number,
): number {
  return walkQueries(rho, L, marginJ, topJ, N, periodJ, hot, w, J, periods, [])[0]
}

/** The rate over L cells at the lower margins `xq` (cell indices) of the deciding generation `g0`, its top `top`, added into `out`. */
function queryRefusals(
  g0: Float64Array,
  top: number,
  xq: Int32Array,
  hot: number,
  L: number,
  out: Float64Array,
  weight: number,
): void {
  // xq descends: one suffix pass from the top down to the lowest query
  let tail = 0
  let j = top
  for (let i = 0; i < xq.length; i++) {
    const x = xq[i]
    for (; j >= x + 2; j--) tail += g0[j]
    out[i] += weight * refusal(tail, x + 1 <= top ? g0[x + 1] : 0, hot, L)
  }
}

/** `walk` with the rates at lower margins (jump units ≤ marginJ) beside it: [rate, ...rates at queriesJ]. */
function walkQueries(
  rho: number,
  L: number,
  marginJ: number,
  topJ: number,
  N: number,
  periodJ: number,
  hot: number,
  w: number,
  J: number,
  periods: number,
  queriesJ: readonly number[],
): number[] {
  const K = Math.max(J + 1, Math.ceil(topJ / w - 1e-9))
  // cells 0 … X hold content ≤ the margin; X + 1 straddles it
  const X = Math.min(K - 1, Math.floor(marginJ / w + 1e-9))
  const S = Math.max(1, Math.round(periodJ / w))
  // the queries' cells, in descending order (one suffix pass each state), and where each answer goes
  const order = queriesJ.map((_, i) => i).sort((a, b) => queriesJ[b] - queriesJ[a])
  const xq = Int32Array.from(order, (i) => Math.min(K - 1, Math.max(0, Math.floor(queriesJ[i] / w + 1e-9))))
  const qSum = new Float64Array(queriesJ.length)
  let qRate = new Float64Array(queriesJ.length)
  // arrivals per step per cell: ρ·r / (J·w·c) per second × w·c / r seconds
  const pi = rho / J
  const kMax = poissonTerms(pi)
  const gens: Float64Array[] = []
  // the highest cell that may hold mass, per generation (cells above hold none: loops stop there)
  const tops = new Int32Array(N)
  for (let i = 0; i < N; i++) {
    const g = new Float64Array(K + 1)
    g[0] = 1
    gens.push(g)
  }
  // CDF of the floor m (the min of the key's L cells in G₀, given the request is admitted), per cell
  const floorCdf = new Float64Array(K + 1)
  const pw: Float64Array[] = []
  for (let k = 0; k < kMax; k++) pw.push(new Float64Array(K + 1))
  const pIn = new Float64Array(kMax + 1)
  const pStraddle = new Float64Array(kMax + 1)
  const pAbove = new Float64Array(kMax + 1)
  const pYoung = new Float64Array(kMax + 1)
  const oneMinusHot = 1 - hot
  let prev = NaN
  let rate = 0
  for (let per = 0; per < periods; per++) {
    if (per > 0) {
      // rotation: the oldest is dropped, a fresh empty generation is appended
      const g = gens.shift() as Float64Array
      g.fill(0)
      g[0] = 1
      gens.push(g)
      for (let i = 0; i < N - 1; i++) tops[i] = tops[i + 1]
      tops[N - 1] = 0
    }
    const g0 = gens[0]
    let sum = 0
    qSum.fill(0)
    for (let s = 0; s < S; s++) {
      if (xq.length > 0) queryRefusals(g0, tops[0], xq, hot, L, qSum, 0.5)
      let tail = 0
      for (let j = X + 2; j <= tops[0]; j++) tail += g0[j]
      const straddle = g0[X + 1]
      const admit = 1 - refusal(tail, straddle, hot, L)
      const qOther = hot + oneMinusHot * (tail + straddle / 2)
      const beta = L === 1 ? 0 : 1 - Math.pow(qOther, L - 1)
      // younger generations: Poisson arrivals at π·admit, each lifting W to c + max(W, m)
      if (N > 1 && admit > 0) {
        let cum = 0
        for (let j = 0; j <= X; j++) {
          cum += g0[j]
          floorCdf[j] = Math.min(1, (1 - Math.pow(hot + oneMinusHot * Math.max(0, 1 - cum), L)) / admit)
        }
        for (let j = X + 1; j <= K; j++) floorCdf[j] = 1
        poisson(pi * admit, pYoung, kMax)
        for (let i = 1; i < N; i++) {
          const g = gens[i]
          let top = tops[i]
          let src = g
          for (let k = 0; k < kMax; k++) {
            top = floorStep(src, pw[k], floorCdf, Math.min(K, Math.max(top, X + 1)), K, J)
            src = pw[k]
          }
          const p0 = pYoung[0]
          for (let j = 0; j <= top; j++) {
            let v = p0 * g[j]
            for (let k = 1; k <= kMax; k++) v += pYoung[k] * pw[k - 1][j]
            g[j] = v
          }
          tops[i] = top
        }
      }
      // G₀: Poisson arrivals admitted by the key's own cell (below the margin), the
      // straddling cell (half the step) or another of its cells (β); each adds one jump.
      // Descending and in place: a jump only moves mass up, to cells already done.
      poisson(pi, pIn, kMax)
      poisson((pi * (1 + beta)) / 2, pStraddle, kMax)
      poisson(pi * beta, pAbove, kMax)
      let dTail = 0
      let dStraddle = 0
      const top0 = tops[0]
      for (let j = top0; j >= 0; j--) {
        const v = g0[j]
        if (v === 0) continue
        const c = j <= X ? 0 : j === X + 1 ? 1 : 2
        const p = c === 0 ? pIn : c === 1 ? pStraddle : pAbove
        g0[j] = v * p[0]
        // the atom's arrivals end the step at 1 + kJ before the drain; a test inside the step sees them at kJ
        const base = j === 0 ? 1 : j
        const seen = j === 0 ? 0 : j
        for (let k = 1; k <= kMax; k++) {
          const m = v * p[k]
          const to = base + k * J
          g0[to < K ? to : K] += m
          if (c !== 2) {
            const at = seen + k * J
            const t = at <= X ? 0 : at === X + 1 ? 1 : 2
            if (t !== c) {
              if (c === 1) dStraddle -= m
              if (t === 2) dTail += m
              else if (t === 1) dStraddle += m
            }
          }
        }
      }
      tops[0] = Math.min(K, top0 + kMax * J + 1)
      if (xq.length > 0) queryRefusals(g0, tops[0], xq, hot, L, qSum, 0.5)
      // the rate at a uniform time of the step: the mean of the states before and after its arrivals
      sum += refusal(tail + dTail / 2, straddle + dStraddle / 2, hot, L)
      // drain: every cell moves down one; cells that hold next to nothing are dropped
      for (let i = 0; i < N; i++) {
        const g = gens[i]
        let top = tops[i]
        if (top === 0) continue
        g[0] += g[1]
        g.copyWithin(1, 2, top + 1)
        g[top] = 0
        top--
        while (top > X + 1 && g[top] < 1e-30) top--
        tops[i] = top
      }
    }
    rate = sum / S
    qRate = qSum.map((v) => v / S)
    if (per >= N && Math.abs(rate - prev) <= PERIOD_TOLERANCE * rate) break
    prev = rate
  }
  const out = [Math.min(1, Math.max(0, rate))]
  for (let i = 0; i < queriesJ.length; i++) out.push(0)
  order.forEach((q, i) => (out[q + 1] = Math.min(1, Math.max(0, qRate[i]))))
  return out
}

/** Poisson probabilities of 0 … kMax − 1 arrivals at mean `lambda`, the rest lumped at kMax. */
function poisson(lambda: number, out: Float64Array, kMax: number): void {
  let term = Math.exp(-lambda)
  let cum = term
  out[0] = term
  for (let k = 1; k < kMax; k++) {
    term *= lambda / k
    out[k] = term
    cum += term
  }
  out[kMax] = Math.max(0, 1 - cum)
}

/**
 * A fresh key's chance that all L cells are over the margin at a uniform time of the step,
 * from the tail `s` beyond the straddling cell and that cell's mass `g` (its content passes
 * the margin during the step): ∫₀¹ (a + b(1 − u))^L du, a cell being a hot key's with
 * probability `hot`.
 */
function refusal(s: number, g: number, hot: number, L: number): number {
  const a = hot + (1 - hot) * Math.min(1, Math.max(0, s))
  const b = (1 - hot) * Math.max(0, g)
  if (!(b > 1e-9 * (a + b))) return Math.pow(a + b / 2, L)
  return (Math.pow(a + b, L + 1) - Math.pow(a, L + 1)) / ((L + 1) * b)
}

/**
 * One arrival in a younger generation, W → c + max(W, m), as a map of cell masses `src` to
 * `dst`: P(max ≤ k) = P(W ≤ k) · P(m ≤ k), moved up J cells (the atom J + 1, as in G₀).
 * @returns the highest cell of `dst` that may hold mass
 */
function floorStep(
  src: Float64Array,
  dst: Float64Array,
  floorCdf: Float64Array,
  top: number,
  K: number,
  J: number,
): number {
  dst.fill(0)
  let cum = 0
  let prevF = 0
  for (let k = 0; k <= top; k++) {
    cum += src[k]
    const f = cum * floorCdf[k]
    const to = k + J + (k === 0 ? 1 : 0)
    dst[to < K ? to : K] += f - prevF
    prevF = f
  }
  return Math.min(K, top + J + 1)
}
