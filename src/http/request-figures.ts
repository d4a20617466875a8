/**
 * The lifetime of `req.grudge`: a request decided by one debt meter alone keeps the three
 * figures its Decision follows from (the debt, the tier, the key) in slots of the request
 * itself, and the Decision is built from them, once, when something reads `req.grudge`.
 * Both adapters use these slots, so that the single-policy path allocates nothing of
 * grudge's per request (test/plugins/alloc.test.ts counts garbage collections): the
 * limiter's figures are one reused object (`Limiter.decideFigures`), overwritten by the next
 * request, and the slots are what outlives it. Any other decision (a denial, several
 * policies, a failed store, an asynchronous store) is a Decision at once.
 * @module
 */
import { decisionOf, DecisionFigures, type Decision } from '../limit/decision.js'
import type { Limiter } from '../limit/limiter.js'

/** The request key of the kept figures. @internal */
export const kKey = Symbol('grudge.key')
/** The tier of the kept figures (undefined for an untiered limit). @internal */
export const kTier = Symbol('grudge.tier')
/** The high 32 bits of the kept debt's IEEE 754 bits. @internal */
export const kDebtHigh = Symbol('grudge.debtHigh')
/** The low 32 bits of the kept debt's IEEE 754 bits. @internal */
export const kDebtLow = Symbol('grudge.debtLow')
/** The request's Decision once built (or set by the adapter at once); null while only the figures are kept. @internal */
export const kDecision = Symbol('grudge.decision')

/**
 * The slots of a request. The debt is kept as the two 32-bit halves of its bits: V8 keeps
 * a 32-bit integer in an object's slot as it is (a Smi on 64-bit Node), while a double slot
 * is a box of its own, which a fresh request object would allocate.
 * @internal
 */
export interface FigureSlots {
  [kKey]: string
  [kTier]: string | undefined
  [kDebtHigh]: number
  [kDebtLow]: number
  [kDecision]: Decision | null | undefined
}

const BITS = new Float64Array(1)
const HALVES = new Int32Array(BITS.buffer)
// the IEEE 754 halves in the platform's order: Int32Array index of the high word
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0
const LOW = 1 - HIGH

/**
 * Keep the figures of an admission by the debt meter alone in the request's slots, and
 * say so; any other decision is not kept (the adapter builds its Decision at once).
 * @param req the request's slots
 * @param key the request key
 * @param f the limiter's figures, read at once
 * @returns whether the figures were kept
 * @internal
 */
export function keepFigures(req: FigureSlots, key: string, f: DecisionFigures): boolean {
  if (!f.debtOnly || !f.admitted) return false
  BITS[0] = f.debt
  req[kDebtHigh] = HALVES[HIGH]
  req[kDebtLow] = HALVES[LOW]
  req[kTier] = f.tier
  req[kKey] = key
  return true
}

const SCRATCH = new DecisionFigures()

/**
 * The Decision of the figures kept by {@link keepFigures}: the limiter rebuilds the figures
 * the decision had from its debt and tier. The caller caches it in the request's
 * `kDecision` slot.
 * @param req the request's slots
 * @param limiter the limiter that decided
 * @internal
 */
export function keptDecision(req: FigureSlots, limiter: Limiter): Decision {
  HALVES[HIGH] = req[kDebtHigh]
  HALVES[LOW] = req[kDebtLow]
  return decisionOf(limiter.refillDebtOnly(SCRATCH, BITS[0], 0, req[kTier]))
}
