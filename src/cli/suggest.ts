import { sketchFalsePositiveRate, sketchSuggestLevels } from '../sketch/sizing.js'
import { invalidOption } from '../errors.js'

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
  /** The false-positive rate of this shape for the given hot keys ({@link sketchFalsePositiveRate}). */
  falsePositiveRate: number
  /** Whether the target false-positive rate is met (false only under a memory budget too small for it). */
  meetsTarget: boolean
}

const CELL_BYTES = 16

/**
 * Size a sketch for H hot keys and a target false-positive rate p, with the sizing
 * helpers of `src/sketch/sizing.ts` (false-positive formula `(1 − (1 − 1/M)^H)^L`, the Bloom
 * argument per level; Cormode & Muthukrishnan 2005).
 *
 * Levels cost a hash probe each on every request, so L is capped at `maxLevels` (default 8;
 * the Bloom optimum k = ln 2 · cells / H is often larger, for little gain in memory).
 *
 * - Without a budget: for each L in 1..maxLevels, the fewest cells per level M that reach p
 *   with L levels is `⌈1 / (1 − (1 − p^(1/L))^(1/H))⌉`; `sketchSuggestLevels(H, M, p)` confirms L,
 *   and the shape with the fewest cells L × M wins.
 * - With a budget of `memoryBytes` for the whole Rotator: for each L, M = ⌊budget / (16 ×
 *   generations × L)⌋; the fewest levels that reach p win, else the L with the lowest
 *   `sketchFalsePositiveRate(L, M, H)` (`meetsTarget` is then false).
 * @param hotKeys H, keys with a high score at one time, > 0
 * @param targetFalsePositive p in (0, 1)
 * @param memoryBytes optional budget in bytes for all generations
 * @param generations generations of the Rotator, integer ≥ 1 (default 2)
 * @param maxLevels the most levels to consider, integer in [1, 64] (default 8)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming hot-keys, fp, memory, generations or max-levels
 */
export function suggestShape(
  hotKeys: number,
  targetFalsePositive: number,
  memoryBytes?: number,
  generations = 2,
  maxLevels = 8,
): Suggestion {
  if (!(hotKeys > 0) || !Number.isFinite(hotKeys)) invalidOption('hot-keys', 'a finite number > 0', hotKeys)
  if (!(targetFalsePositive > 0 && targetFalsePositive < 1))
    invalidOption('fp', 'a probability in (0, 1)', targetFalsePositive)
  if (!Number.isInteger(generations) || generations < 1) invalidOption('generations', 'an integer ≥ 1', generations)
  if (!Number.isInteger(maxLevels) || maxLevels < 1 || maxLevels > 64)
    invalidOption('max-levels', 'an integer in [1, 64]', maxLevels)
  let best: Suggestion | undefined
  if (memoryBytes === undefined) {
    for (let L = 1; L <= maxLevels; L++) {
      const q = Math.pow(targetFalsePositive, 1 / L)
      const M = Math.max(2, Math.ceil(1 / -Math.expm1(Math.log1p(-q) / hotKeys)))
      if (!Number.isFinite(M) || M > 0x7fffffff / L) continue
      const levels = Math.min(maxLevels, sketchSuggestLevels(hotKeys, M, targetFalsePositive))
      const s = shape(levels, M, hotKeys, generations, targetFalsePositive)
      if (best === undefined || s.bytes < best.bytes) best = s
    }
    if (best === undefined) invalidOption('fp', 'a rate reachable with ≤ 2^31 cells', targetFalsePositive)
    return best
  }
  if (!Number.isFinite(memoryBytes) || memoryBytes < CELL_BYTES * 2 * generations) {
    invalidOption('memory', `at least ${CELL_BYTES * 2 * generations} bytes (2 cells per generation)`, memoryBytes)
  }
  for (let L = 1; L <= maxLevels; L++) {
    const M = Math.floor(memoryBytes / (CELL_BYTES * generations * L))
    if (M < 2) break
    const s = shape(L, M, hotKeys, generations, targetFalsePositive)
    if (s.meetsTarget) return s
    if (best === undefined || s.falsePositiveRate < best.falsePositiveRate) best = s
  }
  return best!
}

function shape(levels: number, cellsPerLevel: number, hotKeys: number, generations: number, p: number): Suggestion {
  const fp = sketchFalsePositiveRate(levels, cellsPerLevel, hotKeys)
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
