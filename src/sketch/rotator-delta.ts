import { wallClockMs } from '../clock.js'
import { keyHashOf } from '../hash/hasher.js'
import { checkKnownOptions } from '../options.js'
import { finiteNow, writerStamp } from './clock-stamp.js'
import { splitView } from './cells.js'
import { decodeRotator, encodeRotator } from './rotator-codec.js'
import { DESERIALIZE_OPTION_KEYS, type DeserializeOptions } from './shape.js'
import { SketchDelta } from './sketch-delta.js'

/**
 * A rotator's replica delta: one {@link SketchDelta} per generation, oldest first, the
 * oldest having generation index `rotations`. Taken by `Rotator.takeDelta`, applied by
 * `Rotator.applyDelta`; shipped as a rotator-family frame with flag bit 0 set.
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

  /** Built by `Rotator.takeDelta` and {@link RotatorDelta.deserialize}. */
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
   * The delta as a rotator-family frame with flag bit 0 set (layout in `spec/format.md`),
   * stamped with the deltas' clock time and `Date.now()`; {@link RotatorDelta.serializeAt}
   * takes both.
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity
   */
  serialize(): Uint8Array {
    return this.serializeAt(finiteNow(this.deltas[0].clock, 'serialize'), wallClockMs())
  }

  /**
   * {@link RotatorDelta.serialize} at explicit times: the same bytes for the same times.
   * @param nowMs the writer's time in ms on the deltas' clock, finite
   * @param wallMs the writer's wall-clock time in ms (Unix epoch), finite
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` naming a non-finite time
   */
  serializeAt(nowMs: number, wallMs: number): Uint8Array {
    const stamp = writerStamp(nowMs, wallMs)
    return encodeRotator(
      this.deltas[0],
      stamp,
      {
        generations: this.deltas.length,
        periodMs: this.periodMs,
        rotations: this.rotations,
        lastRotationAtMs: stamp.nowMs,
      },
      this.masterSeed,
      keyHashOf(this.deltas[0].hasher)?.master,
      this.deltas.map((d) => ({
        seed: d.hasher.seed,
        cellsPerLevel: d.cellsPerLevel,
        createdAtMs: stamp.nowMs, // a delta's generations carry no creation time of their own
        cells: splitView(d.scores, d.touched),
      })),
      true,
    )
  }

  /**
   * Read a frame written by {@link RotatorDelta.serialize}, times mapped onto the reader's
   * clock. Allocates at most a small multiple of the frame's own length: sparse generation
   * blocks stay sparse (see {@link SketchDelta.deserialize}).
   * @param options `clock` (default system clock), `wallMs` (default `Date.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*`; `ERR_GRUDGE_OPTION_INVALID` for a bad or unknown option
   */
  static deserialize(bytes: Uint8Array, options?: DeserializeOptions): RotatorDelta {
    checkKnownOptions(options, DESERIALIZE_OPTION_KEYS)
    const d = decodeRotator(bytes, true, options)
    // sparse blocks stay sparse: nothing here is sized by the declared levels × cellsPerLevel
    const deltas = d.gens.map((g) => SketchDelta.fromCells(g.shape, d.clock, g.cells))
    return new RotatorDelta(d.fields.rotations, d.fields.periodMs, d.masterSeed, deltas)
  }
}
