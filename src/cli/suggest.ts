import { debtMeterCellsForLoad, sketchFalsePositiveRate, type DebtMeterLoad } from '../sketch/sizing.js'
import { SKETCH_BYTES_PER_CELL } from '../sketch/shape.js'
import { invalidOption } from '../errors.js'
import { sketchBudget } from '../limit/options.js'
import { telemetryMaxBytes } from '../limit/telemetry.js'

/** What `grudge suggest` prints. */
export interface Suggestion {
  /** L, levels per sketch. */
  levels: number
  /** M, cells per level. */
  cellsPerLevel: number
  /** Bytes of one sketch: L × M × 16. */
  bytesPerSketch: number
  /** Bytes of a Rotator of `generations` sketches. */
  bytes: number
  /** Generations counted in {@link Suggestion.bytes}. */
  generations: number
  /** The predicted false-reject rate of this shape for the given load ({@link sketchFalsePositiveRate}). */
  falsePositiveRate: number
  /** Whether the target false-positive rate is met (false only under a memory budget too small for it). */
  meetsTarget: boolean
}

/** What {@link suggestShape} sizes for. */
export interface SuggestOptions extends DebtMeterLoad {
  /** p, the false-reject rate to reach, in (0, 1). */
  targetFalsePositive: number
  /** A policy's `memory` budget in bytes (all generations, its load meter and the limiter's telemetry); without one the smallest shape that reaches p. */
  memoryBytes?: number
  /** Generations of the Rotator, integer ≥ 1; default 2. From 2 (with a request load) the model is a Rotator's with carry-forward, rotated every `periodMs` (default the shortest the amnesty guard allows; spec/sizing.md §2.5). */
  generations?: number
  /** The most levels to consider, integer in [1, 64]; default 8. */
  maxLevels?: number
}

/**
 * Size a debt meter's sketch for a load and a target false-reject rate p, with the model of
 * `src/sketch/sizing.ts` ({@link sketchFalsePositiveRate}: hot keys by the Bloom argument per
 * level, Cormode & Muthukrishnan 2005; the request load by the cell-queue model of
 * spec/sizing.md §2).
 *
 * Levels cost a hash probe each on every request, so L is capped at `maxLevels` (default 8;
 * the Bloom optimum k = ln 2 · cells / H is often larger, for little gain in memory).
 *
 * - Without a budget: for each L in 1..maxLevels the fewest cells per level M that reach p
 *   (hot keys alone: `⌈1 / (1 − (1 − p^(1/L))^(1/H))⌉`; with requests per second: the power of
 *   two of {@link debtMeterCellsForLoad}, what a `memory` budget gives); the shape with the
 *   fewest cells L × M wins.
 * - With a budget of `memoryBytes` (a policy's `memory`): for each L in 1..min(maxLevels, 16),
 *   the M a Limiter builds for `{ memory, levels: L }` (the library's own rule, `sketchBudget`:
 *   the largest power of two with the 2 KiB load meter, a default telemetry's HyperLogLogs and
 *   L × M × 16 B × generations inside the budget); the fewest levels that reach p win, else the
 *   L with the lowest rate (`meetsTarget` is then false).
 * @param options the load (`hotKeys`, `requestsPerSecond` with `rate` and `burst`, …), p and the budget
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming hot-keys, rps, fp, memory, generations or
 * max-levels; `ERR_GRUDGE_SIZING_INVALID` for a bad rate, burst or cost; `ERR_GRUDGE_SIZING_BUDGET`
 * for a budget a Limiter refuses (below the meter, the telemetry and 16 cells per level at L = 1)
 */
export function suggestShape(options: SuggestOptions): Suggestion {
  const { targetFalsePositive, memoryBytes } = options
  const generations = options.generations ?? 2
  const maxLevels = options.maxLevels ?? 8
  const hotKeys = options.hotKeys ?? 0
  const rps = options.requestsPerSecond ?? 0
  if (!(hotKeys >= 0) || !Number.isFinite(hotKeys)) invalidOption('hot-keys', 'a finite number ≥ 0', hotKeys)
  if (!(rps >= 0) || !Number.isFinite(rps)) invalidOption('rps', 'a finite number ≥ 0 (requests per second)', rps)
  if (hotKeys === 0 && rps === 0) invalidOption('hot-keys', 'hot keys > 0 or requests per second > 0', hotKeys)
  if (!(targetFalsePositive > 0 && targetFalsePositive < 1))
    invalidOption('fp', 'a probability in (0, 1)', targetFalsePositive)
  if (!Number.isInteger(generations) || generations < 1) invalidOption('generations', 'an integer ≥ 1', generations)
  if (!Number.isInteger(maxLevels) || maxLevels < 1 || maxLevels > 64)
    invalidOption('max-levels', 'an integer in [1, 64]', maxLevels)
  const load: DebtMeterLoad = {
    hotKeys,
    requestsPerSecond: rps,
    rate: options.rate,
    burst: options.burst,
    cost: options.cost,
    maxDebt: options.maxDebt,
  }
  // a debt meter of ≥ 2 generations is a Rotator with carry-forward (spec/sizing.md §2.5)
  if (generations >= 2 && rps > 0) {
    load.generations = generations
    load.periodMs = options.periodMs
  }
  // checks rate, burst and cost once (a coded error for a bad figure)
  sketchFalsePositiveRate({ levels: 1, cellsPerLevel: 2 }, load)
  let best: Suggestion | undefined
  if (memoryBytes === undefined) {
    for (let L = 1; L <= maxLevels; L++) {
      let M: number
      if (rps === 0) {
        const q = Math.pow(targetFalsePositive, 1 / L)
        M = Math.max(2, Math.ceil(1 / -Math.expm1(Math.log1p(-q) / hotKeys)))
        if (!Number.isFinite(M) || M > 0x7fffffff / L) continue
      } else {
        M = debtMeterCellsForLoad(load, {
          levels: L,
          targetFalseReject: targetFalsePositive,
          minCells: 2,
          maxCells: 1 << 30,
        })
        if (M * L > 0x7fffffff) continue
      }
      const s = shape(L, M, load, generations, targetFalsePositive)
      if (s.meetsTarget && (best === undefined || s.bytes < best.bytes)) best = s
    }
    if (best === undefined) invalidOption('fp', 'a rate reachable with ≤ 2^31 cells', targetFalsePositive)
    return best
  }
  if (!Number.isFinite(memoryBytes) || memoryBytes <= 0)
    invalidOption('memory', 'a finite number of bytes > 0', memoryBytes)
  // what `new Limiter({ memory, levels: L })` builds: the library's rule, with its load meter
  // and a default telemetry inside the budget (a budget too small for L = 1 throws its error)
  for (let L = 1; L <= Math.min(maxLevels, MAX_LIMITER_LEVELS); L++) {
    let M: number
    try {
      M = sketchBudget({ memory: memoryBytes }, L, generations, '', telemetryMaxBytes()).cellsPerLevel
    } catch (e) {
      if (L === 1) throw e
      break
    }
    const s = shape(L, M, load, generations, targetFalsePositive)
    if (s.meetsTarget) return s
    if (best === undefined || s.falsePositiveRate < best.falsePositiveRate) best = s
  }
  return best!
}

const CELL_BYTES = SKETCH_BYTES_PER_CELL
/** The most levels a Limiter takes (`levels` in [1, 16]). */
const MAX_LIMITER_LEVELS = 16

function shape(levels: number, cellsPerLevel: number, load: DebtMeterLoad, generations: number, p: number): Suggestion {
  const fp = sketchFalsePositiveRate({ levels, cellsPerLevel }, load)
  const bytesPerSketch = levels * cellsPerLevel * CELL_BYTES
  return {
    levels,
    cellsPerLevel,
    bytesPerSketch,
    bytes: bytesPerSketch * generations,
    generations,
    falsePositiveRate: fp,
    meetsTarget: fp <= p,
  }
}
