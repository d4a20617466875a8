import { GrudgeRangeError, describeValue } from '../errors.js'

function bad(name: string, expected: string, value: unknown): never {
  throw new GrudgeRangeError(
    'ERR_GRUDGE_SIZING_INVALID',
    `${name}: expected ${expected}, received ${describeValue(value)}`,
  )
}

/**
 * The chance that an innocent key is misjudged because each of its L cells collides with
 * at least one of H hot keys: `(1 − (1 − 1/M)^H)^L` (the Bloom-filter false-positive
 * argument applied per level; Cormode & Muthukrishnan 2005 for the sketch).
 * @param levels L, integer ≥ 1
 * @param cellsPerLevel M, integer ≥ 1
 * @param hotKeys H, number ≥ 0 of keys with a high score
 * @returns a probability in [0, 1]
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain or NaN
 */
export function sketchFalsePositiveRate(levels: number, cellsPerLevel: number, hotKeys: number): number {
  if (!Number.isInteger(levels) || levels < 1) bad('levels', 'an integer ≥ 1', levels)
  if (!Number.isInteger(cellsPerLevel) || cellsPerLevel < 1) bad('cellsPerLevel', 'an integer ≥ 1', cellsPerLevel)
  if (!(hotKeys >= 0) || !Number.isFinite(hotKeys)) bad('hotKeys', 'a finite number ≥ 0', hotKeys)
  // 1 − (1 − 1/M)^H computed as −expm1(H·log1p(−1/M)) to keep precision for small H/M
  const perLevel = cellsPerLevel === 1 ? (hotKeys > 0 ? 1 : 0) : -Math.expm1(hotKeys * Math.log1p(-1 / cellsPerLevel))
  return Math.pow(perLevel, levels)
}

/**
 * The fewest levels L that keep {@link sketchFalsePositiveRate} at or below `targetFalsePositive`:
 * `ceil(ln p / ln(1 − (1 − 1/M)^H))`, at least 1.
 * @param hotKeys H > 0
 * @param cellsPerLevel M, integer > 1
 * @param targetFalsePositive p in (0, 1)
 * @returns L, an integer ≥ 1
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for H ≤ 0, M ≤ 1, p outside (0, 1), NaN
 */
export function sketchSuggestLevels(hotKeys: number, cellsPerLevel: number, targetFalsePositive: number): number {
  if (!(hotKeys > 0) || !Number.isFinite(hotKeys)) bad('hotKeys', 'a finite number > 0', hotKeys)
  if (!Number.isInteger(cellsPerLevel) || cellsPerLevel <= 1) bad('cellsPerLevel', 'an integer > 1', cellsPerLevel)
  if (!(targetFalsePositive > 0 && targetFalsePositive < 1))
    bad('targetFalsePositive', 'a number in (0, 1)', targetFalsePositive)
  const perLevel = -Math.expm1(hotKeys * Math.log1p(-1 / cellsPerLevel))
  if (perLevel >= 1) bad('hotKeys', `fewer hot keys than saturate ${cellsPerLevel} cells`, hotKeys)
  return Math.max(1, Math.ceil(Math.log(targetFalsePositive) / Math.log(perLevel)))
}
