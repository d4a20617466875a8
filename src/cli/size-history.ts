import type { ScoreStore } from '../limit/store.js'
import type { GenerationSizes } from './replay-report.js'

/**
 * What a policy's capacity model says of a shape at a load, for {@link SizeHistory}: the
 * policy's own mapping of a measured load to the model (`debtMeterLoad`, `abuseScoreLoad`)
 * and the model functions of `src/sketch/sizing.ts`.
 */
export interface SizeModel {
  /** ρ of a level of `cellsPerLevel` cells at `perSecond` (cost or score per second, all keys). */
  loadFactor(cellsPerLevel: number, perSecond: number): number
  /**
   * The predicted false-reject rate of the deciding generation. `window` is what the point's
   * window measured for the requests per key (the rate policy's B, `requestsPerKeyOf` of
   * src/sketch/sizing.ts, as the Limiter's stats() reads it): its admitted amount (cost) and
   * distinct keys; a model without B ignores it.
   */
  predict(cellsPerLevel: number, perSecond: number, hotKeys: number, window: SizeWindow): number
}

/** What one point's window measured besides its load: the admitted amount in all and the distinct keys seen. */
export interface SizeWindow {
  /** The admitted amount over the window (cost, or positive score), ≥ 0. */
  amount: number
  /** Distinct keys the policy decided over the window (admitted or refused), ≥ 0. */
  distinctKeys: number
}

/**
 * The sizes one policy chose over a replay: a point at the start, one at every rotation of
 * its store and one at every early growth (a load jump that grew the generations
 * before the rotation, in process by folding them in place; such a point has `early: true`), each with the shape of every generation, the load measured since the point
 * before (admitted cost, or positive score, per second; the distinct keys refused as the hot
 * keys) and the model's ρ and predicted rate for the deciding generation at that load. The
 * replay calls {@link SizeHistory.admitted} and {@link SizeHistory.refused} per request and
 * {@link SizeHistory.check} whenever log time moved (after the policies' ticker ran).
 */
export class SizeHistory {
  /** The points so far, oldest first. */
  readonly points: GenerationSizes[] = []
  private load = 0
  private readonly refusedKeys = new Set<string>()
  private readonly seenKeys = new Set<string>()
  private sinceMs: number
  /** Rotations of the store at the last point. */
  rotations = 0
  /** Early growths of the store at the last point (a load jump that grew the generations before a rotation). */
  earlyGrowths = 0

  /**
   * @param store the policy's store (an in-process Rotator: it reports its shapes and rotations)
   * @param model the policy's model
   * @param nowMs log time of the first request, ms since the epoch
   */
  constructor(
    private readonly store: ScoreStore,
    private readonly model: SizeModel,
    nowMs: number,
  ) {
    this.sinceMs = nowMs
    const g = store.generationShapes?.()
    this.rotations = g?.rotations ?? 0
    this.earlyGrowths = g?.earlyGrowths ?? 0
    if (g !== undefined) this.point(nowMs, g.generationCellsPerLevel, 0, 0, false, { amount: 0, distinctKeys: 0 })
  }

  /** Count an admitted request's cost (rate) or a recorded positive score delta (abuse). */
  admitted(amount: number): void {
    this.load += amount
  }

  /** Count a key the policy decided (admitted or refused): the window's distinct keys, B's denominator. */
  seen(key: string): void {
    this.seenKeys.add(key)
  }

  /** Count a key the policy refused (a hot key of the model). */
  refused(key: string): void {
    this.refusedKeys.add(key)
  }

  /** Add a point when the store rotated or grew early (spec/rotator.md) since the last one. */
  check(nowMs: number): void {
    const g = this.store.generationShapes?.()
    if (g === undefined || g.rotations === undefined) return
    const early = g.earlyGrowths ?? 0
    if (g.rotations === this.rotations && early === this.earlyGrowths) return
    // an early growth without a rotation: the generations were folded into a larger shape
    const atEarly = g.rotations === this.rotations
    this.rotations = g.rotations
    this.earlyGrowths = early
    const perSecond = (this.load * 1000) / Math.max(1, nowMs - this.sinceMs)
    this.point(nowMs, g.generationCellsPerLevel, perSecond, this.refusedKeys.size, atEarly, {
      amount: this.load,
      distinctKeys: this.seenKeys.size,
    })
    this.load = 0
    this.refusedKeys.clear()
    this.seenKeys.clear()
    this.sinceMs = nowMs
  }

  private point(
    atMs: number,
    cells: readonly number[],
    perSecond: number,
    hotKeys: number,
    early: boolean,
    window: SizeWindow,
  ): void {
    const deciding = cells[0]
    this.points.push({
      atMs,
      rotation: this.rotations,
      ...(early ? { early: true as const } : {}),
      cellsPerLevel: [...cells],
      loadPerSecond: perSecond,
      hotKeys,
      loadFactor: this.model.loadFactor(deciding, perSecond),
      predictedFalseRejectRate: this.model.predict(deciding, perSecond, hotKeys, window),
    })
  }
}
