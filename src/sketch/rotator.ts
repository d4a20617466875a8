import { longPeriodTicker, systemClock, systemTicker, type Clock, type Ticker, type TickerHandle } from '../clock.js'
import { GrudgeError, invalidOption } from '../errors.js'
import { Murmur3Hasher, SipHasher, hasherFromId, randomSeed, seedBytes, type SeedLike } from '../hash/hasher.js'
import {
  DESERIALIZE_OPTION_KEYS,
  decodeRotator,
  encodeRotator,
  finiteNow,
  type DecodedRotator,
  type DeserializeOptions,
  type SerializeOptions,
  type SketchShape,
} from './codec.js'
import { SketchDelta } from './delta.js'
import { incompatibility } from './merge.js'
import { invalidField } from '../format/frame.js'
import { SKETCH_OPTION_KEYS, Sketch, type SketchOptions, type SketchDetail } from './sketch.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Options of {@link Rotator}. */
export interface RotatorOptions {
  /**
   * Shape, decay, bounds, aggregator and hasher of every generation. Its `clock` is
   * replaced by the rotator's; its `seed`, if given and `seed` below is not, is the master
   * seed.
   */
  sketch: SketchOptions
  /** N, the number of generations: integer in [2, 65535] (65535: the binary frame's limit). Default 2. */
  generations?: number
  /**
   * Rotation period in ms: positive finite. A misjudgement lasts at most generations ×
   * periodMs. With linear decay it must satisfy the amnesty guard
   * (generations − 1) × periodMs ≥ hi / rate × 1000 (see {@link suggestPeriodMs}).
   */
  periodMs: number
  /**
   * Runs the rotation every periodMs; default an unref'd `setInterval` (for periodMs above
   * its 2^31 − 1 ms limit it ticks at a fraction of the period and rotates once periodMs
   * has passed on the clock). Tests pass a FakeTicker.
   */
  ticker?: Ticker
  /** Time source in ms, shared by every generation; default monotonic. */
  clock?: Clock
  /**
   * Master seed (16 bytes, number, bigint or 32 hex digits). When given, the seed of the
   * generation with index g (the g-th generation ever created, 0-based) is derived from
   * it (`spec/rotator.md`), so replicas built with the same master seed and at the same
   * rotation count hold the same seeds and can merge and exchange deltas. When absent
   * (and `sketch.seed` is absent), every generation gets a fresh random seed.
   */
  seed?: SeedLike
}

/** The option names of {@link RotatorOptions}; any other key is refused. */
export const ROTATOR_OPTION_KEYS = optionKeys<RotatorOptions>({
  sketch: true,
  generations: true,
  periodMs: true,
  ticker: true,
  clock: true,
  seed: true,
})

/** The option names of {@link Rotator.deserialize}'s options. */
export const ROTATOR_DESERIALIZE_KEYS = optionKeys<DeserializeOptions & { ticker?: Ticker }>({
  clock: true,
  wallMs: true,
  ticker: true,
})

/**
 * The smallest rotation period in ms that passes the amnesty guard for linear decay:
 * `ceil(hi / ratePerSecond × 1000 / (generations − 1))`. A fresh generation knows nothing
 * older than itself and becomes the oldest after (generations − 1) rotations; by then
 * every debt it missed (at most hi) must have drained at ratePerSecond, or the rotation
 * would forgive debt early.
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

function minPeriodMs(hi: number, ratePerSecond: number, generations: number): number {
  return ((hi / ratePerSecond) * 1000) / (generations - 1)
}

/**
 * The seed of generation index `g` under master seed `master`: SipHash-2-4 keyed by the
 * master over the 9 bytes u64le(g) ‖ 0x00, then over u64le(g) ‖ 0x01, the two 64-bit
 * outputs written little-endian (16 bytes).
 * @param master 16 bytes
 * @param g generation index, a safe integer ≥ 0
 */
export function generationSeed(master: Uint8Array, g: number): Uint8Array {
  const sip = new SipHasher(master)
  const msg = new Uint8Array(9)
  let v = BigInt(g)
  for (let i = 0; i < 8; i++) {
    msg[i] = Number(v & 0xffn)
    v >>= 8n
  }
  const out = new Uint8Array(16)
  for (let half = 0; half < 2; half++) {
    msg[8] = half
    let h = sip.hash(msg)
    for (let i = 0; i < 8; i++) {
      out[half * 8 + i] = Number(h & 0xffn)
      h >>= 8n
    }
  }
  return out
}

/**
 * A rotator's replica delta: one {@link SketchDelta} per generation, oldest first, the
 * oldest having generation index `rotations`. Taken by {@link Rotator.takeDelta}, applied
 * by {@link Rotator.applyDelta}; shipped as a rotator-family frame with flag bit 0 set.
 */
export class RotatorDelta {
  /** Rotation count of the source when taken: the index of `deltas[0]`'s generation. */
  readonly rotations: number
  /** Rotation period in ms of the source. */
  readonly periodMs: number
  /** Master seed of the source, if it has one. */
  readonly masterSeed: Uint8Array | undefined
  /** Per-generation deltas, oldest first. */
  readonly deltas: readonly SketchDelta[]

  /** Built by {@link Rotator.takeDelta} and {@link RotatorDelta.deserialize}. */
  constructor(rotations: number, periodMs: number, masterSeed: Uint8Array | undefined, deltas: readonly SketchDelta[]) {
    this.rotations = rotations
    this.periodMs = periodMs
    this.masterSeed = masterSeed
    this.deltas = deltas
  }

  /** Whether every generation's delta is empty. */
  isEmpty(): boolean {
    return this.deltas.every((d) => d.isEmpty())
  }

  /**
   * The delta as a rotator-family frame with flag bit 0 set (layout in `spec/format.md`).
   * @param options `wallMs`: wall-clock ms to stamp (default `Date.now()`)
   */
  serialize(options?: SerializeOptions): Uint8Array {
    const d0 = this.deltas[0]
    return encodeRotator(
      d0,
      d0.clock,
      {
        generations: this.deltas.length,
        periodMs: this.periodMs,
        rotations: this.rotations,
        lastRotationAtMs: finiteNow(d0.clock, 'serialize'),
      },
      this.masterSeed,
      this.deltas.map((d) => ({ seed: d.hasher.seed, scores: d.scores, touched: d.touched })),
      true,
      options,
    )
  }

  /**
   * Read a frame written by {@link RotatorDelta.serialize}, times mapped onto the reader's clock.
   * @param options `clock` (default system clock), `wallMs` (default `Date.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*`; `ERR_GRUDGE_OPTION_INVALID` for a bad or unknown option
   */
  static deserialize(bytes: Uint8Array, options?: DeserializeOptions): RotatorDelta {
    checkKnownOptions(options, DESERIALIZE_OPTION_KEYS)
    const d = decodeRotator(bytes, true, options, generationSeed)
    const deltas = d.gens.map((g) => new SketchDelta(shapeOf(d, g.seed), d.clock, g.scores, g.touched))
    return new RotatorDelta(d.fields.rotations, d.fields.periodMs, d.masterSeed, deltas)
  }
}

function shapeOf(d: DecodedRotator, seed: Uint8Array): SketchShape {
  const s = d.shape
  return {
    levels: s.levels,
    cellsPerLevel: s.cellsPerLevel,
    decay: s.decay,
    lo: s.lo,
    hi: s.hi,
    aggregator: s.aggregator,
    hasher: hasherFromId(s.hasherId, seed),
  }
}

/**
 * N generations of {@link Sketch} under different seeds. Reads answer from the oldest
 * generation; writes go to all of them, so successors are warm; every `periodMs` the
 * oldest is retired and a fresh one (new seed) is appended. Because a collision under one
 * seed is independent of collisions under the next, even a false positive ends: it lasts
 * at most generations × periodMs. (The rotating-seed construction follows the
 * "aging"/generational Bloom filters, e.g. Yoon, "Aging Bloom Filter with Two Active
 * Buffers", IEEE TKDE 2010.)
 *
 * `tryUpdate` decides on the oldest generation; only if it admits is the delta written to
 * all the others. Normative semantics, serialization and replica deltas: `spec/rotator.md`.
 */
export class Rotator {
  /** N, the number of generations. */
  readonly generations: number
  /** Rotation period in ms. */
  readonly periodMs: number
  /** The time source. */
  readonly clock: Clock
  /** The per-generation configuration (without seed). */
  readonly sketchConfig: Readonly<SketchOptions>
  /** The master seed (16 bytes) when generation seeds are derived, else undefined (random seeds). */
  readonly seed: Uint8Array | undefined
  /** Generations, oldest first. */
  protected gens: Sketch[]
  private completed = 0
  private lastRotationAtMs: number
  private handle: TickerHandle | undefined
  private closed = false
  /**
   * Whether writes carry the oldest generation's aggregate forward into the younger ones
   * (linear decay, the debt meter guarded by the amnesty check; `spec/rotator.md` §1).
   */
  private readonly carry: boolean

  /**
   * @param config see {@link RotatorOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option (generations,
   * periodMs, ticker, seed, or any sketch option), also a key that is not an option of
   * {@link RotatorOptions} or of `sketch` (e.g. `sketch.level`, with the closest name
   * suggested); `ERR_GRUDGE_ROTATOR_AMNESTY` when the
   * decay is linear and (generations − 1) × periodMs < hi / rate × 1000 (the message names
   * the smallest valid period); `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity
   */
  constructor(config: RotatorOptions) {
    if (typeof config !== 'object' || config === null) invalidOption('config', 'an object', config)
    checkKnownOptions(config, ROTATOR_OPTION_KEYS)
    if (typeof config.sketch !== 'object' || config.sketch === null)
      invalidOption('sketch', 'an object (SketchOptions)', config.sketch)
    checkKnownOptions(config.sketch, SKETCH_OPTION_KEYS, 'sketch.')
    const generations = config.generations ?? 2
    if (!Number.isInteger(generations) || generations < 2 || generations > 0xffff) {
      invalidOption('generations', 'an integer in [2, 65535] (the frame limit)', generations)
    }
    const periodMs = config.periodMs
    if (typeof periodMs !== 'number' || !Number.isFinite(periodMs) || periodMs <= 0) {
      invalidOption('periodMs', 'a finite number > 0 (ms)', periodMs)
    }
    const ticker = config.ticker ?? systemTicker
    if (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function') {
      invalidOption('ticker', 'an object with every(periodMs, fn)', ticker)
    }
    const master = config.seed ?? config.sketch.seed
    this.seed = master === undefined ? undefined : seedBytes(master, config.seed !== undefined ? 'seed' : 'sketch.seed')
    this.clock = config.clock ?? config.sketch.clock ?? systemClock
    this.generations = generations
    this.periodMs = periodMs
    this.sketchConfig = Object.freeze({ ...config.sketch, seed: undefined, clock: this.clock })
    this.gens = []
    for (let i = 0; i < generations; i++) this.gens.push(this.freshGeneration(i))
    const first = this.gens[0]
    this.carry = first.decay.kind === 'linear'
    if (first.decay.kind === 'linear') {
      const min = minPeriodMs(first.hi, first.decay.ratePerSecond, generations)
      if (periodMs < min) {
        throw new GrudgeError(
          'ERR_GRUDGE_ROTATOR_AMNESTY',
          `option "periodMs": expected ≥ ${Number.isFinite(min) ? Math.ceil(min) : 'Infinity (set sketch.hi to bound the debt)'} ms so that (generations − 1) × periodMs ≥ hi / rate × 1000 (hi = ${first.hi}, rate = ${first.decay.ratePerSecond}/s, generations = ${generations}), received ${periodMs}`,
        )
      }
    }
    this.lastRotationAtMs = finiteNow(this.clock, 'Rotator')
    // the default ticker goes through longPeriodTicker, which keeps periods beyond the timer
    // range (2^31 − 1 ms) on the clock; an injected ticker is the caller's schedule as it is
    const schedule = ticker === systemTicker ? longPeriodTicker(ticker, this.clock) : ticker
    this.handle = schedule.every(periodMs, () => this.rotate())
  }

  /** A new generation for generation index `g`: its seed derived from the master seed, or random. */
  protected freshGeneration(g: number): Sketch {
    const hasher = this.sketchConfig.hasher ?? new Murmur3Hasher(randomSeed())
    const seed = this.seed === undefined ? randomSeed() : generationSeed(this.seed, g)
    return new Sketch({ ...this.sketchConfig, hasher: hasher.withSeed(seed), seed: undefined })
  }

  /** Count of completed rotations (also the generation index of the oldest generation). */
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
    this.advance(1)
    this.stampRotation()
  }

  /**
   * Rotate until {@link Rotator.rotations} equals `rotations` (nothing when already there
   * or past): lets replicas align their generations (e.g. from a fleet-wide schedule).
   * Rotating N or more times leaves only fresh generations.
   * @param rotations target count, a safe integer ≥ 0
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`; `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  rotateTo(rotations: number): void {
    this.assertOpen()
    if (!Number.isSafeInteger(rotations) || rotations < 0) invalidOption('rotations', 'a safe integer ≥ 0', rotations)
    if (rotations <= this.completed) return
    this.advance(rotations - this.completed)
    this.stampRotation()
  }

  /**
   * Record the time of a rotation. A NaN or ±Infinity clock reading keeps the previous
   * time (rotation runs from a timer, so it must not throw; a non-finite time would make
   * the rotator's frame unreadable).
   */
  private stampRotation(): void {
    const t = this.clock.now()
    if (Number.isFinite(t)) this.lastRotationAtMs = t
  }

  /** Complete `k` ≥ 1 rotations at once. */
  private advance(k: number): void {
    const N = this.generations
    if (k >= N) {
      this.completed += k
      for (let i = 0; i < N; i++) this.gens[i] = this.freshGeneration(this.completed + i)
      return
    }
    for (let j = 0; j < k; j++) {
      this.gens.shift()
      this.completed++
      this.gens.push(this.freshGeneration(this.completed + N - 1))
    }
  }

  /**
   * Add `delta` to the key in every generation (see {@link Sketch.update}).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  update(key: string | Uint8Array, delta: number): void {
    this.assertOpen()
    const g0 = this.gens[0]
    if (this.carry)
      g0.updateAndEstimate(key, delta) // leaves the aggregate for the carry
    else g0.update(key, delta)
    this.writeYounger(key, delta)
  }

  /**
   * Write `delta` to every generation but the oldest, which has just been written. With
   * linear decay and delta ≥ 0 this is the carry-forward (`spec/rotator.md` §1): each
   * younger cell becomes clamp(max(decayed + delta, A)) where A is the oldest generation's
   * aggregate after its write, so no younger generation reads the key lower than the
   * deciding one did. Otherwise a plain add.
   */
  private writeYounger(key: string | Uint8Array, delta: number): void {
    const gens = this.gens
    if (this.carry && delta >= 0) {
      const floor = gens[0].lastAggregate
      for (let i = 1; i < gens.length; i++) gens[i].updateWithFloor(key, delta, floor)
    } else {
      for (let i = 1; i < gens.length; i++) gens[i].update(key, delta)
    }
  }

  /**
   * The key's aggregate in the oldest generation.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  estimate(key: string | Uint8Array): number {
    this.assertOpen()
    return this.gens[0].estimate(key)
  }

  /**
   * Update every generation, return the oldest generation's aggregate after the update.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  updateAndEstimate(key: string | Uint8Array, delta: number): number {
    this.assertOpen()
    const a = this.gens[0].updateAndEstimate(key, delta)
    this.writeYounger(key, delta)
    return a
  }

  /**
   * Decide on the oldest generation (`aggregate + delta ≤ limit`); only if it admits, add
   * `delta` to every other generation.
   * @returns whether the delta was applied
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   */
  tryUpdate(key: string | Uint8Array, delta: number, limit: number): boolean {
    this.assertOpen()
    const g0 = this.gens[0]
    if (!(this.carry ? g0.tryUpdateTracked(key, delta, limit) : g0.tryUpdate(key, delta, limit))) return false
    this.writeYounger(key, delta)
    return true
  }

  /**
   * A debt meter's consume: read the key in the oldest generation and, if and only if
   * `aggregate + delta ≤ limit` (a NaN never admits), add `delta` to every generation, as
   * {@link Rotator.estimate} then {@link Rotator.update} would, hashing the key once per
   * generation instead of twice in the oldest.
   * @returns the oldest generation's aggregate before the delta; the delta was applied iff `aggregate + delta ≤ limit`
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`; and the Sketch's errors
   * @internal
   */
  consume(key: string | Uint8Array, delta: number, limit: number): number {
    this.assertOpen()
    const a = this.gens[0].consumeTracked(key, delta, limit)
    if (a + delta <= limit) this.writeYounger(key, delta)
    return a
  }

  /**
   * Per-level detail of the oldest generation (see {@link Sketch.estimateDetailed}).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  estimateDetailed(key: string | Uint8Array): SketchDetail {
    this.assertOpen()
    return this.gens[0].estimateDetailed(key)
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

  /**
   * The rotator as a binary frame (family 2, version 1; byte table in `spec/format.md`):
   * shape, master seed, period, rotation count, time of the last rotation, and every
   * generation's seed and cells, oldest first. Restore with {@link Rotator.deserialize}.
   * @param options `wallMs`: the wall-clock ms to stamp (default `Date.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  serialize(options?: SerializeOptions): Uint8Array {
    this.assertOpen()
    return encodeRotator(
      this.gens[0],
      this.clock,
      {
        generations: this.generations,
        periodMs: this.periodMs,
        rotations: this.completed,
        lastRotationAtMs: this.lastRotationAtMs,
      },
      this.seed,
      this.gens.map((g) => g.cellsForFrame()),
      false,
      options,
    )
  }

  /**
   * Rebuild a rotator from {@link Rotator.serialize}'s frame, on the reader's clock and
   * ticker. Times map as for `Sketch.deserialize` (downtime counts as elapsed time); then
   * the rotations missed while down (floor(time since the last rotation / periodMs)) are
   * applied at once, so the rotation phase is kept to within one period: the next
   * ticker-driven rotation comes periodMs after the load. Every field is checked first;
   * nothing half-loaded is returned.
   * @param bytes the frame
   * @param options `clock` (default system clock), `ticker` (default unref'd setInterval),
   * `wallMs` (default `Date.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*` (`_INVALID` also when the missed rotations
   * would take the rotation count past 2^53); `ERR_GRUDGE_ROTATOR_AMNESTY` for a frame whose
   * period fails the amnesty guard; `ERR_GRUDGE_OPTION_INVALID` for a bad or unknown option
   */
  static deserialize(bytes: Uint8Array, options?: DeserializeOptions & { ticker?: Ticker }): Rotator {
    checkKnownOptions(options, ROTATOR_DESERIALIZE_KEYS)
    const d = decodeRotator(bytes, false, options, generationSeed)
    const gens = d.gens.map((g) => {
      const s = new Sketch({ ...shapeOf(d, g.seed), clock: d.clock })
      s.loadCellsFromFrame(g.scores, g.touched)
      return s
    })
    const s = d.shape
    const rotator = new Rotator({
      sketch: {
        levels: s.levels,
        cellsPerLevel: s.cellsPerLevel,
        decay: s.decay,
        lo: s.lo,
        hi: s.hi,
        aggregator: s.aggregator,
        hasher: hasherFromId(s.hasherId, randomSeed()),
      },
      generations: d.fields.generations,
      periodMs: d.fields.periodMs,
      clock: d.clock,
      ticker: options?.ticker,
      seed: d.masterSeed,
    })
    rotator.gens = gens
    rotator.completed = d.fields.rotations
    rotator.lastRotationAtMs = d.fields.lastRotationAtMs
    const missed = Math.floor((finiteNow(d.clock, 'deserialize') - d.fields.lastRotationAtMs) / d.fields.periodMs)
    if (missed > 0) {
      if (!Number.isSafeInteger(d.fields.rotations + missed)) {
        rotator.close()
        invalidField(
          'rotations after the downtime',
          `a safe integer (${d.fields.rotations} + the rotations missed at periodMs ${d.fields.periodMs}; check the writer wall-clock ms)`,
          d.fields.rotations + missed,
        )
      }
      rotator.advance(missed)
      rotator.lastRotationAtMs += missed * d.fields.periodMs
    }
    return rotator
  }

  /**
   * Whether {@link Rotator.merge} would accept `other`: a Rotator with the same generation
   * count, period, rotation count and sketch configuration whose generations have the same
   * seeds (build replicas with the same master `seed`).
   */
  isCompatible(other: Rotator): boolean {
    return other instanceof Rotator && other !== this && this.incompatibility(other) === undefined
  }

  private incompatibility(other: Rotator): string | undefined {
    if (this.generations !== other.generations) return `generations: ${this.generations} vs ${other.generations}`
    if (this.periodMs !== other.periodMs) return `periodMs: ${this.periodMs} vs ${other.periodMs}`
    if (this.completed !== other.completed)
      return `rotations: ${this.completed} vs ${other.completed} (align with rotateTo)`
    for (let i = 0; i < this.generations; i++) {
      const diff = incompatibility(this.gens[i], other.gens[i])
      if (diff !== undefined) return `generation ${i}: ${diff}`
    }
    return undefined
  }

  /**
   * Merge `other` generation by generation (see `Sketch.merge`); `other` is unchanged.
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_SELF`; `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming
   * what differs; `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  merge(other: Rotator): void {
    this.assertOpen()
    if (!(other instanceof Rotator))
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        'rotator: expected a Rotator to merge, received another value',
      )
    if (other === this)
      throw new GrudgeError('ERR_GRUDGE_MERGE_SELF', 'rotator: expected another rotator, received the same instance')
    other.assertOpen()
    const diff = this.incompatibility(other)
    if (diff !== undefined)
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        `rotator: expected the same configuration, seeds and rotation count, received different ${diff}`,
      )
    for (let i = 0; i < this.generations; i++) this.gens[i].merge(other.gens[i])
  }

  /**
   * What this replica added since its last sync, per generation (see `Sketch.takeDelta`).
   * A generation created since the last sync starts from a zero baseline.
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  takeDelta(): RotatorDelta {
    this.assertOpen()
    return new RotatorDelta(
      this.completed,
      this.periodMs,
      this.seed,
      this.gens.map((g) => g.takeDelta()),
    )
  }

  /**
   * Apply another replica's delta: each generation delta of index g (= delta.rotations + i)
   * goes into this rotator's generation of the same index; generations this rotator has
   * already retired or not yet created are skipped (align rotation counts with
   * {@link Rotator.rotateTo} to lose nothing).
   * @param delta a {@link RotatorDelta} or the bytes of `delta.serialize()`
   * @param options for bytes: `clock` (default this rotator's clock), `wallMs`
   * @returns the number of generations applied
   * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` (other shape, or another seed for
   * the same generation index); `ERR_GRUDGE_FORMAT_*`; `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  applyDelta(delta: RotatorDelta | Uint8Array, options?: DeserializeOptions): number {
    this.assertOpen()
    const d =
      delta instanceof Uint8Array
        ? RotatorDelta.deserialize(delta, { ...options, clock: options?.clock ?? this.clock })
        : delta
    if (!(d instanceof RotatorDelta))
      throw new GrudgeError(
        'ERR_GRUDGE_OPTION_INVALID',
        'applyDelta: expected a RotatorDelta or its bytes, received another value',
      )
    const shapeDiff = incompatibility(this.gens[0], d.deltas[0], true)
    if (shapeDiff !== undefined) {
      throw new GrudgeError(
        'ERR_GRUDGE_MERGE_INCOMPATIBLE',
        `rotator delta: expected the same configuration, received different ${shapeDiff}`,
      )
    }
    let applied = 0
    for (let i = 0; i < d.deltas.length; i++) {
      const j = d.rotations + i - this.completed
      if (j < 0 || j >= this.generations) continue
      this.gens[j].applyDelta(d.deltas[i])
      applied++
    }
    return applied
  }

  /**
   * Set every generation's delta baseline to its current view (see `Sketch.markSynced`).
   * @throws {GrudgeError} `ERR_GRUDGE_ROTATOR_CLOSED`
   */
  markSynced(): void {
    this.assertOpen()
    for (const g of this.gens) g.markSynced()
  }

  private assertOpen(): void {
    if (this.closed)
      throw new GrudgeError(
        'ERR_GRUDGE_ROTATOR_CLOSED',
        'rotator: expected an open rotator, received one that was closed',
      )
  }
}
