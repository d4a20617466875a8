import { systemClock, systemTicker, type Clock, type Ticker, type TickerHandle } from '../clock.js'
import { GrudgeError, invalidOption } from '../errors.js'
import { Murmur3Hasher, randomSeed } from '../hash/hasher.js'
import { Sketch, type SketchConfig, type SketchDetail } from './sketch.js'

/** Options of {@link Rotator}. */
export interface RotatorConfig {
  /** Shape, decay, bounds, aggregator and hasher of every generation (its seed and clock are ignored: each generation gets a fresh random seed, and the rotator's clock). */
  sketch: SketchConfig
  /** N, the number of generations: integer ≥ 2. Default 2. */
  generations?: number
  /** Rotation period in ms: positive finite. A misjudgement lasts at most generations × periodMs. */
  periodMs: number
  /** Runs the rotation every periodMs; default an unref'd `setInterval`. Tests pass a FakeTicker. */
  ticker?: Ticker
  /** Time source in ms, shared by every generation; default monotonic. */
  clock?: Clock
}

/**
 * N generations of {@link Sketch} under different seeds. Reads answer from the oldest
 * generation; writes go to all of them, so successors are warm; every `periodMs` the
 * oldest is retired and a fresh one (new random seed) is appended. Because a collision
 * under one seed is independent of collisions under the next, even a false positive ends:
 * it lasts at most generations × periodMs.
 *
 * `tryUpdate` decides on the oldest generation; only if it admits is the delta written to
 * all the others.
 */
export class Rotator {
  /** N, the number of generations. */
  readonly generations: number
  /** Rotation period in ms. */
  readonly periodMs: number
  /** The time source. */
  readonly clock: Clock
  /** The per-generation configuration (without seed). */
  readonly sketchConfig: Readonly<SketchConfig>
  /** Generations, oldest first. */
  protected gens: Sketch[]
  private completed = 0
  private handle: TickerHandle | undefined
  private closed = false

  /**
   * @param config see {@link RotatorConfig}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option (generations,
   * periodMs, ticker, or any sketch option)
   */
  constructor(config: RotatorConfig) {
    if (typeof config !== 'object' || config === null) invalidOption('config', 'an object', config)
    const generations = config.generations ?? 2
    if (!Number.isInteger(generations) || generations < 2) invalidOption('generations', 'an integer ≥ 2', generations)
    const periodMs = config.periodMs
    if (typeof periodMs !== 'number' || !Number.isFinite(periodMs) || periodMs <= 0) {
      invalidOption('periodMs', 'a finite number > 0 (ms)', periodMs)
    }
    const ticker = config.ticker ?? systemTicker
    if (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function') {
      invalidOption('ticker', 'an object with every(periodMs, fn)', ticker)
    }
    this.clock = config.clock ?? config.sketch?.clock ?? systemClock
    this.generations = generations
    this.periodMs = periodMs
    this.sketchConfig = Object.freeze({ ...config.sketch, seed: undefined, clock: this.clock })
    this.gens = []
    for (let i = 0; i < generations; i++) this.gens.push(this.freshGeneration())
    this.handle = ticker.every(periodMs, () => this.rotate())
  }

  /** A new generation under a fresh random seed. */
  protected freshGeneration(): Sketch {
    const hasher = this.sketchConfig.hasher ?? new Murmur3Hasher(randomSeed())
    return new Sketch({ ...this.sketchConfig, hasher: hasher.withSeed(randomSeed()), seed: undefined })
  }

  /** Count of completed rotations. */
  get rotations(): number {
    return this.completed
  }

  /**
   * Retire the oldest generation and append a fresh one. Called by the ticker every
   * periodMs; callable directly.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED` after close()
   */
  rotate(): void {
    this.assertOpen()
    this.gens.shift()
    this.gens.push(this.freshGeneration())
    this.completed++
  }

  /**
   * Add `delta` to the key in every generation (see {@link Sketch.update}).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  update(key: string | Uint8Array, delta: number): void {
    this.assertOpen()
    const gens = this.gens
    for (let i = 0; i < gens.length; i++) gens[i].update(key, delta)
  }

  /**
   * The key's aggregate in the oldest generation.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  query(key: string | Uint8Array): number {
    this.assertOpen()
    return this.gens[0].query(key)
  }

  /**
   * Update every generation, return the oldest generation's aggregate after the update.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  updateAndQuery(key: string | Uint8Array, delta: number): number {
    this.assertOpen()
    const gens = this.gens
    for (let i = 1; i < gens.length; i++) gens[i].update(key, delta)
    return gens[0].updateAndQuery(key, delta)
  }

  /**
   * Decide on the oldest generation (`aggregate + delta ≤ limit`); only if it admits, add
   * `delta` to every other generation.
   * @returns whether the delta was applied
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  tryUpdate(key: string | Uint8Array, delta: number, limit: number): boolean {
    this.assertOpen()
    const gens = this.gens
    if (!gens[0].tryUpdate(key, delta, limit)) return false
    for (let i = 1; i < gens.length; i++) gens[i].update(key, delta)
    return true
  }

  /**
   * Per-level detail of the oldest generation (see {@link Sketch.queryDetailed}).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  queryDetailed(key: string | Uint8Array): SketchDetail {
    this.assertOpen()
    return this.gens[0].queryDetailed(key)
  }

  /** Memory of all generations' cells in bytes. */
  sizeBytes(): number {
    return this.gens.length * this.gens[0].sizeBytes()
  }

  /** Stop the rotation timer; idempotent. Any later use throws `ERR_GRUDGE_ROTATOR_CLOSED`. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.handle?.cancel()
    this.handle = undefined
  }

  private assertOpen(): void {
    if (this.closed) throw new GrudgeError('ERR_GRUDGE_ROTATOR_CLOSED', 'rotator: expected an open rotator, received one that was closed')
  }
}
