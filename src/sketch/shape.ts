import type { Clock, Ticker } from '../clock.js'
import { keyHashOf, type Hasher, type SeedLike } from '../hash/hasher.js'
import { optionKeys } from '../options.js'
import type { RotatorSizing } from './rotator-sizing.js'

// The shape of a sketch, written once: what the Sketch, its deltas, its frames, merge and
// the Redis store (src/cluster) all mean by "the same sketch". Nothing here imports the
// other sketch files, so they all import it and none imports another for a type.

/**
 * Numeric ids of the decay kinds, stored in binary frames and in the Redis store's scripts.
 * @internal
 */
export const DECAY_IDS = { none: 0, exponential: 1, linear: 2 } as const satisfies Record<DecayKind, number>
/** Name of a decay kind (`stripInternal` removes DECAY_IDS, so the names are written out). */
export type DecayKind = 'none' | 'exponential' | 'linear'

/**
 * How a cell's score moves toward 0 while time passes. Decay is lazy: it is applied to a
 * cell only when the cell is touched, over the time since it was last touched.
 *
 * - `exponential`: score × e^(−λ·Δt), Δt in seconds: proportional forgiveness (a half-life
 *   of ln 2 / λ seconds).
 * - `linear`: moves toward 0 by rate·Δt and never crosses 0: the drain of a token bucket
 *   (GCRA / leaky bucket) for a debt in [0, hi].
 * - `none`: scores stay until overwritten.
 *
 * Build one with `exponential`, `halfLife`, `linear` or `none`.
 */
export interface Decay {
  /** `'none'`, `'exponential'` or `'linear'`. */
  readonly kind: DecayKind
  /** λ in 1/s for exponential, units per second for linear, 0 for none. */
  readonly ratePerSecond: number
}

/** How the L per-level scores of a key combine into one value. */
export type Aggregator = 'min' | 'max' | 'mean'
/**
 * Numeric ids of the aggregators, stored in binary frames and in the Redis store's scripts.
 * @internal
 */
export const AGGREGATOR_IDS = { min: 0, max: 1, mean: 2 } as const satisfies Record<Aggregator, number>
/**
 * The aggregators by id (the inverse of {@link AGGREGATOR_IDS}).
 * @internal
 */
export const AGGREGATORS: readonly Aggregator[] = ['min', 'max', 'mean']

/**
 * L, the levels of a sketch when none is given: a `Sketch`, a `Rotator`, a policy of a
 * `Limiter`, a Redis store's spec, and what `grudge suggest` sizes unless it is given
 * `levels` or `maxLevels`. Four levels give the Min aggregation its benefit (a key is
 * overcounted only when all four of its cells collide; spec/sizing.md §1) at four hash
 * probes a request.
 * @internal
 */
export const DEFAULT_LEVELS = 4
/**
 * M of a Sketch (and of a Redis store's fixed shape) when `cellsPerLevel` is not given: the one
 * home of that default (`SketchOptions.cellsPerLevel`). @internal
 */
export const DEFAULT_CELLS_PER_LEVEL = 1024
/**
 * Upper bound of L, the levels (also what a frame reader accepts).
 * @internal
 */
export const MAX_LEVELS = 1 << 20
/**
 * Upper bound of M, the cells per level.
 * @internal
 */
export const MAX_CELLS_PER_LEVEL = 0x100000000
/**
 * Upper bound of L × M, the cells of one sketch: 2^30. A sketch keeps its cells in one
 * Float64Array of 2·L·M doubles (score and time paired, src/sketch/cells.ts), 16 B a cell:
 * 2^30 cells are one buffer of 16 GiB. The former bound, 2^31 − 1, asked for one of 32 GiB,
 * which V8 refused ("Array buffer allocation failed", an uncoded RangeError) on the 23 GiB
 * machine where 16 GiB were granted, and which no one-machine limiter can use.
 * @internal
 */
export const MAX_CELLS = 2 ** 30

/** The fields that make two sketches the same sketch: `Sketch`, `SketchDelta` and a rotator's generations all have them. */
export interface SketchShape {
  /** L, number of levels. */
  readonly levels: number
  /** M, cells per level. */
  readonly cellsPerLevel: number
  /** Decay kind and rate (per second). */
  readonly decay: Decay
  /** Lower clamp bound. */
  readonly lo: number
  /** Upper clamp bound. */
  readonly hi: number
  /** How levels combine. */
  readonly aggregator: Aggregator
  /** Hash function and its 16-byte seed. */
  readonly hasher: Hasher
}

/**
 * The shape fields of `s`, copied into a plain object (a Sketch or a delta carries more).
 * @internal
 */
export function shapeOf(s: SketchShape): SketchShape {
  return {
    levels: s.levels,
    cellsPerLevel: s.cellsPerLevel,
    decay: s.decay,
    lo: s.lo,
    hi: s.hi,
    aggregator: s.aggregator,
    hasher: s.hasher,
  }
}

function hex(bytes: Uint8Array): string {
  let s = ''
  for (let i = 0; i < bytes.length; i++) s += bytes[i].toString(16).padStart(2, '0')
  return s
}

/**
 * The first difference that makes two shapes unmergeable, as "field: a vs b", or
 * `undefined` when they are compatible: same levels, cells per level, decay kind and rate,
 * lo, hi, aggregator, hasher and (unless `ignoreSeed`) seed. The format version is the
 * same by construction: both live in this release.
 * @internal
 */
export function incompatibility(a: SketchShape, b: SketchShape, ignoreSeed = false): string | undefined {
  if (a.levels !== b.levels) return `levels: ${a.levels} vs ${b.levels}`
  if (a.cellsPerLevel !== b.cellsPerLevel) return `cellsPerLevel: ${a.cellsPerLevel} vs ${b.cellsPerLevel}`
  if (a.decay.kind !== b.decay.kind) return `decay: ${a.decay.kind} vs ${b.decay.kind}`
  if (a.decay.ratePerSecond !== b.decay.ratePerSecond)
    return `decay rate: ${a.decay.ratePerSecond} vs ${b.decay.ratePerSecond} per second`
  if (a.lo !== b.lo) return `lo: ${a.lo} vs ${b.lo}`
  if (a.hi !== b.hi) return `hi: ${a.hi} vs ${b.hi}`
  if (a.aggregator !== b.aggregator) return `aggregator: ${a.aggregator} vs ${b.aggregator}`
  if (a.hasher.id !== b.hasher.id) return `hasher: ${a.hasher.name} vs ${b.hasher.name}`
  if ((keyHashOf(a.hasher) === undefined) !== (keyHashOf(b.hasher) === undefined))
    return `placement: ${placementName(a.hasher)} vs ${placementName(b.hasher)}`
  if (ignoreSeed) return undefined
  const sa = a.hasher.seed
  const sb = b.hasher.seed
  for (let i = 0; i < 16; i++) if (sa[i] !== sb[i]) return `seed: ${hex(sa)} vs ${hex(sb)}`
  return undefined
}

/** Options of `Sketch`. */
export interface SketchOptions {
  /** L, the number of levels (hash rows): integer in [1, 2^20]. Default 4. */
  levels?: number
  /** M, cells per level: integer in [1, 2^32], with L × M ≤ 2^30. Memory is L×M×16 bytes. Default 1024. */
  cellsPerLevel?: number
  /** How scores decay toward 0 with time; default `none()`. */
  decay?: Decay
  /** Lower clamp bound, finite, ≤ 0. Default 0. */
  lo?: number
  /** Upper clamp bound, finite, ≥ 0 and > lo. Default `Number.MAX_VALUE`. */
  hi?: number
  /** How levels combine: `'min'` (default: one-sided error), `'max'` or `'mean'`. */
  aggregator?: Aggregator
  /**
   * The hash function: `murmur3()` (default) or `sipHash()` (a keyed PRF, for keys an
   * attacker chooses). Its seed is used unless `seed` is given.
   */
  hasher?: Hasher
  /** Seed of the hasher (16 bytes, number, bigint or 32 hex digits). Random when absent. */
  seed?: SeedLike
  /** Time source in ms; default `systemClock` (monotonic). */
  clock?: Clock
}

/**
 * The option names of {@link SketchOptions}; any other key is refused.
 * @internal
 */
export const SKETCH_OPTION_KEYS = optionKeys<SketchOptions>({
  levels: true,
  cellsPerLevel: true,
  decay: true,
  lo: true,
  hi: true,
  aggregator: true,
  hasher: true,
  seed: true,
  clock: true,
})

/** Options of every sketch-family and rotator-family `deserialize` (and of `applyDelta` given bytes). */
export interface DeserializeOptions {
  /** The reader's time source in ms; default `systemClock`. */
  clock?: Clock
  /**
   * The reader's wall-clock time in ms (Unix epoch) at load. Default `Date.now()`. The
   * downtime `max(0, wallMs − writer's wallMs)` is added to every cell's age.
   */
  wallMs?: number
}

/**
 * The option names of {@link DeserializeOptions}; any other key is refused.
 * @internal
 */
export const DESERIALIZE_OPTION_KEYS = optionKeys<DeserializeOptions>({ clock: true, wallMs: true })

/** Options of `Rotator`. */
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
   * (generations − 1) × periodMs ≥ hi / rate × 1000 (see `suggestPeriodMs`).
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
  /**
   * Self-sizing: each new generation gets its cells per level from the load measured over
   * the youngest one (see `RotatorSizing`; `spec/rotator.md` §1 "Self-sizing"). Absent: every
   * generation has the shape of `sketch` (fixed shape).
   */
  sizing?: RotatorSizing
}

/**
 * The option names of {@link RotatorOptions}; any other key is refused.
 * @internal
 */
export const ROTATOR_OPTION_KEYS = optionKeys<RotatorOptions>({
  sketch: true,
  generations: true,
  periodMs: true,
  ticker: true,
  clock: true,
  seed: true,
  sizing: true,
})

/** Options of `Rotator.deserialize`: the reader's clock and wall clock, and its ticker. */
export interface RotatorDeserializeOptions extends DeserializeOptions {
  /** Runs the restored rotator's rotation; default an unref'd `setInterval`. */
  ticker?: Ticker
  /** Self-sizing of the restored rotator (a frame carries shapes, not functions); absent: new generations take the youngest generation's shape. */
  sizing?: RotatorSizing
}

/**
 * The option names of {@link RotatorDeserializeOptions}; any other key is refused.
 * @internal
 */
export const ROTATOR_DESERIALIZE_KEYS = optionKeys<RotatorDeserializeOptions>({
  clock: true,
  wallMs: true,
  ticker: true,
  sizing: true,
})

/**
 * Bytes one cell of a Sketch holds: a Float64 score and a Float64 last-touched time (two
 * Float64Arrays of L × M). What `memory` budgets divide by; a test pins it to
 * `Sketch.sizeBytes()`.
 * @internal
 */
export const SKETCH_BYTES_PER_CELL = 16

/** The placement's name in an incompatibility message (spec/rotator.md §1 "Placement"). */
function placementName(h: Hasher): string {
  return keyHashOf(h) === undefined ? 'own hash per generation' : 'keyed mix of one key hash'
}
