/**
 * The lifetime of `req.grudge`: a request decided by one debt meter alone keeps the figures
 * its Decision follows from (the debt and the tier here; the request key where the adapter
 * keeps it), and the Decision is built from them, once, when something reads `req.grudge`. Both adapters use these figures, so
 * that the single-policy path allocates nothing of grudge's per request
 * (test/plugins/alloc.test.ts counts garbage collections): the limiter's figures are one
 * reused object (`Limiter.decideFigures`), overwritten by the next request, and what
 * outlives it is kept here. Any other decision (a denial, several policies, a failed store,
 * an asynchronous store) is a Decision at once.
 *
 * The figures are kept in module WeakMaps keyed by the request, never on the request: a
 * property added to Express's request turns that object into a V8 dictionary (measured:
 * ~1.3 kB more per request), and slots declared on Fastify's request class grow every
 * request object by 8 B each. A WeakMap entry whose value is a small integer or an old
 * object allocates nothing (the table is reused; its entries go with their request); the
 * debt is kept as the two 32-bit halves of its bits, each a small integer (a double would
 * be a box of its own). V8's scavenger treats a WeakMap's values as strong even when the
 * key has died (the entry is cleared after), so a young value (the request key, a fresh
 * string) survives one scavenge more: measured through Fastify, ~10 kB more survivors per
 * scavenge and +4 scavenges per 80 000 requests, hence the key is kept by the adapter
 * (a slot of Fastify's request class, which dies with the request). A value that refers to
 * the request itself would keep the whole request one scavenge longer (measured through
 * Express: ~4 kB per request), so none does.
 * @module
 */
import { decisionOf, DecisionFigures, type Decision } from '../limit/decision.js'
import type { Limiter } from '../limit/limiter.js'

/** The tier of the kept figures, by request (absent for an untiered limit). */
const TIERS = new WeakMap<object, string>()
/** The high 32 bits of the kept debt's IEEE 754 bits, by request. */
const DEBT_HIGH = new WeakMap<object, number>()
/** The low 32 bits of the kept debt's IEEE 754 bits, by request. */
const DEBT_LOW = new WeakMap<object, number>()

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

/**
 * Keep the figures of an admission by the debt meter alone for the request, and say so;
 * any other decision is not kept (the adapter builds its Decision at once). An adapter keeps
 * the figures of the first limiter that decides a request, once per request.
 * @param req the request (any object; only the key of the maps)
 * @param f the limiter's figures, read at once
 * @returns whether the figures were kept
 * @internal
 */
export function keepFigures(req: object, f: DecisionFigures): boolean {
  if (!keepable(f)) return false
  DEBT_HIGH.set(req, debtHighBits(f.debt))
  DEBT_LOW.set(req, HALVES[LOW])
  if (f.tier !== undefined) TIERS.set(req, f.tier)
  return true
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

/**
 * The Decision of the figures kept by {@link keepFigures} (see {@link keptDecisionOf}).
 * @param req the request
 * @param limiter the limiter that decided
 * @internal
 */
export function keptDecision(req: object, limiter: Limiter): Decision {
  return keptDecisionOf(req, limiter, DEBT_HIGH.get(req) ?? 0, DEBT_LOW.get(req) ?? 0)
}
