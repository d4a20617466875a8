import { invalidOption } from '../errors.js'
import { DECAY_IDS, type Decay } from './shape.js'

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
 * @internal
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
