import { GrudgeRangeError, describeValue, invalidOption } from '../errors.js'
import { carryForwardRates } from './sizing-carry.js'
import { minPeriodMs } from './rotator-period.js'
import { closestName, optionKeys } from '../options.js'

// The capacity model of the policies' sketches (spec/sizing.md). A sketch cell is a queue:
// every admitted request (or scored event) of every key hashed to it adds to it, and decay
// drains it. A fresh key is misjudged only when all L of its cells are full at once, so
// the per-request false-reject rate is q^L, q the chance one cell is over the key's margin.
// One cell's stationary content has a density f on (0, hi) that the level-crossing
// argument (Brill 1975; Cohen, "The Single Server Queue", 1982, §III.5) pins: the rate of
// downcrossings of level x (the drain speed at x times f(x)) equals the rate of upcrossings
// (arrivals that jump from (x − c, x] to above x). With a jump c per arrival that is the
// delay differential equation of Z(x) = P(content ≤ x), unnormalized:
//
//   drain(x) · Z'(x) = ν · (Z(x) − Z(x − c)),      ν arrivals per second per cell
//
// Linear decay (drain = rate, constant) gives the M/D/1 workload (Erlang 1909; Crommelin
// 1932), exponential decay (drain = λx) Takács's shot noise. The equation holds below the
// ceiling hi, whose clamp only renormalizes it: P(content > x) = 1 − Z(x) / Z(hi) (the
// finite dam, Cohen 1976), for any load, also ρ ≥ 1. We integrate it forward in positive
// terms (no alternating sums), trapezoid rule, on a grid of n points per jump.

function bad(name: string, expected: string, value: unknown): never {
  throw new GrudgeRangeError(
    'ERR_GRUDGE_SIZING_INVALID',
    `${name}: expected ${expected}, received ${describeValue(value)}`,
  )
}

function finiteAtLeast(name: string, v: unknown, lo: number, strict: boolean): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || (strict ? !(v > lo) : !(v >= lo)))
    bad(name, `a finite number ${strict ? '>' : '≥'} ${lo}`, v)
  return v
}

/** `v`, or `dflt` when it is undefined (only undefined: a null is a bad value, never a silent default). */
function orDefault(v: unknown, dflt: number): unknown {
  return v === undefined ? dflt : v
}

function intAtLeast(name: string, v: unknown, lo: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo) bad(name, `an integer ≥ ${lo}`, v)
  return v
}

/** Grid points per jump come from this many in all (64 per jump up to 65,536 jumps, then fewer, at least 16); the walk itself stops at MAX_GRID. */
const MAX_STEPS = 1 << 22
/**
 * Grid points one tail integration may walk: 2^18, about a millisecond. The debt meter's
 * feedback bisects on it (about 14 walks) inside stats() and a sizer: 2^24 points took 55 s
 * (machine under load) for a saturated limit with burst 1e9, so the cap is kept small.
 */
const MAX_GRID = 1 << 18
/**
 * Grid points walked by the tail integrations since the last reset (head points, steps and
 * rescaled ring entries), for the step-budget tests: the bound of spec/sizing.md §2.5 _Cost_
 * is asserted on it, not on a timer.
 * @internal
 */
export const modelSteps = { count: 0 }
/**
 * Above this score load a = ν/(Mλ) the shot noise is integrated as Y = Z / u^a (§3), whose
 * equation has no instantaneous term: a fixed 64 points per jump at any a. At or below it
 * the direct walk needs at most 2a ≤ 64 points per jump, so it is kept (answers unchanged).
 */
const SCORE_DIRECT_MAX_LOAD = 32
/** Points per jump of the Y walk. */
const SCORE_Y_POINTS = 64
/** The Y walk hands over to the direct one where a/u ≤ this: h·a/u ≤ 1/4 there, finer than the direct walk's 1/2 at u = 1. */
const SCORE_Y_SWITCH = 16
/** Y is never rescaled (it stays above e^(−1/e·u) ≫ 2^−1022 while a/u > 16); kept as a name for ln Z = a ln u + ln Y. */
const yScale = 0
/**
 * Below this tail a debt cell's integration is not walked: its answer is rounding noise
 * (about steps × 2^-53 of the mass, ≤ 3e-11 at MAX_GRID; 2.57e-12 read at ρ = 1e-9) and the
 * walk runs to the ceiling. Lundberg's bound e^(−Rx) (proven, any x ≥ 0) is returned instead.
 */
const DEBT_TAIL_FLOOR = 1e-12

/**
 * Above this load factor a debt cell is not walked (the direct walk needs 2ρ points per jump,
 * and e^(ρu) of its head overflows past ρ ≈ 709: NaN at ρ = 10^7). Its tail is the heavy-load
 * limit instead, 1 − P(content > x) = ν/ρ (a fluid argument, spec/sizing.md §2.5 _Heavy load_),
 * ν read by one walk at this load: within 3 % of ν's limit there (the walk's own answers at
 * ρ = 64…700 converge to it), and every answer is one walk of at most 64 points per jump.
 */
const DEBT_HEAVY_LOAD = 32

/**
 * The heavy-load limit of a debt cell's tail: the one home of the rule of spec/sizing.md §2.5
 * _Heavy load_. Past saturation a cell is below the margin x only from a return to it until the
 * next arrival, 1/ρ jump times, so 1 − P(content > x) = ν/ρ with ν the returns per jump time:
 * `tailAtHeavy` is the tail at ρ = DEBT_HEAVY_LOAD, and ν is read there.
 * @returns 1 − (1 − tailAtHeavy) · DEBT_HEAVY_LOAD / ρ, in [tailAtHeavy, 1] for ρ ≥ DEBT_HEAVY_LOAD
 */
function heavyLoadTail(rho: number, tailAtHeavy: number): number {
  return 1 - ((1 - tailAtHeavy) * DEBT_HEAVY_LOAD) / rho
}

/** ln of the rescaling factor that keeps a growing Z (load ≥ 1) finite. */
const LN_RESCALE = 460
const RESCALE = Math.exp(-LN_RESCALE)

/**
 * Tails of one cell's stationary content: P(content > x) for each query x (in jump units,
 * ascending, each in [0, top]). Level crossing with an arrival rate that may drop once the
 * content passes `xStop` (to β times: the debt meter's feedback, §2.3):
 * Z'(u) = g(u) · (B(u) − B(u − 1)), B(y) = Z(y) for y ≤ xStop and Z(xStop) + β(Z(y) − Z(xStop))
 * above, on u in [1, top]; Z on [0, 1] is `head` (`head(0)` is Z(0), the atom at 0 included).
 */
function crossingTails(
  head: (u: number) => number,
  g: (u: number) => number,
  top: number,
  queries: readonly number[],
  gMax: number,
  xStop = Infinity,
  beta = 1,
): number[] {
  let n = Math.max(16, Math.min(64, Math.floor(MAX_STEPS / Math.max(1, top))))
  // the implicit step divides by 1 − h·g/2: keep h·g well below 2
  if (gMax / n > 0.5) n = Math.min(Math.max(n, Math.ceil(gMax * 2)), MAX_STEPS)
  const h = 1 / n
  // A margin of millions of jumps (burst 1e9 at cost 1) would take top·n steps, which blocked
  // the event loop for minutes inside stats(). Past MAX_GRID points the walk stops at the
  // grid's end. If Z has converged there (load < 1), Z(top) = Z(end) to double precision and
  // the tails stand; if not, every tail is reported as 1, an upper bound (the stated
  // false-reject rate can then only be too high, never too low).
  const clamped = top * n > MAX_GRID
  if (clamped) {
    top = MAX_GRID / n
    queries = queries.map((x) => Math.min(x, top))
  }
  const last = Math.max(1, Math.round(top * n))
  const stopIdx = xStop === Infinity ? Infinity : Math.round(xStop * n)
  const qIdx = queries.map((x) => Math.min(last, Math.round(x * n)))
  const lnZq: number[] = queries.map(() => NaN)
  // below one jump Z is `head`, in closed form: a query there is read exactly, not at the
  // nearest grid point (for shot noise Z(0) = 0, and a query rounded to it read a tail of 1:
  // a false-throttle floor of ~1.5e-3 at any load, however small)
  let q = 0
  while (q < queries.length && queries[q] <= 1) {
    lnZq[q] = Math.log(head(queries[q]))
    q++
  }
  // ring of B at the last n + 1 grid points
  const ring = new Float64Array(n + 1)
  let scale = 0
  let zStop = NaN
  const record = (i: number, z: number): void => {
    while (q < qIdx.length && qIdx[q] === i) lnZq[q++] = Math.log(z) + scale
  }
  const bOf = (i: number, z: number): number => (i <= stopIdx ? z : zStop + beta * (z - zStop))
  let z = 0
  modelSteps.count += last + 1
  for (let i = 0; i <= n; i++) {
    z = head(i * h)
    if (i === stopIdx) zStop = z
    ring[i] = bOf(i, z)
    record(i, z)
  }
  // a ceiling below one jump (a score's weight above its maxScore) ends the walk in the head:
  // the mass is Z(top), not Z(1) (which read P(S ≤ hi) = (hi/w)^a < 1, the rest above the ceiling)
  let lnZTop = top < 1 ? Math.log(head(top)) : Math.log(z) + scale
  // relative growth of Z in the last step taken (0 when no step was taken)
  let lastGrowth = 0
  for (let i = n; i < last;) {
    i++
    let zPrev = z
    const bPrev = ring[(i - 1) % (n + 1)]
    const dPrev = g((i - 1) * h) * (bPrev - ring[(i - 1 - n) % (n + 1)])
    const gi = g(i * h)
    const bDel = ring[(i - n) % (n + 1)]
    // B_i = s·Z_i + o, linear in Z_i: solve the implicit trapezoid step for Z_i
    const above = i > stopIdx
    const s = above ? beta : 1
    const o = above ? zStop * (1 - beta) : 0
    z = (zPrev + (h / 2) * dPrev + (h / 2) * gi * (o - bDel)) / (1 - (h / 2) * gi * s)
    if (i === stopIdx) zStop = z
    ring[i % (n + 1)] = bOf(i, z)
    if (z > 1 / RESCALE) {
      modelSteps.count += n + 1
      for (let k = 0; k <= n; k++) ring[k] *= RESCALE
      scale += LN_RESCALE
      z *= RESCALE
      zStop *= RESCALE
      // on the same scale as z: unscaled, z − zPrev read as a fall, the convergence test below
      // stopped the walk at its first rescale past the last query (a tail read against Z at that
      // point, not at the ceiling: 0.40 for 0.99999 at ρ 500, x 1, top 2; issue 14)
      zPrev *= RESCALE
    }
    record(i, z)
    lastGrowth = (z - zPrev) / z
    const lnZ = Math.log(z) + scale
    lnZTop = lnZ
    if (q === qIdx.length) {
      // every query is now below e^-40 of the mass: their tails are 1 to double precision
      if (lnZ - lnZq[qIdx.length - 1] > 40) return queries.map(() => 1)
      // one more jump adds nothing: the distribution has converged (load < 1)
      if (z - zPrev <= 1e-19 * z) break
    }
  }
  if (clamped && !(lastGrowth <= 1e-12)) return queries.map(() => 1)
  return lnZq.map((lz) => Math.min(1, Math.max(0, -Math.expm1(lz - lnZTop))))
}

/**
 * Lundberg's bound on the tail of one debt cell at load ρ < 1: P(content > x) ≤ e^(−R·x), x in
 * jumps, R > 0 the adjustment coefficient, ρ(e^R − 1) = R (Lundberg 1926; Asmussen & Albrecher,
 * "Ruin Probabilities", 2010, Thm IV.5.2: the M/G/1 workload is the Cramér–Lundberg ruin
 * probability). It holds for the finite dam (its tail is the open queue's truncated: smaller) and
 * for any feedback β ≤ 1 (fewer admitted arrivals lower the content pathwise). R by 64 bisection
 * steps on [0, R̄], R̄ = 2 ln(2/ρ) + 2 (where ρ(e^R − 1) > R already): a fixed number of steps.
 */
function lundbergBound(rho: number, xOverCost: number): number {
  let lo = 0
  let hi = 2 * Math.log(2 / rho) + 2
  for (let k = 0; k < 64; k++) {
    const mid = (lo + hi) / 2
    // ρ(e^R − 1) − R is convex, < 0 on (0, R), > 0 beyond
    if (rho * Math.expm1(mid) < mid) lo = mid
    else hi = mid
  }
  // the lower end: an R no larger than the root keeps the bound an upper bound
  return Math.exp(-lo * xOverCost)
}

/**
 * P(content > x) of one debt-meter cell: linear drain at `rate`, Poisson arrivals of jumps
 * `cost` at load ρ = (cost per second into the cell) / rate while the content is at most x,
 * β·ρ above it, clamped at `maxDebt`.
 * @param rho ρ ≥ 0 (any value: the ceiling keeps the content finite; above DEBT_HEAVY_LOAD the
 * heavy-load limit, one walk at ρ = 32)
 * @param xOverCost the margin x / cost ≥ 0
 * @param maxDebtOverCost hi / cost ≥ x / cost
 * @param beta the share of arrivals still admitted above x, in (0, 1]; default 1
 * @internal
 */
export function debtCellTail(rho: number, xOverCost: number, maxDebtOverCost: number, beta = 1): number {
  if (rho === 0) return 0
  if (xOverCost >= maxDebtOverCost) return 0
  if (rho > DEBT_HEAVY_LOAD) {
    // the heavy-load limit (§2.5 _Heavy load_): the time below the margin is 1/ρ per return to
    // it, so 1 − P(content > x) = ν(κ)/ρ, ν the returns per jump time at the feeding κ = βρ
    // above the margin: read at ρ = DEBT_HEAVY_LOAD with the same κ (β' ≤ 1), one bounded walk
    const atK = debtCellTail(DEBT_HEAVY_LOAD, xOverCost, maxDebtOverCost, Math.min(1, (beta * rho) / DEBT_HEAVY_LOAD))
    return heavyLoadTail(rho, atK)
  }
  if (rho < 1) {
    const bound = lundbergBound(rho, xOverCost)
    if (bound <= DEBT_TAIL_FLOOR) return bound
  }
  const x = xOverCost
  const zx = Math.exp(rho * Math.min(1, x))
  // on [0, 1) nothing can arrive from below 0: Z' = ρ·B(Z), closed form on both sides of x
  const head = (u: number): number =>
    u <= x ? Math.exp(rho * u) : zx * (1 + (beta === 0 ? rho * (u - x) : Math.expm1(rho * beta * (u - x)) / beta))
  return crossingTails(head, () => rho, maxDebtOverCost, [x], rho, x, beta)[0]
}

/**
 * Tails P(content ≥ x) of one exponentially decaying cell (shot noise): jumps `weight`,
 * a = ν / λ arrivals per time constant, clamped at `hi`.
 */
function scoreCellTails(a: number, xsOverWeight: readonly number[], hiOverWeight: number): number[] {
  if (a === 0) return xsOverWeight.map(() => 0)
  if (a > SCORE_DIRECT_MAX_LOAD) return scoreCellTailsY(a, xsOverWeight, hiOverWeight)
  // Z(u) = u^a on [0, 1] (below one jump the content is one decayed arrival or less)
  return crossingTails(
    (u) => Math.pow(u, a),
    (u) => a / u,
    hiOverWeight,
    xsOverWeight,
    a,
  )
}

/**
 * {@link scoreCellTails} for a heavy load a (> SCORE_DIRECT_MAX_LOAD): the same level-crossing
 * equation for Y(u) = Z(u) / u^a. From Z' = (a/u)(Z(u) − Z(u − 1)):
 *
 *   Y'(u) = −(a/u) · (1 − 1/u)^a · Y(u − 1),   Y = 1 on [0, 1]
 *
 * a pure delay equation (no instantaneous term, so no step limit h·a/u < 2: the direct walk
 * needed 2a points per jump, 17–114 ms at a ≥ 10^4), whose coefficient is at most a/(a+1)·e^−1
 * and whose relative decrement per step stays O(h) (Y(u−1)/Y(u) · (1 − 1/u)^a = Z(u−1)/Z(u)).
 * Explicit trapezoid (both delayed values are on the grid), 64 points per jump, Y rescaled
 * upwards as it falls; ln Z = a ln u + ln Y. Same stopping rules and MAX_GRID cap as the direct
 * walk. At a ≫ hi/w, Y stays 1 and the tail is 1 − (x/hi)^a: the background alone is over the
 * threshold.
 */
function scoreCellTailsY(a: number, queries: readonly number[], top: number): number[] {
  const n = SCORE_Y_POINTS
  const h = 1 / n
  const clamped = top * n > MAX_GRID
  if (clamped) {
    top = MAX_GRID / n
    queries = queries.map((x) => Math.min(x, top))
  }
  const last = Math.max(n, Math.round(top * n))
  // a query above one jump is read between the walked points around it (indices i − 1, i > n),
  // ln Y = ln Z − a ln u interpolated linearly: Y is smooth where Z = u^a·Y is steep, and at a
  // heavy load the tail 1 − (x/hi)^a falls within hi/a of the ceiling, far inside one grid step
  // (a query rounded to the grid read 0 or 1 there: the false-throttle rate stalled at 0.996)
  const qIdx = queries.map((x) => Math.min(last, Math.max(n + 1, Math.ceil(x * n))))
  const lnZq: number[] = queries.map(() => NaN)
  let q = 0
  // below one jump Z = u^a exactly (u = 0: Z = 0, a tail of 1)
  while (q < queries.length && queries[q] <= 1) {
    lnZq[q] = a * Math.log(queries[q])
    q++
  }
  // the ring holds Y while u < a / SCORE_Y_SWITCH, then Z · e^(−ref)
  const ring = new Float64Array(n + 1).fill(1)
  modelSteps.count += last + 1
  // c(u) = (a/u)(1 − 1/u)^a, in logs (0 at u = 1)
  const coef = (u: number): number => (u <= 1 ? 0 : Math.exp(Math.log(a / u) + a * Math.log1p(-1 / u)))
  let scale = 0
  let y = 1
  // ln Z at the walk's end: Z(1) = 1 where the walk starts, Z(top) = top^a when the ceiling is
  // below one jump (the walk has no step then)
  let lnZ = top < 1 ? a * Math.log(top) : 0
  let lastGrowth = 0
  let cPrev = 0
  let direct = false
  for (let i = n + 1; i <= last; i++) {
    const u = i * h
    const lnZPrev = lnZ
    if (!direct && a / u <= SCORE_Y_SWITCH) {
      // Z over the last jump from Y, relative to ln Z at the previous point
      direct = true
      scale = lnZPrev
      for (let k = i - 1 - n; k <= i - 1; k++) {
        const uk = k * h
        const lnZk = uk <= 0 ? -Infinity : a * Math.log(uk) + Math.log(ring[k % (n + 1)]) + (k > n ? yScale : 0)
        ring[k % (n + 1)] = Math.exp(lnZk - scale)
      }
      y = 1
    }
    if (direct) {
      // the direct implicit trapezoid of crossingTails, h · a/u ≤ 2^-2
      const g0 = a / (u - h)
      const g1 = a / u
      const dPrev = g0 * (ring[(i - 1) % (n + 1)] - ring[(i - 1 - n) % (n + 1)])
      y = (ring[(i - 1) % (n + 1)] + (h / 2) * dPrev - (h / 2) * g1 * ring[(i - n) % (n + 1)]) / (1 - (h / 2) * g1)
      ring[i % (n + 1)] = y
      if (y > 1 / RESCALE) {
        modelSteps.count += n + 1
        for (let k = 0; k <= n; k++) ring[k] *= RESCALE
        y *= RESCALE
        scale += LN_RESCALE
      }
      lnZ = Math.log(y) + scale
    } else {
      const c = coef(u)
      const yPrev = y
      // Y(u_{i−1} − 1) and Y(u_i − 1): ring slots of i − 1 − n and i − n
      y = yPrev - (h / 2) * (cPrev * ring[(i - 1 - n) % (n + 1)] + c * ring[(i - n) % (n + 1)])
      cPrev = c
      if (!(y > 0)) y = yPrev * Math.exp(-h * c * (ring[(i - n) % (n + 1)] / yPrev))
      ring[i % (n + 1)] = y
      // Y falls by at most e^(−h/e) a step (module comment) and a/u > 16 here: never near underflow
      lnZ = a * Math.log(u) + Math.log(y) + yScale
    }
    lastGrowth = lnZ - lnZPrev
    while (q < qIdx.length && qIdx[q] === i) {
      const xq = Math.min(u, Math.max(u - h, queries[q]))
      const lnYPrev = lnZPrev - a * Math.log(u - h)
      lnZq[q++] = a * Math.log(xq) + lnYPrev + ((xq - (u - h)) / h) * (lnZ - a * Math.log(u) - lnYPrev)
    }
    if (q === qIdx.length) {
      if (lnZ - lnZq[qIdx.length - 1] > 40) return queries.map(() => 1)
      if (lastGrowth <= 1e-19) break
    }
  }
  if (clamped && !(lastGrowth <= 1e-12)) return queries.map(() => 1)
  return lnZq.map((lz) => Math.min(1, Math.max(0, -Math.expm1(lz - lnZ))))
}

/** The size of one sketch generation: L levels of M cells. */
export interface SketchSize {
  /** L, levels: integer ≥ 1. */
  levels: number
  /** M, cells per level: integer ≥ 1. */
  cellsPerLevel: number
}

/** The load of a debt meter (the `limit` policy), for {@link sketchFalsePositiveRate}. */
export interface DebtMeterLoad {
  /** Requests admitted per second, all keys together (finite, ≥ 0). Hot keys' share (`hotKeys × rate / cost`) is taken out of the background. Default 0. */
  requestsPerSecond?: number
  /** The policy's drain in cost units per second (finite, > 0); required when `requestsPerSecond` > 0. */
  rate?: number
  /** The policy's burst (finite, > 0); required when `requestsPerSecond` > 0. */
  burst?: number
  /** Cost of one request, in (0, burst]; default 1. */
  cost?: number
  /** The debt ceiling hi, ≥ burst; default 10 × burst (the debt meter's default). */
  maxDebt?: number
  /** H, keys held at their limit at one time (finite, ≥ 0): each keeps its L cells full. Default 0. */
  hotKeys?: number
  /**
   * N, the generations of the debt meter's Rotator: an integer in [2, 65535]. Given, the model is
   * that of a Rotator with carry-forward (spec/sizing.md §2.5: each generation is floored at the
   * deciding one's reading while young, then decides for one period); absent, that of one Sketch
   * that never rotates (§2.4). Every debt meter is a Rotator: pass it for a debt meter's rate.
   */
  generations?: number
  /** The Rotator's period in ms (finite, > 0); only with `generations`. Default the shortest the amnesty guard allows, maxDebt / rate × 1000 / (N − 1) (the debt meter's default). */
  periodMs?: number
  /**
   * B, the requests each distinct key sends over its life (a mean, finite, ≥ 1; default 1, one
   * request per key: Poisson arrivals of single requests). A key's B requests land in the same L
   * cells, so the cells are fed in batches (spec/sizing.md §2.6 _Clustered arrivals_): compound
   * Poisson jumps of B × cost at requestsPerSecond / B, corrected for their spread by
   * `requestSpacingMs`. Measured as admitted cost / (distinct keys × cost) over a window
   * (`requestsPerKeyOf` (src/sketch/sizing.ts)). Below 1, NaN or infinite: `ERR_GRUDGE_SIZING_INVALID`.
   */
  requestsPerKey?: number
  /**
   * The time between a key's consecutive requests in ms (finite, ≥ 0); default 0, all B at once:
   * the largest jumps, an upper bound for any spacing. Only with `requestsPerKey` > 1 does it matter.
   */
  requestSpacingMs?: number
  /**
   * Which requests the rate is of (spec/sizing.md §2.6 _Over all requests_): false (default), the
   * mean over a key's B requests, the k-th carrying the key's own earlier debt in its cells, what
   * a user measures ("30 % of innocent requests refused"); true, a key's first request only (a
   * fresh key's, the model before). Both are the same for B = 1. Not a boolean: `ERR_GRUDGE_SIZING_INVALID`.
   */
  firstRequestOnly?: boolean
}

/**
 * Load factor ρ of one debt-meter level: (admitted cost per second of the keys that are not
 * hot) / (M × rate). Above 1 the level cannot drain what it is fed, and cells fill to the ceiling.
 * @internal
 */
export function debtMeterLoadFactor(
  cellsPerLevel: number,
  requestsPerSecond: number,
  rate: number,
  cost: number,
  hotKeys: number,
): number {
  return Math.max(0, requestsPerSecond * cost - hotKeys * rate) / (cellsPerLevel * rate)
}

/**
 * B, the requests per distinct key of a measured window (spec/sizing.md §2.6 _Clustered
 * arrivals_): admitted cost / (distinct keys × cost), the one home of that measurement (the
 * self-sized debt meter's sizer and the Limiter's telemetry read it here). Never below 1: a
 * ratio up to 1.1 (the HyperLogLog's error, 3σ), no keys, or figures that are not finite read 1,
 * the model of single requests, so nothing out of the model's domain enters it.
 * @param admittedCost the window's admitted cost (cost units, ≥ 0)
 * @param distinctKeys its distinct keys (an estimate, ≥ 0)
 * @param cost the cost of one request (> 0)
 * @returns B, finite, ≥ 1
 * @internal
 */
export function requestsPerKeyOf(admittedCost: number, distinctKeys: number, cost: number): number {
  const b = admittedCost / (distinctKeys * cost)
  return Number.isFinite(b) && b > 1 + REQUESTS_PER_KEY_NOISE ? b : 1
}

/**
 * The model's clustering fields for a B measured without its spacing (spec/sizing.md §2.6 _Over
 * all requests_, §7): B lumped (spacing 0) and the first request's figure, which stands in for the
 * rate over all requests. The one home of that choice: the Limiter's stats(), the self-sized debt
 * meter's sizer and its budget notice, and `grudge replay` read it here. Why: lumped, a key's own
 * earlier requests never drain, so the all-requests figure at spacing 0 is 2.7–5.5× the rate over all
 * requests that issue 14's clients (3 requests 1 s apart) measure at 4 × 4,096, ρ 0.73 (1.26e-3
 * against 2.3e-4–4.6e-4), and 1.7–2.1× at ρ 1 on 4 × 512; the lumped first-request figure, whose
 * lumping overstates the first request by about what a spaced key's own debt adds, measured within
 * 2× of all requests there (4.66e-4; 7.6e-2–7.9e-2 against 5.4e-2–6.5e-2).
 * @param requestsPerKey B as measured (`requestsPerKeyOf`), ≥ 1
 * @internal
 */
export function measuredClustering(
  requestsPerKey: number,
): Required<Pick<DebtMeterLoad, 'requestsPerKey' | 'requestSpacingMs' | 'firstRequestOnly'>> {
  return { requestsPerKey, requestSpacingMs: 0, firstRequestOnly: true }
}

/**
 * A measured B within this of 1 reads 1: 3σ of the self-sized meter's HyperLogLog (precision 10,
 * 3.3 %; the telemetry's, precision 12, is 1.6 %). One request per key read 1.015 from the
 * telemetry's estimate in a test (200 keys), and a model whose jump is 1.015 × cost walks
 * another grid than one of exactly cost (8 % apart there, up to 10× at rates below 1e-8).
 */
const REQUESTS_PER_KEY_NOISE = 0.1

/** Checked figures of a debt-meter load. */
interface DebtFigures {
  rps: number
  rate: number
  burst: number
  cost: number
  maxDebt: number
  hotKeys: number
  /** N of the Rotator, 0 for one Sketch (no rotation). */
  generations: number
  /** The Rotator's period in s (0 without a Rotator). */
  periodS: number
  /** B, requests per distinct key (≥ 1). */
  perKey: number
  /** The spacing of a key's requests in jump times of one request (spacing × rate / cost), ≥ 0. */
  spacingJ: number
  /** The background's jump, cost units: B × cost, or min(B, burst / cost) × cost at spacing 0 (§2.6). */
  jump: number
  /** The rate of a key's first request only (`firstRequestOnly`), not the mean over its requests. */
  firstOnly: boolean
}

/** The fields of a {@link DebtMeterLoad}, for the unknown-field check. */
const DEBT_LOAD_KEYS = optionKeys<DebtMeterLoad>({
  requestsPerSecond: true,
  rate: true,
  burst: true,
  cost: true,
  maxDebt: true,
  hotKeys: true,
  generations: true,
  periodMs: true,
  requestsPerKey: true,
  requestSpacingMs: true,
  firstRequestOnly: true,
})

/** The fields of a {@link ScoreLoad}, for the unknown-field check. */
const SCORE_LOAD_KEYS = optionKeys<ScoreLoad>({
  eventsPerSecond: true,
  weight: true,
  lambdaPerSecond: true,
  maxScore: true,
  hotKeys: true,
})

/**
 * Refuse a load field the model does not know (a typo such as `requestPerSecond` read as an
 * absent field, a load of 0, and the rate 0), naming the closest known field.
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID`
 */
function checkLoadKeys(load: object, known: readonly string[]): void {
  for (const key of Object.keys(load)) {
    if (known.includes(key)) continue
    const near = closestName(key, known)
    const hint = near === undefined ? `the load's fields: ${known.join(', ')}` : `did you mean "${near}"?`
    throw new GrudgeRangeError('ERR_GRUDGE_SIZING_INVALID', `load.${key}: unknown field (${hint})`)
  }
}

function debtFigures(load: DebtMeterLoad): DebtFigures {
  if (typeof load !== 'object' || load === null) bad('load', 'an object', load)
  checkLoadKeys(load, DEBT_LOAD_KEYS)
  const rps = finiteAtLeast('requestsPerSecond', orDefault(load.requestsPerSecond, 0), 0, false)
  const hotKeys = finiteAtLeast('hotKeys', orDefault(load.hotKeys, 0), 0, false)
  let generations = 0
  if (load.generations !== undefined) {
    const n = load.generations
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 2 || n > 65535)
      bad('generations', 'an integer in [2, 65535]', n)
    generations = n
  } else if (load.periodMs !== undefined) bad('periodMs', 'no period without generations (a Rotator)', load.periodMs)
  const perKey = finiteAtLeast('requestsPerKey', orDefault(load.requestsPerKey, 1), 1, false)
  const spacingMs = finiteAtLeast('requestSpacingMs', orDefault(load.requestSpacingMs, 0), 0, false)
  const firstOnly = load.firstRequestOnly === undefined ? false : load.firstRequestOnly
  if (typeof firstOnly !== 'boolean') bad('firstRequestOnly', 'a boolean', load.firstRequestOnly)
  if (rps === 0 && load.rate === undefined && load.burst === undefined)
    return {
      rps,
      rate: 1,
      burst: 1,
      cost: 1,
      maxDebt: 10,
      hotKeys,
      generations: 0,
      periodS: 0,
      perKey,
      spacingJ: 0,
      jump: 1,
      firstOnly,
    }
  const rate = finiteAtLeast('rate', load.rate, 0, true)
  const burst = finiteAtLeast('burst', load.burst, 0, true)
  const cost = finiteAtLeast('cost', orDefault(load.cost, 1), 0, true)
  if (cost > burst) bad('cost', `a number ≤ burst (${burst})`, cost)
  const maxDebt = finiteAtLeast('maxDebt', orDefault(load.maxDebt, 10 * burst), 0, true)
  if (maxDebt < burst) bad('maxDebt', `a number ≥ burst (${burst})`, maxDebt)
  let periodS = 0
  if (generations > 0) {
    const periodMs =
      load.periodMs === undefined
        ? minPeriodMs(maxDebt, rate, generations)
        : finiteAtLeast('periodMs', load.periodMs, 0, true)
    periodS = periodMs / 1000
    if (!Number.isFinite(periodS) || !Number.isFinite((periodS * rate) / cost))
      bad('periodMs', 'a period whose drain (periodMs × rate / cost) is finite', load.periodMs ?? periodMs)
  }
  const spacingJ = (spacingMs / 1000) * (rate / cost)
  if (!Number.isFinite(spacingJ))
    bad('requestSpacingMs', 'a spacing whose drain (spacing × rate / cost) is finite', spacingMs)
  return {
    rps,
    rate,
    burst,
    cost,
    maxDebt,
    hotKeys,
    generations,
    periodS,
    perKey,
    spacingJ,
    jump: batchJump(perKey, spacingJ, burst, cost),
    firstOnly,
  }
}

/**
 * The jump of one key's batch in a cell (spec/sizing.md §2.6 _Clustered arrivals_): B × cost,
 * but at spacing 0 a key's own debt refuses its requests past burst / cost, so at most
 * max(1, burst / cost) of them are admitted at once.
 */
function batchJump(perKey: number, spacingJ: number, burst: number, cost: number): number {
  return (spacingJ > 0 ? perKey : Math.min(perKey, Math.max(1, burst / cost))) * cost
}

function checkShape(shape: SketchSize): void {
  if (typeof shape !== 'object' || shape === null) bad('shape', 'an object { levels, cellsPerLevel }', shape)
  intAtLeast('levels', shape.levels, 1)
  intAtLeast('cellsPerLevel', shape.cellsPerLevel, 1)
}

/** The share of one level's cells that H hot keys keep full: 1 − (1 − 1/M)^H. */
function hotShare(cellsPerLevel: number, hotKeys: number): number {
  if (cellsPerLevel === 1) return hotKeys > 0 ? 1 : 0
  // −expm1(H·log1p(−1/M)) keeps precision for small H/M
  return -Math.expm1(hotKeys * Math.log1p(-1 / cellsPerLevel))
}

/**
 * Above this load factor the carry-forward model gives way to the stationary one: every
 * generation's cells sit near the ceiling within a fraction of a period, floors or not
 * (§6 measured the DebtMeter within 5 % of the stationary model at ρ = 2), and the walk's
 * Poisson steps grow.
 */
const CARRY_MAX_LOAD_FACTOR = 2
/**
 * Below this tail of one stationary cell (no feedback) the carry-forward model is not walked:
 * a floor lifts a cell only to the min of the key's cells in the deciding generation, a level
 * that other cells reached, and §6 measured the carry raising rates by at most 3.4× where the
 * tail is large; here the stationary rate is below 1e-6^L (a cheap answer for the margins of
 * millions of jumps that made stats() spin, test/regressions/huge-burst-model.test.ts).
 */
const CARRY_MIN_TAIL = 1e-6

/** The last few carry-forward evaluations (a Limiter's stats() and a sizer ask for the same figures again and again). */
const carryMemo = new Map<string, number[]>()
const CARRY_MEMO_SIZE = 32

function carryRates(
  rho: number,
  L: number,
  x: number,
  top: number,
  f: DebtFigures,
  hot: number,
  qs: readonly number[],
): number[] {
  const periodJ = (f.periodS * f.rate) / f.jump
  const key = `${rho},${L},${x},${top},${f.generations},${periodJ},${hot},${qs.join(';')}`
  const hit = carryMemo.get(key)
  if (hit !== undefined) return hit
  const r = carryForwardRates(rho, L, x, top, f.generations, periodJ, hot, qs)
  if (carryMemo.size >= CARRY_MEMO_SIZE) carryMemo.delete(carryMemo.keys().next().value as string)
  carryMemo.set(key, r)
  return r
}

function debtRate(shape: SketchSize, f: DebtFigures): number {
  const r = debtRates(shape, f, ownDebts(shape, f))
  return f.firstOnly ? r.first : r.rate
}

/**
 * The requests 1 … K of a key that the mean over all requests weighs, each with its weight: K =
 * ⌈B⌉ (at spacing 0 at most burst / cost: a key's own limit refuses the rest, not the sketch),
 * the last weighted by B's fraction. Past OWN_DEBT_POINTS requests, that many evenly spread,
 * each weighing the requests it stands for (a bounded evaluation for a large measured B).
 */
const OWN_DEBT_POINTS = 16

/**
 * The own debts of a key's later requests and their weights (spec/sizing.md §2.6 _Over all
 * requests_): `debts[i]` in requests of `cost` that the key's earlier requests left in each of its
 * cells when its request k arrives, `weights[i]` how many of its B requests that stands for (the
 * first request, own debt 0, weighs 1 and is not listed). Empty for B = 1.
 */
function ownDebts(shape: SketchSize, f: DebtFigures): { debts: number[]; weights: number[]; ks: number[] } {
  const debts: number[] = []
  const weights: number[] = []
  const ks: number[] = []
  const B = f.spacingJ > 0 ? f.perKey : Math.min(f.perKey, Math.max(1, f.burst / f.cost))
  const K = Math.ceil(B - 1e-9)
  if (K <= 1) return { debts, weights, ks }
  const rho = debtMeterLoadFactor(shape.cellsPerLevel, f.rps, f.rate, f.cost, f.hotKeys)
  const x = (f.burst - f.cost) / f.cost
  const climb = climbSpeed(rho, f.jump / f.cost)
  const weightOf = (k: number): number => (k === K ? B - (K - 1) : 1)
  if (K <= OWN_DEBT_POINTS) {
    for (let k = 2; k <= K; k++) {
      debts.push(ownDebt(k, x, f.spacingJ, climb))
      weights.push(weightOf(k))
      ks.push(k)
    }
  } else {
    // requests 2 … K in OWN_DEBT_POINTS − 1 runs, each read at its middle request
    const runs = OWN_DEBT_POINTS - 1
    for (let i = 0; i < runs; i++) {
      const a = 2 + Math.floor(((K - 1) * i) / runs)
      const b = 1 + Math.floor(((K - 1) * (i + 1)) / runs)
      let w = 0
      for (let k = a; k <= b; k++) w += weightOf(k)
      debts.push(ownDebt(Math.round((a + b) / 2), x, f.spacingJ, climb))
      weights.push(w)
      ks.push(Math.round((a + b) / 2))
    }
  }
  return { debts, weights, ks }
}

/**
 * The debt a key's own earlier requests leave in one of its cells when its k-th request arrives,
 * in requests of cost, given that the cell's background is high enough to refuse it (spec/sizing.md
 * §2.6 _Over all requests_): the one home of the rule. A cell drains at `rate` whatever holds its
 * content, so the key's k − 1 earlier requests stay in full while the background is busy, and
 * drain only while the background alone would be idle (Lindley's recursion: the content with the
 * key's requests is the background's plus theirs less the background's idle time since).
 * In the Cramér regime a background at level y was reached by a climb at the tilted drift v
 * (`climbSpeed`) from its last idle time, y / v ago (Asmussen & Albrecher, _Ruin Probabilities_,
 * 2010, ch. IV.4, the exponential change of measure: the path to a high level), so of the
 * k − 1 spacings T = (k − 1)·s the background idled max(0, T − y / v), with y = x − D, x the
 * margin: D = (k − 1) − max(0, T − (x − D) / v), solved for D, at least the debt of the key alone,
 * max(0, (k − 1) − T), and at most x (the key within its own limit). At ρ ≥ 1 (no idle time
 * near the margin) v = ∞... read as never idle: D = k − 1.
 * @param k the request, ≥ 2
 * @param x the margin (burst − cost) / cost
 * @param spacingJ s, jump times of one request (cost / rate) between the key's requests
 * @param climb v, requests of content per jump time, or Infinity when the cell never idles
 * @internal
 */
export function ownDebt(k: number, x: number, spacingJ: number, climb: number): number {
  const d0 = k - 1
  const T = d0 * spacingJ
  let d = d0
  if (climb !== Infinity && T > (x - d0) / climb) d = (d0 - T + x / climb) / (1 + 1 / climb)
  return Math.min(x, Math.max(0, d0 - T, Math.min(d0, d)))
}

/**
 * The share of time, in jump times of one request (cost / rate), over which the start of one other
 * key's spread batch sharing a cell makes the cell refuse a key's k-th request (spec/sizing.md
 * §2.6 _Overlapping spread batches_): the measure of the offsets τ for which the content just before
 * the key's request k exceeds the margin, with the key's own requests at 0, s, …, (k − 1)·s and
 * the other's ⌈B⌉ at τ, τ + s, …, each one request of content, the cell otherwise empty and
 * draining at `rate` (Lindley's recursion, exact for these few arrivals). Two spread batches in one
 * cell arrive at 2 / s requests per jump time, so for s < 2 the cell fills while they overlap
 * whatever the load: a state of two keys, which the background's tail (one key's batches lumped
 * and spread, a Cramér correction) does not hold, and at a small margin the one that refuses
 * (burst 2, B 3 at exactly the key's rate, ρ 0.05, L 2: §6.1 measured 7.1e-4 where the tail alone
 * stated 6.9e-6). Swept on a grid of at most OVERLAP_POINTS offsets.
 * @param k the key's request, ≥ 2
 * @param batch B, the other key's requests (its ceiling is taken)
 * @param spacingJ s > 0, jump times between a key's requests
 * @param x the margin (burst − cost) / cost, requests
 * @returns jump times (≥ 0)
 * @internal
 */
export function overlapShare(k: number, batch: number, spacingJ: number, x: number): number {
  const n = Math.ceil(batch - 1e-9)
  const tq = (k - 1) * spacingJ
  // an other batch that starts before lo has drained (n requests, at most n of content) before the key's first
  const lo = -(n - 1) * spacingJ - n - x
  const points = Math.min(OVERLAP_POINTS, Math.ceil(((tq - lo) * 16) / Math.min(1, spacingJ)))
  const h = (tq - lo) / points
  let refused = 0
  for (let p = 0; p < points; p++) {
    const tau = lo + (p + 0.5) * h
    // merge the two arithmetic sequences below tq, in time order
    let w = 0
    let last = -Infinity
    let i = 0
    let j = 0
    for (;;) {
      const a = i < k - 1 ? i * spacingJ : Infinity
      const b = j < n ? tau + j * spacingJ : Infinity
      const t = Math.min(a, b)
      if (!(t < tq)) break
      w = Math.max(0, w - (t - last)) + 1
      last = t
      if (a <= b) i++
      else j++
    }
    if (Math.max(0, w - (tq - last)) > x + 1e-9) refused++
  }
  return refused * h
}

/** The offsets `overlapShare` sweeps at most (a few ms for a large B). */
const OVERLAP_POINTS = 1024

/**
 * The drift at which one cell's background climbs to a high level, requests of content per
 * jump time of one request: ψ'(R) = ρ·e^(R·B) − 1 for batches of B at ρ / B per jump time, R
 * their adjustment coefficient, (ρ/B)(e^(R·B) − 1) = R (Lundberg 1926; Asmussen & Albrecher 2010,
 * ch. IV.4: the drift under the tilted measure). Infinity at ρ ≥ 1: there the cells sit near the
 * ceiling and do not idle (`ownDebt` then keeps a key's debt whole).
 */
function climbSpeed(rho: number, batch: number): number {
  if (!(rho < 1)) return Infinity
  if (!(rho > 0)) return 0
  const r = adjustmentCoefficient(rho / batch, batch)
  return rho * Math.exp(r * batch) - 1
}

/** R > 0 with λ(e^(R·B) − 1) = R, λ·B < 1, by 64 bisection steps (the lower end: ≤ the root). */
function adjustmentCoefficient(lam: number, batch: number): number {
  let hi = 1 / batch
  while (lam * Math.expm1(hi * batch) < hi) hi *= 2
  let lo = 0
  for (let k = 0; k < 64; k++) {
    const mid = (lo + hi) / 2
    if (lam * Math.expm1(mid * batch) < mid) lo = mid
    else hi = mid
  }
  return lo
}

/**
 * The first request's rate and the mean over all of a key's requests (spec/sizing.md §2.4–2.6):
 * `first` a fresh key's, `rate` the mean over its B requests (own debts `own`, see `ownDebts`),
 * or `first` when there are none.
 */
function debtRates(
  shape: SketchSize,
  f: DebtFigures,
  own: { debts: number[]; weights: number[]; ks?: number[] },
): { first: number; rate: number } {
  const hot = hotShare(shape.cellsPerLevel, f.hotKeys)
  const rho = debtMeterLoadFactor(shape.cellsPerLevel, f.rps, f.rate, f.cost, f.hotKeys)
  const L = shape.levels
  if (rho === 0) return { first: Math.pow(hot, L), rate: Math.pow(hot, L) }
  // the later requests' margins in the background's jump units: burst − cost − D·cost
  const qs = own.debts.map((d) => Math.max(0, f.burst - f.cost - d * f.cost) / f.jump)
  // the other keys' later requests meet these margins too: the feedback of §2.3 acts from their
  // mean, D̄ below the fresh margin (their batches are admitted in part near it)
  let dSum = 0
  let wSum = 1
  own.weights.forEach((w, i) => {
    dSum += w * own.debts[i]
    wSum += w
  })
  const fbDrop = (dSum / wSum) * (f.cost / f.jump)
  let rates = debtRatesAt(rho, L, f, hot, qs, fbDrop)
  // past the carry-forward's domain a Rotator's rate is the stationary one, which is below the
  // carry's at the hand-over (0.50 against 0.66 at ρ 2, L 6, burst 10): more load must never
  // read as fewer refusals, so the rate there is held until the stationary one passes it
  if (f.generations > 0 && rho > CARRY_MAX_LOAD_FACTOR) {
    const held = debtRatesAt(CARRY_MAX_LOAD_FACTOR, L, f, hot, qs, fbDrop)
    rates = rates.map((r, i) => Math.max(r, held[i]))
  }
  if (f.jump !== f.cost) {
    // batches (§2.6): the lumped rate, each level's background tail scaled by the spread factor,
    // never below the rate of single requests (a spread batch is no burstier than Poisson singles)
    const spread = spreadFactor(rho, f.jump / f.cost, f.spacingJ)
    if (spread < 1)
      rates = rates.map((r) => {
        const p = Math.max(0, (Math.pow(r, 1 / L) - hot) / (1 - hot))
        return Math.pow(hot + (1 - hot) * p * spread, L)
      })
    const single = debtRates(shape, { ...f, perKey: 1, spacingJ: 0, jump: f.cost }, { debts: [], weights: [] }).first
    rates = rates.map((r) => Math.max(r, single))
  }
  if (f.spacingJ > 0 && rho < 1 && own.ks !== undefined) {
    // overlapping spread batches (§2.6): a level refuses a later request when one other key's
    // batch shares the cell at an offset that fills it, at the other batches' arrival rate ρ / B
    // per jump time, a state the tail leaves out: per level added to it. Not at ρ ≥ 1, where
    // the cells never idle and the key's own debt is already kept whole (`ownDebt`)
    const batch = f.jump / f.cost
    const x = (f.burst - f.cost) / f.cost
    own.ks.forEach((k, i) => {
      const pov = -Math.expm1(-(rho / batch) * overlapShare(k, batch, f.spacingJ, x))
      const pl = Math.pow(rates[i + 1], 1 / L)
      rates[i + 1] = Math.pow(Math.max(pl, hot + (1 - hot) * pov), L)
    })
  }
  const first = rates[0]
  if (own.debts.length === 0) return { first, rate: first }
  // the mean over the key's requests; a later one is never refused more rarely than its first
  let sum = first
  let weight = 1
  own.weights.forEach((w, i) => {
    sum += w * Math.max(first, rates[i + 1])
    weight += w
  })
  return { first, rate: Math.min(1, sum / weight) }
}

/**
 * The spread factor of a batch of B requests, one jump of one request's cost every s (jump
 * times), against the same B lumped into one jump (spec/sizing.md §2.6 _Clustered arrivals_):
 * the one home of the rule. Near the margin a cell is busy, so a batch that began within the
 * last (B − 1)·s has k = B − 1 − ⌊u/s⌋ of its requests still to come at its age u: the cell
 * holds the lumped content less that pending work P. Its tail is exponential in the Cramér
 * regime, P(W > x) ≈ C·e^(−R·x), R the adjustment coefficient of the lumped batches,
 * (ρ/B)(e^(R·B) − 1) = R (Lundberg 1926; Asmussen & Albrecher, _Ruin Probabilities_, 2010,
 * Thm IV.5.2), and on the way up to a high level the batches come at the tilted rate
 * λ̃ = (ρ/B)·e^(R·B) (the exponential change of measure of the same theory, ch. IV.4), so the
 * tail falls by E[e^(−R·P)] = exp(−λ̃·s·Σ_{k=1}^{B−1} (1 − e^(−R·k))). At ρ ≥ 1 there is no R
 * (cells sit near the ceiling): 1. B may be fractional (a mean): the sum runs to ⌈B⌉ − 1 with the
 * last term weighted by the fraction.
 * @param rho ρ of a level (> 0)
 * @param batch B, requests lumped into one jump (≥ 1)
 * @param spacingJ s, the spacing in jump times of one request (≥ 0)
 * @returns a factor in (0, 1]
 * @internal
 */
export function spreadFactor(rho: number, batch: number, spacingJ: number): number {
  if (!(rho < 1) || spacingJ === 0 || batch <= 1) return 1
  const lam = rho / batch
  // R: λ(e^(R·B) − 1) = R, convex, the root on (0, R̄], R̄ where λ(e^(R̄B) − 1) > R̄
  const r = adjustmentCoefficient(lam, batch)
  const tilted = lam * Math.exp(r * batch)
  // Σ_{k=1}^{n} (1 − e^(−R·k)) = n − e^(−R)(1 − e^(−R·n)) / (1 − e^(−R)), n = ⌈B⌉ − 2 whole
  // terms, then the last, k = ⌈B⌉ − 1, weighted by B − 1 − n (1 for an integer B): O(1) for any B
  const n = Math.ceil(batch) - 2
  const whole = n <= 0 ? 0 : n - (Math.exp(-r) * -Math.expm1(-r * n)) / -Math.expm1(-r)
  const sum = whole + (batch - 1 - Math.max(0, n)) * -Math.expm1(-r * (n + 1))
  return Math.exp(-tilted * spacingJ * sum)
}

/**
 * The rates at the load factor ρ > 0 (the hot share `hot` given), before the batches' spread:
 * [a fresh key's, then for each margin of `qs` (jump units, ≤ the fresh key's) the chance that
 * all L cells are over it], the cells fed with the feedback at the fresh key's margin.
 */
function debtRatesAt(
  rho: number,
  L: number,
  f: DebtFigures,
  hot: number,
  qs: readonly number[],
  fbDrop: number,
): number[] {
  // in units of the background's jump (one request's cost, or a key's batch, §2.6); the margin
  // stays a fresh request's: burst − cost
  const x = (f.burst - f.cost) / f.jump
  const top = f.maxDebt / f.jump
  // the feedback's margin (§2.3): the fresh one, or D̄ below it (§2.6 _Over all requests_); the
  // fresh margin is then read as one more query
  const xFb = Math.max(0, x - fbDrop)
  const reads = xFb === x ? qs : [x, ...qs]
  const answer = (all: number[]): number[] => (xFb === x ? all : all.slice(1))
  // a level refuses if the key's cell there is a hot key's, or its background is over the margin
  const level = (p: number): number => 1 - (1 - hot) * (1 - p)
  const beta = (p: number): number => (L === 1 ? 0 : 1 - Math.pow(level(p), L - 1))
  const allL = (p: number): number => Math.pow(level(p), L)
  // heavy load (§2.5 _Heavy load_): the background tail's fixed point at DEBT_HEAVY_LOAD, its
  // complement scaled as 1/ρ (past the carry-forward's domain: the stationary model)
  if (rho > DEBT_HEAVY_LOAD) {
    const p = backgroundTail(DEBT_HEAVY_LOAD, L, xFb, top, hot)
    const lower = debtCellTails(DEBT_HEAVY_LOAD, xFb, top, beta(p), reads)
    return answer([p, ...lower].map((t) => allL(heavyLoadTail(rho, t))))
  }
  // one stationary cell's open tail (no feedback): the carry-forward gate and the lower end
  // of the feedback's bisection both read it (one integration, not two: it is most of a
  // sizer's cost at light loads, where the walk runs to the ceiling)
  const open = debtCellTail(rho, x, top, 1)
  // a Rotator's generations are floored while young and never stationary (§2.5); x < top
  // (a margin at the ceiling refuses nothing) and a finite grid are the walk's domain
  if (
    f.generations > 0 &&
    rho <= CARRY_MAX_LOAD_FACTOR &&
    x < top &&
    (f.periodS * f.rate) / f.jump < 2 ** 40 &&
    open >= CARRY_MIN_TAIL
  )
    return answer(carryRates(rho, L, xFb, top, f, hot, reads))
  const p = backgroundTail(rho, L, xFb, top, hot, xFb === x ? open : undefined)
  return answer([p, ...debtCellTails(rho, xFb, top, beta(p), reads)].map(allL))
}

/**
 * P(content > q) of one debt cell for each q of `qs` (jump units, each in [0, top]), the cell fed
 * at ρ ≤ DEBT_HEAVY_LOAD below the margin x and at β·ρ above it (as `debtCellTail`): the lower
 * margins a key's later requests meet (§2.6 _Over all requests_). One walk for all of them.
 */
function debtCellTails(rho: number, x: number, top: number, beta: number, qs: readonly number[]): number[] {
  if (qs.length === 0) return []
  if (x >= top) return qs.map((q) => (q >= top ? 0 : debtCellTail(rho, q, top, 1)))
  const order = qs.map((_, i) => i).sort((a, b) => qs[a] - qs[b])
  const out = qs.map(() => 0)
  const walked: number[] = []
  for (const i of order) {
    // Lundberg's bound is proven at any margin (§2.5); below the floor it stands, as for x
    const bound = rho < 1 ? lundbergBound(rho, qs[i]) : 1
    if (bound <= DEBT_TAIL_FLOOR) out[i] = bound
    else walked.push(i)
  }
  if (walked.length > 0) {
    const zx = Math.exp(rho * Math.min(1, x))
    const head = (u: number): number =>
      u <= x ? Math.exp(rho * u) : zx * (1 + (beta === 0 ? rho * (u - x) : Math.expm1(rho * beta * (u - x)) / beta))
    const tails = crossingTails(
      head,
      () => rho,
      top,
      walked.map((i) => qs[i]),
      rho,
      x,
      beta,
    )
    walked.forEach((i, j) => (out[i] = tails[j]))
  }
  return out
}

/**
 * P(a background cell > x) of the stationary model with feedback (§2.3) at ρ ≤ DEBT_HEAVY_LOAD:
 * the fixed point of p = tail(β(p)), β = 1 − q^(L−1), q = 1 − (1 − hot)(1 − p). `open` is the
 * tail without feedback (β = 1), computed when not given.
 */
function backgroundTail(rho: number, L: number, x: number, top: number, hot: number, open?: number): number {
  const level = (p: number): number => 1 - (1 - hot) * (1 - p)
  // feedback (§2.3): above the margin a cell is fed only by requests that another level
  // admits, β = 1 − q^(L−1); the tail p is the fixed point of p = tail(β(p)), found by
  // bisection (the right side falls as p grows)
  const tailAt = (p: number): number => debtCellTail(rho, x, top, L === 1 ? 0 : 1 - Math.pow(level(p), L - 1))
  let p = open ?? debtCellTail(rho, x, top, 1)
  // the tail at the least feeding (β at p = open) is the fixed point's lower end: when it is
  // already `open` (one level, or a tail clamped to 1 by the grid cap) no bisection is needed
  if (Math.pow(level(p), L - 1) > 1e-4 && tailAt(p) < p) {
    let lo = 0
    let hi = p
    for (let k = 0; k < 40 && hi - lo > 1e-4 * hi; k++) {
      const mid = (lo + hi) / 2
      if (tailAt(mid) > mid) lo = mid
      else hi = mid
    }
    p = (lo + hi) / 2
  }
  return p
}

/**
 * The chance that a debt meter refuses a fresh (innocent, debt-free) key's request because
 * of other keys' debt in its cells: q^L with, per level,
 * `q = 1 − (1 − h)(1 − P(W > burst − cost))`, where `h = 1 − (1 − 1/M)^H` is the share of
 * cells a hot key holds full (the Bloom-filter argument per level; Cormode & Muthukrishnan,
 * "An improved data stream summary: the count-min sketch and its applications", J.
 * Algorithms 2005) and W the stationary debt of a cell fed Poisson arrivals of `cost` at
 * load ρ = (requestsPerSecond × cost − H × rate) / (M × rate), drained at `rate` and clamped
 * at `maxDebt`: the M/D/1 workload with a finite dam (spec/sizing.md §2). With no load it is
 * the hot-key formula `(1 − (1 − 1/M)^H)^L`. With `load.generations` (every debt meter: a
 * Rotator) the cells are those of a Rotator with carry-forward, walked through the rotation
 * cycle (§2.5; one or two walks of at most 10⁶ cell-steps each whatever the figures, 3–30 ms on
 * this project's 2-core machine, and the last 32 answers are kept).
 * Non-decreasing in the load; above ρ = 32 the heavy-load limit 1 − p ∝ 1/ρ (§2.5 _Heavy load_),
 * → 1, in the work of ρ = 32 (finite at any finite load). With `requestsPerKey` B > 1 (§2.6) the
 * cells are fed in batches, and the rate is by default the mean over a key's B requests, the k-th
 * meeting the margin burst − cost − D_k, D_k its own earlier debt (`ownDebt`: k − 1 requests less
 * the background's idle time since its first; Lindley 1952, Asmussen & Albrecher 2010 ch. IV.4),
 * read from the same walk (at most 16 margins); `firstRequestOnly: true` gives the first request's
 * rate alone (§2.6 _Over all requests_).
 * @param shape `{ levels, cellsPerLevel }`, integers ≥ 1
 * @param load see {@link DebtMeterLoad}
 * @returns a probability in [0, 1], per request
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain, NaN or negative loads
 */
export function sketchFalsePositiveRate(shape: SketchSize, load: DebtMeterLoad): number {
  checkShape(shape)
  return debtRate(shape, debtFigures(load))
}

/**
 * The fewest levels L that keep {@link sketchFalsePositiveRate} at or below
 * `targetFalsePositive` for M cells per level and this load: `ceil(ln p / ln q)`, at least
 * 1, q the per-level rate.
 * @param cellsPerLevel M, integer > 1
 * @param load see {@link DebtMeterLoad}; it must not saturate a level (q < 1)
 * @param targetFalsePositive p in (0, 1)
 * @returns L, an integer ≥ 1
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for M ≤ 1, p outside (0, 1), bad loads,
 * or a load under which every cell is full (no L helps)
 */
export function sketchSuggestLevels(cellsPerLevel: number, load: DebtMeterLoad, targetFalsePositive: number): number {
  if (!Number.isInteger(cellsPerLevel) || cellsPerLevel <= 1) bad('cellsPerLevel', 'an integer > 1', cellsPerLevel)
  if (typeof targetFalsePositive !== 'number' || !(targetFalsePositive > 0 && targetFalsePositive < 1))
    bad('targetFalsePositive', 'a number in (0, 1)', targetFalsePositive)
  const f = debtFigures(load)
  const perLevel = debtRate({ levels: 1, cellsPerLevel }, f)
  if (perLevel >= 1) bad('load', `a load that leaves some of ${cellsPerLevel} cells below the burst`, load)
  if (perLevel === 0) return 1
  return Math.max(1, Math.ceil(Math.log(targetFalsePositive) / Math.log(perLevel)))
}

/** The load of an exponentially decaying score (the `abuse` and `fairness` policies). */
export interface ScoreLoad {
  /** Scored events per second that raise scores, all keys together (finite, ≥ 0): failures for fairness, responses with a positive weight for abuse. */
  eventsPerSecond: number
  /** The mean positive delta of one event (finite, > 0): `failureDelta`, or the abuse weight. */
  weight: number
  /** Decay λ in 1/s (finite, > 0): `lambdaPerSecond`, or ln 2 / halfLife. */
  lambdaPerSecond: number
  /** The score ceiling hi (finite, > 0): 1 for fairness, `maxScore` for abuse. */
  maxScore: number
  /** H, keys whose score sits at the top (finite, ≥ 0); default 0. */
  hotKeys?: number
}

function scoreFigures(load: ScoreLoad): Required<ScoreLoad> {
  if (typeof load !== 'object' || load === null) bad('load', 'an object', load)
  checkLoadKeys(load, SCORE_LOAD_KEYS)
  return {
    eventsPerSecond: finiteAtLeast('eventsPerSecond', load.eventsPerSecond, 0, false),
    weight: finiteAtLeast('weight', load.weight, 0, true),
    lambdaPerSecond: finiteAtLeast('lambdaPerSecond', load.lambdaPerSecond, 0, true),
    maxScore: finiteAtLeast('maxScore', load.maxScore, 0, true),
    hotKeys: finiteAtLeast('hotKeys', orDefault(load.hotKeys, 0), 0, false),
  }
}

/**
 * The mean background of one cell of an exponentially decaying score: (events per second ×
 * weight) / (M × λ) (Campbell's theorem for shot noise).
 * @internal
 */
export function scoreBackground(cellsPerLevel: number, load: ScoreLoad): number {
  return (load.eventsPerSecond * load.weight) / (cellsPerLevel * load.lambdaPerSecond)
}

function blockRate(shape: SketchSize, f: Required<ScoreLoad>, threshold: number): number {
  const hot = hotShare(shape.cellsPerLevel, f.hotKeys)
  const a = f.eventsPerSecond / (shape.cellsPerLevel * f.lambdaPerSecond)
  const cell = threshold >= f.maxScore ? 0 : scoreCellTails(a, [threshold / f.weight], f.maxScore / f.weight)[0]
  return Math.pow(1 - (1 - hot) * (1 - cell), shape.levels)
}

/**
 * The chance that the abuse score blocks a fresh key (score 0 of its own) because all L of
 * its cells carry at least `threshold` of other keys' score: q^L with, per level,
 * `q = 1 − (1 − h)(1 − P(S ≥ threshold))`, h the hot-key share as in
 * {@link sketchFalsePositiveRate}, S the shot noise of Poisson events of `weight` decaying
 * at λ (Takács 1955; mean (events per second × weight) / (M × λ)) clamped at `maxScore`
 * (spec/sizing.md §3).
 * @param shape `{ levels, cellsPerLevel }`
 * @param load see {@link ScoreLoad}
 * @param threshold the abuse threshold, finite, > 0
 * @returns a probability in [0, 1] per request
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain, NaN or negative loads
 */
export function abuseFalseBlockRate(shape: SketchSize, load: ScoreLoad, threshold: number): number {
  checkShape(shape)
  const f = scoreFigures(load)
  finiteAtLeast('threshold', threshold, 0, true)
  return blockRate(shape, f, threshold)
}

/** Intervals of the integral of the fairness throttle over s in [0, min(1, hi)], half of them in each half. */
const THROTTLE_POINTS = 512

function throttleRate(shape: SketchSize, f: Required<ScoreLoad>): number {
  const hot = hotShare(shape.cellsPerLevel, f.hotKeys)
  const a = f.eventsPerSecond / (shape.cellsPerLevel * f.lambdaPerSecond)
  const top = Math.min(1, f.maxScore)
  // points crowd towards 0, where the tail falls as 1 − c·s^a, steep for small a, and towards
  // the ceiling, where it falls as 1 − (s/hi)^a, steep for large a (within hi/a of it): s = top ·
  // (2k/K)^4 / 2 in the lower half, mirrored in the upper (a last interval of top/256 capped
  // the rate at 1 − 0.0155/2 = 0.99223 for any a ≳ 10^3, where it tends to 1)
  const half = THROTTLE_POINTS / 2
  const ss: number[] = []
  for (let k = 0; k <= half; k++) ss.push((top * Math.pow(k / half, 4)) / 2)
  for (let k = half - 1; k >= 0; k--) ss.push(top - (top * Math.pow(k / half, 4)) / 2)
  const tails = scoreCellTails(
    a,
    ss.map((v) => v / f.weight),
    f.maxScore / f.weight,
  )
  // E[min(S_1..S_L, 1)] = ∫_0^1 P(min > s) ds = ∫ Π_l P(S_l > s) ds, trapezoid
  let sum = 0
  // at s = 0: every cell is above 0 once any event has come (a > 0); none without events
  let prev = Math.pow(1 - (1 - hot) * (1 - tails[0]), shape.levels)
  for (let k = 1; k <= THROTTLE_POINTS; k++) {
    const v = Math.pow(1 - (1 - hot) * (1 - tails[k]), shape.levels)
    sum += ((prev + v) / 2) * (ss[k] - ss[k - 1])
    prev = v
  }
  return sum
}

/**
 * The chance that the feedback score throttles a fresh key's request: the key's score is the
 * minimum of its L cells and it is throttled with that probability, so the rate is
 * E[min(S_1, …, S_L)] = ∫₀¹ Π_l P(S_l > s) ds, each S_l the background of
 * {@link abuseFalseBlockRate} (or 1 in a hot key's cell).
 * @param shape `{ levels, cellsPerLevel }`
 * @param load see {@link ScoreLoad} (`weight` = failureDelta, `maxScore` = 1)
 * @returns a probability in [0, 1] per request
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain, NaN or negative loads
 */
export function fairnessFalseThrottleRate(shape: SketchSize, load: ScoreLoad): number {
  checkShape(shape)
  return throttleRate(shape, scoreFigures(load))
}

/**
 * The unbudgeted range of cells per level a self-sized policy may ask for, `{ minCells: 16,
 * maxCells: 2^30 }` (powers of two; the Rotator then clamps to the policy's budget). The one
 * home of that range: the abuse, fairness and debt-meter sizers spread it into their
 * {@link CellsForLoadOptions}.
 * @internal
 */
export const SELF_SIZED_CELL_RANGE: Readonly<{ minCells: number; maxCells: number }> = Object.freeze({
  minCells: 16,
  maxCells: 1 << 30,
})

/**
 * The false-reject rate a sizer reaches when not told otherwise (`debtMeterCellsForLoad`,
 * `scoreCellsForLoad`, a self-sized policy): 1e-5 per request.
 * @internal
 */
export const DEFAULT_TARGET_FALSE_REJECT = 1e-5

/**
 * The load factor ρ a self-sized debt meter stays under, its sizer's second target beside the
 * false-reject rate (`debtMeterCellsFor`, `maxLoadFactor`): a key held at its limit keeps about
 * 1 − ρ of its rate (spec/sizing.md §2.6), so 0.05 keeps heavy hitters' aggregate within 5 % of
 * an exact GCRA. Its Rotator grows early when the sizer asks for twice the youngest's cells, i.e.
 * once the youngest's ρ passes it; `stats().suggested` asks the same (spec/sizing.md §7). The one home.
 * @internal
 */
export const DEBT_METER_MAX_LOAD_FACTOR = 0.05

/** What {@link debtMeterCellsForLoad} and {@link scoreCellsForLoad} take besides the load. */
export interface CellsForLoadOptions {
  /** L, levels: integer in [1, 64]. */
  levels: number
  /** The false-reject rate to reach, in (0, 1); default 1e-5. */
  targetFalseReject?: number
  /** The smallest M to return, a power of two ≥ 1; default 16. */
  minCells?: number
  /** The largest M to return (the budget's), a power of two ≥ minCells; default 2^24. */
  maxCells?: number
  /**
   * Debt meter only: the largest load factor ρ to accept, in (0, 1]; default 1 (no cap beyond the
   * target). A key held at its limit shares its cells with the background and keeps about 1 − ρ
   * of its rate (§2.6), so a cap of 0.05 keeps such keys within 5 % of an exact GCRA.
   */
  maxLoadFactor?: number
}

function powerOfTwo(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1 || (v & (v - 1)) !== 0 || v > 2 ** 30) bad(name, 'a power of two in [1, 2^30]', v)
  return v
}

/** {@link CellsForLoadOptions} checked, defaults filled in. */
interface CellsSearch {
  levels: number
  target: number
  lo: number
  hi: number
  /** The figures as a memo key. */
  key: string
}

function cellsSearch(o: CellsForLoadOptions): CellsSearch {
  if (typeof o !== 'object' || o === null) bad('options', 'an object { levels, … }', o)
  const levels = o.levels
  if (!Number.isInteger(levels) || levels < 1 || levels > 64) bad('levels', 'an integer in [1, 64]', levels)
  const target = o.targetFalseReject ?? DEFAULT_TARGET_FALSE_REJECT
  if (typeof target !== 'number' || !(target > 0 && target < 1)) bad('targetFalseReject', 'a number in (0, 1)', target)
  const lo = powerOfTwo('minCells', o.minCells ?? 16)
  const hi = powerOfTwo('maxCells', o.maxCells ?? 1 << 24)
  if (hi < lo) bad('maxCells', `a power of two ≥ minCells (${lo})`, hi)
  return { levels, target, lo, hi, key: `${levels},${target},${lo},${hi}` }
}

/**
 * The smallest power of two M in [minCells, maxCells] with `rateAt` ≤ the target, maxCells when
 * none below it meets it. The rate falls as M grows (more cells, less load per cell), so the
 * first shape meeting the target is found by search over the exponents; maxCells itself is
 * never evaluated: a search that ends there returns it whether it meets the target or not
 * (the bisection this replaced evaluated it first, at the lightest load per cell, whose tail
 * integration walks to the ceiling: about 1 ms each).
 *
 * With `skip` (the debt meter: shapes over its load-factor cap, which miss at no cost) the
 * search runs from below, past the skipped shapes, galloping (steps 1, 2, 4, … exponents up,
 * then bisection back; Bentley & Yao, "An almost optimal algorithm for unbounded searching",
 * IPL 1976): a self-sized meter's load is answered by its first candidate, where the bisection
 * took six evaluations from the largest shapes down, most of a self-sized replay's CPU. Without
 * it (the scores) a bisection: their smallest shapes under a heavy load are the costly ones
 * (many grid points per jump), so the search starts in the middle.
 *
 * Same answer as the bisection over the whole range for any rate monotone in M
 * (`test/sketch/sizing-search.test.ts` compares them on a grid of loads).
 */
function smallestCells(
  o: CellsSearch,
  rateAt: (shape: SketchSize) => number,
  skip?: (cellsPerLevel: number) => boolean,
): number {
  const { levels, target, lo, hi } = o
  const top = Math.log2(hi)
  const meets = (exp: number): boolean => rateAt({ levels, cellsPerLevel: 2 ** exp }) <= target
  // the answer is in (missed, end]: end meets the target, or is maxCells (the answer either way)
  let missed = Math.log2(lo) - 1
  let end = top
  if (skip !== undefined) {
    end = missed + 1
    while (end < top && skip(2 ** end)) missed = end++
    for (let step = 1; end < top && !meets(end); step *= 2) {
      missed = end
      end = Math.min(top, end + step)
    }
  }
  let a = missed + 1
  while (a < end) {
    const m = (a + end) >> 1
    if (meets(m)) end = m
    else a = m + 1
  }
  return 2 ** a
}

/**
 * The last few sizers' answers, by every figure they read. A self-sized Rotator asks at every
 * check (each second of its clock), and a check window's load is a count over a whole second:
 * the same few loads come back again and again. Exact keys only (no quantised load), so an
 * answer is the one the search would give; options are checked before the lookup.
 */
const cellsMemo = new Map<string, number>()
const CELLS_MEMO_SIZE = 64

function remembered(key: string, compute: () => number): number {
  const hit = cellsMemo.get(key)
  if (hit !== undefined) return hit
  const cells = compute()
  if (cellsMemo.size >= CELLS_MEMO_SIZE) cellsMemo.delete(cellsMemo.keys().next().value as string)
  cellsMemo.set(key, cells)
  return cells
}

/**
 * The fewest cells per level, a power of two in [minCells, maxCells], at which a debt meter
 * of L levels keeps {@link sketchFalsePositiveRate} at or below the target for this load;
 * `maxCells` when even that does not reach it (the caller then keeps the largest size and
 * says so). What a self-sizing Rotator asks for each new generation.
 * @param load see {@link DebtMeterLoad} (`rate` and `burst` required when `requestsPerSecond` > 0)
 * @param options levels, targetFalseReject (default 1e-5), minCells (16), maxCells (2^24),
 * maxLoadFactor (1)
 * @returns M, a power of two
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain, NaN or negative loads
 */
export function debtMeterCellsForLoad(load: DebtMeterLoad, options: CellsForLoadOptions): number {
  const f = debtFigures(load)
  const o = cellsSearch(options)
  const cap = options.maxLoadFactor ?? 1
  if (typeof cap !== 'number' || !(cap > 0 && cap <= 1)) bad('maxLoadFactor', 'a number in (0, 1]', cap)
  const key = `d,${f.rps},${f.rate},${f.burst},${f.cost},${f.maxDebt},${f.hotKeys},${f.generations},${f.periodS},${f.perKey},${f.spacingJ},${f.firstOnly},${cap},${o.key}`
  return remembered(key, () => {
    // a shape over the cap misses the target (a rate of 1 is above every target < 1)
    const overCap = (cells: number): boolean => debtMeterLoadFactor(cells, f.rps, f.rate, f.cost, f.hotKeys) > cap
    return smallestCells(o, (shape) => (overCap(shape.cellsPerLevel) ? 1 : debtRate(shape, f)), overCap)
  })
}

/**
 * The twin of {@link debtMeterCellsForLoad} for the exponentially decaying scores: the
 * fewest cells per level (a power of two) that keep the abuse false-block rate at
 * `threshold` (when given) or else the fairness false-throttle rate at or below the target.
 * @param load see {@link ScoreLoad}
 * @param options as {@link debtMeterCellsForLoad}, plus `threshold` for the abuse score
 * @returns M, a power of two
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain, NaN or negative loads
 */
export function scoreCellsForLoad(load: ScoreLoad, options: CellsForLoadOptions & { threshold?: number }): number {
  const f = scoreFigures(load)
  const threshold = options.threshold
  if (threshold !== undefined) finiteAtLeast('threshold', threshold, 0, true)
  const o = cellsSearch(options)
  const key = `s,${f.eventsPerSecond},${f.weight},${f.lambdaPerSecond},${f.maxScore},${f.hotKeys},${threshold},${o.key}`
  return remembered(key, () =>
    smallestCells(o, (shape) => (threshold === undefined ? throttleRate(shape, f) : blockRate(shape, f, threshold))),
  )
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1024,
  kib: 1024,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
}

/**
 * Read a memory size: a positive safe integer of bytes, or a string of a number and a unit
 * `B`, `KB`/`KiB`, `MB`/`MiB`, `GB`/`GiB`, all powers of 1024 as Redis and Node read them
 * (`'64MB'`, `'1.5 GiB'`, `'512kb'`); a bare numeric string is bytes. The one home of that
 * rule: the policies' `memory` option and `grudge suggest --memory` both read sizes here.
 * @param name the option name for the error
 * @param value the size
 * @returns bytes, an integer ≥ 1 (a fractional result is rounded down)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the option for anything else (NaN, negative, 0, an unknown unit)
 * @internal
 */
export function parseSizeBytes(name: string, value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 1)
      invalidOption(name, 'a positive integer of bytes up to 2^53 − 1, or a size such as 64MB', value)
    return value
  }
  if (typeof value !== 'string') invalidOption(name, 'a positive integer of bytes or a size such as 64MB', value)
  const m = /^\s*([0-9]*\.?[0-9]+)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$/i.exec(value)
  if (m === null) invalidOption(name, 'a size such as 512KB, 8MB or 1GB (units B, KB/KiB, MB/MiB, GB/GiB)', value)
  const bytes = Math.floor(Number(m[1]) * SIZE_UNITS[(m[2] ?? 'b').toLowerCase()])
  if (!Number.isSafeInteger(bytes) || bytes < 1) invalidOption(name, 'a size of at least 1 byte', value)
  return bytes
}
