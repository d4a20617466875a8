/**
 * The lifetime of `req.grudge`: a request decided by one debt meter alone keeps the figures
 * its Decision follows from (the debt, the tier, the request key), and the Decision is built
 * from them, once, when something reads `req.grudge`. Both adapters use these figures, so
 * that the single-policy path allocates no Decision per request
 * (test/plugins/alloc.test.ts counts garbage collections): the limiter's figures are one
 * reused object (`Limiter.decideFigures`), overwritten by the next request, and what
 * outlives it is kept by the adapter (Fastify: slots declared on its request class; Express:
 * one record per request in a WeakMap, plugins/express/index.ts). Any other decision (a
 * denial, several policies, a failed store, an asynchronous store) is a Decision at once.
 *
 * The debt is kept as the two 32-bit halves of its bits ({@link debtHighBits},
 * {@link debtLowBits}), each a small integer (a double would be a box of its own); the tier
 * of a tiered limit, rarer, in a WeakMap here ({@link keepTier}). V8's scavenger treats a
 * WeakMap's values as strong even when the key has died (the entry is cleared after), so a
 * young value (a fresh string, a record) survives one scavenge more: measured through
 * Fastify, ~10 kB more survivors per scavenge and +4 scavenges per 80 000 requests for the
 * request key. A value that refers to the request itself would keep the whole request one
 * scavenge longer (measured through Express: ~4 kB per request), so none does.
 * @module
 */
import { decisionOf, DecisionFigures, type Decision } from '../limit/decision.js'
import type { Limiter } from '../limit/limiter.js'

/** The tier of the kept figures, by request (absent for an untiered limit). */
const TIERS = new WeakMap<object, string>()

const BITS = new Float64Array(1)
const HALVES = new Int32Array(BITS.buffer)
// the IEEE 754 halves in the platform's order: Int32Array index of the high word
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0
const LOW = 1 - HIGH

/**
 * Whether a decision's figures may be kept instead of its Decision: an admission by the debt
 * meter alone (any other decision is a Decision at once).
 * @param f the limiter's figures, read at once
 * @internal
 */
export function keepable(f: DecisionFigures): boolean {
  return f.debtOnly && f.admitted
}

/**
 * The high 32 bits of a debt's IEEE 754 bits, as a signed 32-bit integer (a small integer in
 * V8 on 64-bit builds without pointer compression, so a slot or map value holding it
 * allocates nothing).
 * @param debt the debt, finite, ≥ 0
 * @internal
 */
export function debtHighBits(debt: number): number {
  BITS[0] = debt
  return HALVES[HIGH]
}

/**
 * The low 32 bits of a debt's IEEE 754 bits, as a signed 32-bit integer (see {@link debtHighBits}).
 * @param debt the debt, finite, ≥ 0
 * @internal
 */
export function debtLowBits(debt: number): number {
  BITS[0] = debt
  return HALVES[LOW]
}

/**
 * Keep the tier of kept figures (only a tiered limit's figures have one).
 * @param req the request (only the key of the map)
 * @param tier the tier charged
 * @internal
 */
export function keepTier(req: object, tier: string): void {
  TIERS.set(req, tier)
}

const SCRATCH = new DecisionFigures()

/**
 * The Decision of kept figures given as the debt's halves ({@link debtHighBits},
 * {@link debtLowBits}): the limiter rebuilds the figures the decision had from its debt and
 * the request's tier ({@link keepTier}). The caller caches it as the request's Decision.
 * @param req the request (its kept tier)
 * @param limiter the limiter that decided
 * @param high the debt's high bits
 * @param low the debt's low bits
 * @internal
 */
export function keptDecisionOf(req: object, limiter: Limiter, high: number, low: number): Decision {
  HALVES[HIGH] = high
  HALVES[LOW] = low
  return decisionOf(limiter.refillDebtOnly(SCRATCH, BITS[0], 0, TIERS.get(req)))
}
