import { invalidOption } from '../errors.js'

/** Numeric ids of the decay kinds, stored in binary frames. */
export const DECAY_IDS = { none: 0, exponential: 1, linear: 2 } as const
/** Name of a decay kind. */
export type DecayKind = keyof typeof DECAY_IDS

/**
 * How a cell's score moves toward 0 while time passes. Decay is lazy: it is applied to a
 * cell only when the cell is touched, over the time since it was last touched.
 *
 * - `exponential`: score × e^(−λ·Δt), Δt in seconds: proportional forgiveness (a half-life
 *   of ln 2 / λ seconds).
 * - `linear`: moves toward 0 by rate·Δt and never crosses 0: the drain of a token bucket
 *   (GCRA / leaky bucket) for a debt in [0, hi].
 * - `none`: scores stay until overwritten.
 */
export interface Decay {
  /** `'none'`, `'exponential'` or `'linear'`. */
  readonly kind: DecayKind
  /** λ in 1/s for exponential, units per second for linear, 0 for none. */
  readonly ratePerSecond: number
}

/**
 * Exponential decay: score × e^(−λ·Δt) with Δt in seconds.
 * @param lambdaPerSecond λ in 1/s, finite and > 0 (half-life = ln 2 / λ seconds)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when λ is not finite and positive
 */
export function exponential(lambdaPerSecond: number): Decay {
  if (!(Number.isFinite(lambdaPerSecond) && lambdaPerSecond > 0)) {
    invalidOption('lambdaPerSecond', 'a finite number > 0', lambdaPerSecond)
  }
  return Object.freeze({ kind: 'exponential' as const, ratePerSecond: lambdaPerSecond })
}

/**
 * Exponential decay given by its half-life: λ = ln 2 / (halfLifeMs / 1000).
 * @param halfLifeMs time in ms for a score to halve, finite and > 0
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when halfLifeMs is not finite and positive
 */
export function halfLife(halfLifeMs: number): Decay {
  if (!(Number.isFinite(halfLifeMs) && halfLifeMs > 0)) invalidOption('halfLifeMs', 'a finite number > 0', halfLifeMs)
  return exponential(Math.LN2 / (halfLifeMs / 1000))
}

/**
 * Linear decay toward 0 at `ratePerSecond` units per second, never crossing 0: a token
 * bucket's drain when the score is a debt.
 * @param ratePerSecond units per second, finite and > 0
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when the rate is not finite and positive
 */
export function linear(ratePerSecond: number): Decay {
  if (!(Number.isFinite(ratePerSecond) && ratePerSecond > 0)) {
    invalidOption('ratePerSecond', 'a finite number > 0', ratePerSecond)
  }
  return Object.freeze({ kind: 'linear' as const, ratePerSecond })
}

/** No decay: scores change only by updates. */
export function none(): Decay {
  return NONE
}
const NONE: Decay = Object.freeze({ kind: 'none' as const, ratePerSecond: 0 })

/**
 * Apply `decay` to one score over `elapsedMs` (the pure form of what a cell does lazily).
 * A non-positive or NaN elapsed time changes nothing.
 * @param score the score before
 * @param decay the decay
 * @param elapsedMs elapsed time in ms
 * @returns the decayed score
 */
export function applyDecay(score: number, decay: Decay, elapsedMs: number): number {
  if (!(elapsedMs > 0)) return score
  if (decay.kind === 'exponential') return score * Math.exp(-(decay.ratePerSecond / 1000) * elapsedMs)
  if (decay.kind === 'linear') {
    const step = (decay.ratePerSecond / 1000) * elapsedMs
    return score > 0 ? (score > step ? score - step : 0) : score < 0 ? (-score > step ? score + step : 0) : 0
  }
  return score
}

/**
 * Validate a decay object given as an option.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`
 */
export function checkDecay(decay: unknown, option = 'decay'): Decay {
  if (decay === undefined) return NONE
  const d = decay as Decay
  if (typeof d !== 'object' || d === null || !(d.kind in DECAY_IDS)) {
    invalidOption(option, 'exponential(λ), linear(rate) or none()', decay)
  }
  if (d.kind === 'none') return NONE
  if (typeof d.ratePerSecond !== 'number' || !(Number.isFinite(d.ratePerSecond) && d.ratePerSecond > 0)) {
    invalidOption(`${option}.ratePerSecond`, 'a finite number > 0', d.ratePerSecond)
  }
  return d.kind === 'exponential' ? exponential(d.ratePerSecond) : linear(d.ratePerSecond)
}
