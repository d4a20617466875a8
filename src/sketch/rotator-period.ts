import { GrudgeError, invalidOption } from '../errors.js'

// The amnesty guard of a linear-decay rotator (`spec/rotator.md` §1): a fresh generation
// knows nothing older than itself and becomes the oldest after (generations − 1)
// rotations; by then every debt it missed (at most hi) must have drained at the decay
// rate, or the rotation would forgive debt early.

/**
 * The unrounded smallest period in ms that passes the amnesty guard: hi / rate × 1000 / (N − 1).
 * @internal
 */
export function minPeriodMs(hi: number, ratePerSecond: number, generations: number): number {
  return ((hi / ratePerSecond) * 1000) / (generations - 1)
}

/**
 * The smallest rotation period in ms that passes the amnesty guard for linear decay:
 * `ceil(hi / ratePerSecond × 1000 / (generations − 1))`.
 * @param hi the upper bound of a debt, finite and > 0
 * @param ratePerSecond the linear drain in units per second, finite and > 0
 * @param generations N, an integer ≥ 2
 * @returns the period in ms (an integer, finite)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad argument (hi also when
 * hi / rate × 1000 overflows float64, e.g. hi = Number.MAX_VALUE)
 */
export function suggestPeriodMs(hi: number, ratePerSecond: number, generations: number): number {
  if (typeof hi !== 'number' || !(Number.isFinite(hi) && hi > 0)) invalidOption('hi', 'a finite number > 0', hi)
  if (typeof ratePerSecond !== 'number' || !(Number.isFinite(ratePerSecond) && ratePerSecond > 0)) {
    invalidOption('ratePerSecond', 'a finite number > 0 (per second)', ratePerSecond)
  }
  if (!Number.isInteger(generations) || generations < 2) invalidOption('generations', 'an integer ≥ 2', generations)
  const period = Math.ceil(minPeriodMs(hi, ratePerSecond, generations))
  if (!Number.isFinite(period)) {
    invalidOption(
      'hi',
      `a debt that drains in a finite number of ms at ${ratePerSecond}/s (hi / rate × 1000 overflows)`,
      hi,
    )
  }
  return period
}

/**
 * Throw unless (generations − 1) × periodMs ≥ hi / rate × 1000 for a linear decay.
 * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_AMNESTY` naming the smallest valid period
 * @internal
 */
export function assertAmnesty(hi: number, ratePerSecond: number, generations: number, periodMs: number): void {
  const min = minPeriodMs(hi, ratePerSecond, generations)
  if (periodMs < min) {
    throw new GrudgeError(
      'ERR_GRUDGE_ROTATOR_AMNESTY',
      `option "periodMs": expected ≥ ${Number.isFinite(min) ? Math.ceil(min) : 'Infinity (set sketch.hi to bound the debt)'} ms so that (generations − 1) × periodMs ≥ hi / rate × 1000 (hi = ${hi}, rate = ${ratePerSecond}/s, generations = ${generations}), received ${periodMs}`,
    )
  }
}
