import {
  abuseFalseBlockRate,
  debtMeterLoadFactor,
  fairnessFalseThrottleRate,
  scoreBackground,
  sketchFalsePositiveRate,
  type DebtMeterLoad,
  type SketchSize,
} from '../sketch/sizing.js'
import { DEFAULT_LEVELS, MAX_CELLS, SKETCH_BYTES_PER_CELL } from '../sketch/shape.js'
import { invalidOption } from '../errors.js'
import { formatBytes, formatDuration } from './units.js'
import { MAX_BUDGET_CELLS_PER_LEVEL, selfSizedCells, sketchBudget } from '../limit/options.js'
import { telemetryMaxBytes } from '../limit/telemetry.js'
import { METER_BYTES, budgetBytesFor, ceilPowerOfTwo } from '../sketch/rotator-sizing.js'
import { debtMeterCellsFor, debtMeterLoad, parseDebtMeterOptions } from '../limit/debt-meter.js'
import {
  abuseModelWeight,
  abuseScoreCellsFor,
  abuseScoreLoad,
  parseAbuseScoreOptions,
  type AbuseModelConfig,
} from '../limit/abuse-score.js'
import { feedbackScoreCellsFor, feedbackScoreLoad, parseFeedbackScoreOptions } from '../limit/feedback-score.js'

/** The policies `grudge suggest` sizes: the debt meter (`limit`), the abuse score and the feedback score (`fairness`). */
export type SuggestPolicy = 'limit' | 'abuse' | 'fairness'

/** What `grudge suggest` prints. */
export interface Suggestion {
  /** The policy sized. */
  policy: SuggestPolicy
  /** L, levels per sketch. */
  levels: number
  /** M, cells per level: with a load and a budget, what a self-sized policy's generations settle at for that load. */
  cellsPerLevel: number
  /** With a budget: the largest cells per level it holds at these levels (a self-sized policy's first generation). */
  maxCellsPerLevel?: number
  /** With a load and a budget: what the policy's sizer asks for at this load (more than `cellsPerLevel` when the budget holds less; the Limiter then logs it once). */
  sizerCellsPerLevel?: number
  /** Bytes of one sketch: L × M × 16. */
  bytesPerSketch: number
  /** Bytes of a Rotator of `generations` sketches. */
  bytes: number
  /** Generations counted in {@link Suggestion.bytes}. */
  generations: number
  /** The rotation period in ms of the model (the debt meter's; the score models do not depend on it). */
  periodMs?: number
  /**
   * The load factor of one level for the load: ρ = (admitted cost per second) / (M × rate) for a
   * debt meter (`debtMeterLoadFactor`), the mean background of a cell ν·w / (M·λ) for a score
   * (`scoreBackground`); 0 for hot keys alone.
   */
  loadFactor: number
  /** The predicted false-reject rate of this shape for the load: false-reject (limit), false-block (abuse) or false-throttle (fairness). */
  falsePositiveRate: number
  /** Whether the target false-positive rate is met (false only under a memory budget too small for it). */
  meetsTarget: boolean
}

/** What {@link suggestShape} sizes for. */
export interface SuggestOptions extends DebtMeterLoad {
  /** The policy; default `'limit'`. */
  policy?: SuggestPolicy
  /** Abuse and fairness: scored events per second, all keys (finite, ≥ 0): responses with a positive weight (abuse), failures (fairness). */
  eventsPerSecond?: number
  /** Abuse: the weight of one event (finite, > 0), the policy's heaviest positive weight; default 1. */
  weight?: number
  /** Abuse: the threshold; default 10 (the policy's). */
  threshold?: number
  /** Abuse: the half-life in ms; default 600 000 (the policy's). */
  halfLifeMs?: number
  /** Abuse: the score ceiling; default 4 × threshold (the policy's). */
  maxScore?: number
  /** Fairness: failureDelta, in (0, 1]; default 0.1 (the policy's). */
  failureDelta?: number
  /** Fairness: λ in 1/s; default 0.1 (the policy's). */
  lambdaPerSecond?: number
  /** p, the false-reject rate to reach, in (0, 1). */
  targetFalsePositive: number
  /** A policy's `memory` budget in bytes (all generations, its load meter and the limiter's telemetry); without one the smallest shape that reaches p. */
  memoryBytes?: number
  /**
   * Generations of the Rotator, integer in [2, 16] (a Limiter's range); default 2. A debt
   * meter with a request load is modelled as a Rotator with carry-forward, rotated every
   * `periodMs` (default the shortest the amnesty guard allows; spec/sizing.md §2.5).
   */
  generations?: number
  /**
   * L, levels: given, only this L is weighed (an integer in [1, 16], a Limiter's `levels`).
   * Default: the policies' own default, 4 levels, unless `maxLevels` is given (then every L
   * in 1..maxLevels is weighed). A search over L may answer 1 level, which has no Min
   * aggregation to lean on (spec/sizing.md §8), so it is asked for, not the default.
   */
  levels?: number
  /** The most levels to weigh, integer in [1, 64] (at most 16 under a budget); without it (and without `levels`) L is 4. */
  maxLevels?: number
}

/** The most levels a Limiter takes (`levels` in [1, 16]). */
const MAX_LIMITER_LEVELS = 16

/** The checked figures of one policy's load: its sizer and its model, both from the policy's own module. */
interface PolicyModel {
  /** Cost (limit) or score (abuse, fairness) per second; 0 for hot keys alone. */
  costPerSecond: number
  /** The Limiter's sizer for L levels at the target. */
  cellsFor: (levels: number) => number
  /** The predicted rate of a shape. */
  rate: (shape: SketchSize) => number
  /** The load factor of a level of M cells. */
  loadFactor: (cellsPerLevel: number) => number
  periodMs?: number
}

function checkedNumber(name: string, v: number | undefined, ok: (n: number) => boolean, expected: string): number {
  const n = v ?? 0
  if (!Number.isFinite(n) || !ok(n)) invalidOption(name, expected, v)
  return n
}

function policyModel(o: SuggestOptions, policy: SuggestPolicy, generations: number, p: number): PolicyModel {
  const hotKeys = checkedNumber('hot-keys', o.hotKeys, (n) => n >= 0, 'a finite number ≥ 0')
  if (policy === 'limit') {
    const rps = checkedNumber('rps', o.requestsPerSecond, (n) => n >= 0, 'a finite number ≥ 0 (requests per second)')
    if (o.eventsPerSecond !== undefined)
      invalidOption('events', 'abuse or fairness (--policy); limit reads --rps', o.eventsPerSecond)
    if (hotKeys === 0 && rps === 0) invalidOption('hot-keys', 'hot keys > 0 or requests per second > 0', hotKeys)
    if (rps === 0) {
      // hot keys alone: the Bloom argument per level (no load for the meter's sizer)
      for (const [flag, v] of [
        ['rate', o.rate],
        ['burst', o.burst],
        ['cost', o.cost],
        ['maxDebt', o.maxDebt],
        ['period', o.periodMs],
        ['requests-per-key', o.requestsPerKey],
        ['request-spacing', o.requestSpacingMs],
      ] as const)
        if (v !== undefined) invalidOption(flag, 'a request load (rps > 0) to act on', v)
      const load = { hotKeys }
      return {
        costPerSecond: 0,
        cellsFor: (L) => {
          const q = Math.pow(p, 1 / L)
          return Math.max(2, Math.ceil(1 / -Math.expm1(Math.log1p(-q) / hotKeys)))
        },
        rate: (shape) => sketchFalsePositiveRate(shape, load),
        loadFactor: () => 0,
      }
    }
    // the Limiter's own checks and defaults: cost 1, maxDebt 10 × burst, the amnesty guard's period
    const c = parseDebtMeterOptions(
      { rate: o.rate as number, burst: o.burst as number, cost: o.cost, maxDebt: o.maxDebt },
      { generations, periodMs: o.periodMs },
      '',
    )
    const costPerSecond = rps * c.cost
    const clustering = { requestsPerKey: o.requestsPerKey, requestSpacingMs: o.requestSpacingMs }
    const load = debtMeterLoad(c, generations, costPerSecond, hotKeys, clustering)
    return {
      costPerSecond,
      cellsFor: (L) => debtMeterCellsFor(c, generations, L, costPerSecond, p, hotKeys, clustering),
      rate: (shape) => sketchFalsePositiveRate(shape, load),
      loadFactor: (M) => debtMeterLoadFactor(M, load.requestsPerSecond!, c.rate, c.cost, 0),
      periodMs: c.periodMs,
    }
  }
  for (const [flag, v] of [
    ['rps', o.requestsPerSecond],
    ['rate', o.rate],
    ['burst', o.burst],
    ['cost', o.cost],
    ['period', o.periodMs],
    ['requests-per-key', o.requestsPerKey],
    ['request-spacing', o.requestSpacingMs],
  ] as const)
    if (v !== undefined) invalidOption(flag, `no ${flag} for --policy ${policy} (the score models read --events)`, v)
  const events = checkedNumber('events', o.eventsPerSecond, (n) => n >= 0, 'a finite number ≥ 0 (events per second)')
  if (hotKeys === 0 && events === 0) invalidOption('events', 'events per second > 0 or hot keys > 0', events)
  if (policy === 'abuse') {
    const weight = checkedNumber('weight', o.weight ?? 1, (n) => n > 0, 'a finite number > 0')
    const a = parseAbuseScoreOptions(
      { threshold: o.threshold, halfLifeMs: o.halfLifeMs, maxScore: o.maxScore },
      { generations, periodMs: undefined },
      '',
    )
    const c: AbuseModelConfig = { ...a, weight: abuseModelWeight([weight]) }
    const costPerSecond = events * weight
    const load = abuseScoreLoad(c, costPerSecond, hotKeys)
    return {
      costPerSecond,
      cellsFor: (L) => abuseScoreCellsFor(c, L, costPerSecond, p, hotKeys),
      rate: (shape) => abuseFalseBlockRate(shape, load, c.threshold),
      loadFactor: (M) => scoreBackground(M, load),
    }
  }
  const f = parseFeedbackScoreOptions(
    { failureDelta: o.failureDelta, lambdaPerSecond: o.lambdaPerSecond },
    { generations, periodMs: undefined },
    '',
  )
  const costPerSecond = events * f.failureDelta
  const load = feedbackScoreLoad(f, costPerSecond, hotKeys)
  return {
    costPerSecond,
    cellsFor: (L) => feedbackScoreCellsFor(f, L, costPerSecond, p, hotKeys),
    rate: (shape) => fairnessFalseThrottleRate(shape, load),
    loadFactor: (M) => scoreBackground(M, load),
  }
}

/**
 * Size a policy's sketch for a load and a target false-reject rate p, with the rules the
 * Limiter itself sizes by (one home each): the policy's sizer (`debtMeterCellsFor`,
 * `abuseScoreCellsFor`, `feedbackScoreCellsFor`: the models of `src/sketch/sizing.ts`,
 * spec/sizing.md §2–4, the debt meter's with its 0.05 load-factor cap for heavy hitters),
 * the budget's rule (`sketchBudget`) and the self-sized range (`selfSizedCells`).
 *
 * - `limit`: the debt meter; the load is `requestsPerSecond` (with `rate`, `burst`, `cost`,
 *   `maxDebt`, `periodMs`) and/or `hotKeys`. Hot keys alone are sized by the Bloom argument
 *   per level (Cormode & Muthukrishnan 2005): `⌈1 / (1 − (1 − p^(1/L))^(1/H))⌉` cells.
 * - `abuse`: the abuse score; the load is `eventsPerSecond` of `weight` (with `threshold`,
 *   `halfLifeMs`, `maxScore`); the rate is the false-block rate at the threshold (§3).
 * - `fairness`: the feedback score; `eventsPerSecond` failures of `failureDelta` decaying at
 *   `lambdaPerSecond`; the rate is the false-throttle rate (§4).
 *
 * L is the policies' default, 4 levels (`DEFAULT_LEVELS`), unless `levels` fixes another or
 * `maxLevels` asks for a search over 1..maxLevels (levels cost a hash probe each on every
 * request, and 1 level has no Min aggregation: spec/sizing.md §8). Searching:
 *
 * - Without a budget: for each L the sizer's M; the shape with the fewest cells L × M that
 *   reaches p wins.
 * - With a budget of `memoryBytes` (a policy's `memory`): for each L in 1..min(maxLevels, 16)
 *   the largest M a Limiter builds for `{ memory, levels: L }` (`sketchBudget`: the load meter,
 *   a default telemetry and L × M × 16 B × generations inside the budget) is the first
 *   generation's (`maxCellsPerLevel`); with a load, `cellsPerLevel` is what the later
 *   generations settle at (the sizer's answer clamped to [min(64, max), max]). The fewest
 *   levels that reach p win, else the L with the lowest rate (`meetsTarget` is then false).
 * @param options the policy, its load, p and the budget
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming hot-keys, rps, events, weight, fp,
 * memory, generations, levels, max-levels or period, or a policy option (rate, burst, cost,
 * maxDebt, threshold, halfLifeMs, maxScore, failureDelta, lambdaPerSecond) as the Limiter
 * names it; `ERR_GRUDGE_ROTATOR_AMNESTY` for a period shorter than the amnesty guard allows;
 * `ERR_GRUDGE_SIZING_INVALID` for a load outside the model's domain; `ERR_GRUDGE_SIZING_BUDGET`
 * for a budget a Limiter refuses (below the meter, the telemetry and 16 cells per level at L = 1)
 */
export function suggestShape(options: SuggestOptions): Suggestion {
  const { targetFalsePositive, memoryBytes } = options
  const policy = options.policy ?? 'limit'
  if (policy !== 'limit' && policy !== 'abuse' && policy !== 'fairness')
    invalidOption('policy', 'limit, abuse or fairness', policy)
  const generations = options.generations ?? 2
  const maxLevels = options.maxLevels ?? DEFAULT_LEVELS
  if (!(targetFalsePositive > 0 && targetFalsePositive < 1))
    invalidOption('fp', 'a probability in (0, 1)', targetFalsePositive)
  if (!Number.isInteger(generations) || generations < 2 || generations > 16)
    invalidOption('generations', 'an integer in [2, 16]', generations)
  if (!Number.isInteger(maxLevels) || maxLevels < 1 || maxLevels > 64)
    invalidOption('max-levels', 'an integer in [1, 64]', maxLevels)
  // without levels or maxLevels the policies' default L, not a search that may answer L = 1
  const fixedL = options.levels ?? (options.maxLevels === undefined ? DEFAULT_LEVELS : undefined)
  if (fixedL !== undefined && (!Number.isInteger(fixedL) || fixedL < 1 || fixedL > MAX_LIMITER_LEVELS))
    invalidOption('levels', `an integer in [1, ${MAX_LIMITER_LEVELS}]`, fixedL)
  if (memoryBytes !== undefined && (!Number.isFinite(memoryBytes) || memoryBytes <= 0))
    invalidOption('memory', 'a finite number of bytes > 0', memoryBytes)
  const model = policyModel(options, policy, generations, targetFalsePositive)
  const shape = (levels: number, cellsPerLevel: number, maxCellsPerLevel?: number): Suggestion => {
    const fp = model.rate({ levels, cellsPerLevel })
    const bytesPerSketch = levels * cellsPerLevel * SKETCH_BYTES_PER_CELL
    const s: Suggestion = {
      policy,
      levels,
      cellsPerLevel,
      bytesPerSketch,
      bytes: bytesPerSketch * generations,
      generations,
      loadFactor: model.loadFactor(cellsPerLevel),
      falsePositiveRate: fp,
      meetsTarget: fp <= targetFalsePositive,
    }
    if (maxCellsPerLevel !== undefined) s.maxCellsPerLevel = maxCellsPerLevel
    if (model.periodMs !== undefined) s.periodMs = model.periodMs
    return s
  }
  const first = fixedL ?? 1
  let best: Suggestion | undefined
  if (memoryBytes === undefined) {
    for (let L = first; L <= (fixedL ?? maxLevels); L++) {
      const M = model.cellsFor(L)
      if (!Number.isFinite(M) || M * L > MAX_CELLS) continue
      const s = shape(L, M)
      if (fixedL !== undefined) return s
      if (s.meetsTarget && (best === undefined || s.bytes < best.bytes)) best = s
    }
    if (best === undefined) invalidOption('fp', `a rate reachable with ≤ 2^30 cells`, targetFalsePositive)
    return best
  }
  // what `new Limiter({ memory, levels: L })` builds: the library's rule, with its load meter
  // and a default telemetry inside the budget (a budget too small for L = 1 throws its error)
  for (let L = first; L <= (fixedL ?? Math.min(maxLevels, MAX_LIMITER_LEVELS)); L++) {
    let max: number
    try {
      max = sketchBudget({ memory: memoryBytes }, L, generations, '', telemetryMaxBytes()).cellsPerLevel
    } catch (e) {
      if (L === first) throw e
      break
    }
    // with a load the later generations take the sizer's answer within the budget's range
    const wanted = model.costPerSecond > 0 ? model.cellsFor(L) : undefined
    const s = shape(L, wanted === undefined ? max : selfSizedCells(max, wanted), max)
    if (wanted !== undefined) s.sizerCellsPerLevel = wanted
    if (s.meetsTarget || fixedL !== undefined) return s
    if (best === undefined || s.falsePositiveRate < best.falsePositiveRate) best = s
  }
  return best!
}

/**
 * The options line of a suggestion: `{ levels, memory }` with the budget given; without one,
 * the least `memory` whose largest shape is this one (N generations of L × M × 16 B and the half
 * of one an early growth holds while it folds, the 2 KiB load meter and a Limiter's telemetry:
 * `budgetBytesFor`, the inverse of the rule `sketchBudget` builds M with), then the fixed shape
 * `{ levels, cellsPerLevel }` for who wants one; a shape a budget cannot build (M not a power of
 * two) as the fixed shape only.
 */
function asOptions(s: Suggestion, o: SuggestOptions): string {
  if (o.memoryBytes !== undefined) return `{ levels: ${s.levels}, memory: ${o.memoryBytes} }`
  const fixed = `{ levels: ${s.levels}, cellsPerLevel: ${s.cellsPerLevel} }`
  if (s.cellsPerLevel > MAX_BUDGET_CELLS_PER_LEVEL)
    return `${fixed} (a Rotator's or a Sketch's shape: a Limiter takes at most ${MAX_BUDGET_CELLS_PER_LEVEL} cells per level)`
  if ((s.cellsPerLevel & (s.cellsPerLevel - 1)) !== 0) return fixed
  const memory = budgetFor(s.cellsPerLevel, s)
  return `{ levels: ${s.levels}, memory: ${memory} } (self-sized within it; a fixed shape: ${fixed})`
}

/** The least `memory` whose largest shape has `cellsPerLevel` cells per level at the suggestion's levels and generations (the Limiter's rule, its telemetry inside). */
function budgetFor(cellsPerLevel: number, s: Suggestion): number {
  return budgetBytesFor(
    cellsPerLevel,
    s.levels,
    s.generations,
    SKETCH_BYTES_PER_CELL,
    METER_BYTES + telemetryMaxBytes(),
    true,
  )
}

const RATE_NAMES: Readonly<Record<SuggestPolicy, readonly [string, string]>> = {
  limit: ['false rejects', 'false-reject'],
  abuse: ['false blocks', 'false-block'],
  fairness: ['false throttles', 'false-throttle'],
}

/**
 * The text `grudge suggest` prints for a suggestion: the load asked about, then one figure a
 * line (levels, cells per level, memory, period, load factor, predicted rate) and the options
 * that build the shape.
 * @param s what {@link suggestShape} returned
 * @param o what it was asked (the load and the budget are echoed)
 * @returns lines ending in a newline
 */
export function formatSuggestion(s: Suggestion, o: SuggestOptions): string {
  const load: string[] = []
  if (s.policy === 'limit') {
    if ((o.requestsPerSecond ?? 0) > 0)
      load.push(
        `${o.requestsPerSecond} requests/s at rate ${o.rate}/s, burst ${o.burst}${o.cost === undefined ? '' : `, cost ${o.cost}`}` +
          ((o.requestsPerKey ?? 1) > 1
            ? `, ${o.requestsPerKey} requests per key ${(o.requestSpacingMs ?? 0) > 0 ? `${o.requestSpacingMs} ms apart` : 'at once'}`
            : ''),
      )
  } else if ((o.eventsPerSecond ?? 0) > 0)
    load.push(`${o.eventsPerSecond} ${s.policy === 'abuse' ? 'scored events' : 'failures'}/s`)
  if ((o.hotKeys ?? 0) > 0 || load.length === 0) load.push(`hot keys ${o.hotKeys ?? 0}`)
  const rho =
    s.policy === 'limit'
      ? 'admitted cost per second / (M × rate)'
      : 'mean background of a cell, events × weight / (M × λ)'
  const lines = [
    `${s.policy}: ${load.join(', ')}, target ${RATE_NAMES[s.policy][1]} rate ${o.targetFalsePositive}${o.memoryBytes === undefined ? '' : `, memory budget ${formatBytes(o.memoryBytes)}`}`,
    `  levels             ${s.levels}`,
    `  cellsPerLevel      ${s.cellsPerLevel}${s.maxCellsPerLevel !== undefined && s.maxCellsPerLevel !== s.cellsPerLevel ? ` (the first generation: ${s.maxCellsPerLevel}, the budget's largest)` : ''}`,
    `  memory             ${formatBytes(s.bytesPerSketch)} per sketch, ${formatBytes(s.bytes)} for ${s.generations} generations` +
      (o.memoryBytes !== undefined || ceilPowerOfTwo(s.cellsPerLevel) !== s.cellsPerLevel
        ? ''
        : s.cellsPerLevel > MAX_BUDGET_CELLS_PER_LEVEL
          ? `; above the ${MAX_BUDGET_CELLS_PER_LEVEL} cells per level a Limiter's memory builds`
          : `; memory ${budgetFor(s.cellsPerLevel, s)} holds them (bytes: with half a generation for a growth's fold, the load meter and the statistics)`),
  ]
  if (s.periodMs !== undefined) lines.push(`  period             ${formatDuration(s.periodMs)}`)
  if (s.sizerCellsPerLevel !== undefined && s.sizerCellsPerLevel > s.cellsPerLevel)
    lines.push(
      `  the policy's sizer asks for ${s.sizerCellsPerLevel} cells per level at this load; the budget holds ${s.cellsPerLevel}` +
        (ceilPowerOfTwo(s.sizerCellsPerLevel) <= MAX_BUDGET_CELLS_PER_LEVEL
          ? `; memory: ${budgetFor(ceilPowerOfTwo(s.sizerCellsPerLevel), s)} would hold it`
          : `; a Limiter's memory builds at most ${MAX_BUDGET_CELLS_PER_LEVEL}`),
    )
  if (s.loadFactor > 0) lines.push(`  load factor        ${s.loadFactor.toPrecision(3)} (${rho})`)
  lines.push(
    `  ${RATE_NAMES[s.policy][0].padEnd(18)} ${s.falsePositiveRate.toExponential(3)}${s.meetsTarget ? '' : ' (the budget is too small for the target)'}`,
    // the options that build this shape and let it size itself within the budget: the one
    // given, else the least budget whose largest shape it is (a fixed shape named beside it)
    `  as options         ${asOptions(s, o)}`,
    '',
  )
  return lines.join('\n')
}
