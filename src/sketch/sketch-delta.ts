import { wallClockMs, type Clock } from '../clock.js'
import { GrudgeError } from '../errors.js'
import type { Hasher } from '../hash/hasher.js'
import { checkKnownOptions } from '../options.js'
import { finiteNow, writerStamp } from './clock-stamp.js'
import { CELL_STRIDE, CELL_TIME, foldLevels, splitView } from './cells.js'
import { addCells, addSparseCells, decayCellTo } from './merge.js'
import {
  DESERIALIZE_OPTION_KEYS,
  incompatibility,
  type Aggregator,
  type Decay,
  type DeserializeOptions,
  type SketchShape,
} from './shape.js'
import { decodeSketch, densify, encodeSketch, type DecodedCells, type SparseCells } from './sketch-codec.js'

const EMPTY = new Float64Array(0)

/**
 * What one replica added to its sketch between two syncs: per cell, the replica's view
 * minus its baseline (see `spec/rotator.md`, "Replica deltas"), decayed like a sketch
 * cell. Taken with `Sketch.takeDelta()`, shipped with {@link SketchDelta.serialize} (a
 * sketch-family frame with flag bit 0 set), applied with `Sketch.applyDelta()`.
 */
export class SketchDelta implements SketchShape {
  /** L, number of levels. */
  readonly levels: number
  /** M, cells per level. */
  readonly cellsPerLevel: number
  /** Decay of the source sketch (the delta decays the same way until applied). */
  readonly decay: Decay
  /** Lower clamp bound of the source sketch. */
  readonly lo: number
  /** Upper clamp bound of the source sketch. */
  readonly hi: number
  /** Aggregator of the source sketch. */
  readonly aggregator: Aggregator
  /** Hasher (with seed) of the source sketch. */
  readonly hasher: Hasher
  /** Clock the cell times refer to. */
  readonly clock: Clock
  /** Dense cells: given, or built from {@link SketchDelta.sparse} on first read. */
  private dense: { scores: Float64Array; touched: Float64Array } | undefined
  /**
   * The non-zero cells of a delta read from a sparse frame (absent for a dense one).
   * @internal
   */
  readonly sparse: SparseCells | undefined

  /**
   * Built by `takeDelta` and {@link SketchDelta.deserialize}; not meant to be called directly.
   * @param scores delta per cell, level-major, L·M values
   * @param touched time in ms of each non-zero value (0 for zero cells), L·M values
   */
  constructor(shape: SketchShape, clock: Clock, scores: Float64Array, touched: Float64Array) {
    this.levels = shape.levels
    this.cellsPerLevel = shape.cellsPerLevel
    this.decay = shape.decay
    this.lo = shape.lo
    this.hi = shape.hi
    this.aggregator = shape.aggregator
    this.hasher = shape.hasher
    this.clock = clock
    this.dense = { scores, touched }
    this.sparse = undefined
  }

  /**
   * A delta of decoded cells: a sparse block stays sparse (12 bytes per non-zero cell), so
   * reading a frame never allocates the L·M cells its header declares.
   * @internal
   */
  static fromCells(shape: SketchShape, clock: Clock, cells: DecodedCells): SketchDelta {
    if (cells.sparse === undefined) return new SketchDelta(shape, clock, cells.scores, cells.touched)
    const d = new SketchDelta(shape, clock, EMPTY, EMPTY)
    d.dense = undefined
    ;(d as { sparse: SparseCells | undefined }).sparse = cells.sparse
    return d
  }

  /**
   * Delta per cell, level-major (may be negative; finite, |value| ≤ min(hi − lo,
   * Number.MAX_VALUE)). For a delta read from a sparse frame the L·M array is built on the
   * first read (16·L·M bytes with {@link SketchDelta.touched}); `Sketch.applyDelta` never
   * reads it for such a delta.
   */
  get scores(): Float64Array {
    return this.denseCells().scores
  }

  /**
   * Time in ms (on {@link SketchDelta.clock}) at which each non-zero value was taken (one
   * instant for the whole delta); 0 for zero cells. Built on first read like
   * {@link SketchDelta.scores}.
   */
  get touched(): Float64Array {
    return this.denseCells().touched
  }

  private denseCells(): { scores: Float64Array; touched: Float64Array } {
    return (this.dense ??= densify(this.sparse!))
  }

  /** Whether every cell is 0 (nothing to ship). */
  isEmpty(): boolean {
    if (this.dense === undefined) return this.sparse!.indexes.length === 0
    const s = this.dense.scores
    for (let p = 0; p < s.length; p++) if (s[p] !== 0) return false
    return true
  }

  /**
   * The delta as a sketch-family frame with flag bit 0 (delta) set; layout in
   * `spec/format.md`. Size 92 + 16·L·M bytes dense, or 108 + 12·K bytes sparse (K non-zero
   * cells, flag bit 2), whichever is smaller. Stamped with {@link SketchDelta.clock}'s time
   * and `Date.now()`; {@link SketchDelta.serializeAt} takes both.
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when the clock reads NaN or ±Infinity
   */
  serialize(): Uint8Array {
    return this.serializeAt(finiteNow(this.clock, 'serialize'), wallClockMs())
  }

  /**
   * {@link SketchDelta.serialize} at explicit times: the same bytes for the same times.
   * @param nowMs the writer's time in ms on {@link SketchDelta.clock}, finite
   * @param wallMs the writer's wall-clock time in ms (Unix epoch), finite
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` naming a non-finite time
   */
  serializeAt(nowMs: number, wallMs: number): Uint8Array {
    return encodeSketch(this, writerStamp(nowMs, wallMs), splitView(this.scores, this.touched), true)
  }

  /**
   * Read a delta frame written by {@link SketchDelta.serialize}, mapping its times onto
   * the reader's clock like `Sketch.deserialize`. Allocates at most about the frame's own
   * length: a sparse frame's cells stay sparse, whatever shape its header declares.
   * @param bytes the frame
   * @param options `clock` (default system clock), `wallMs` (default `Date.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*` for a damaged, foreign or full-state frame;
   * `ERR_GRUDGE_OPTION_INVALID` for a bad or unknown option
   */
  static deserialize(bytes: Uint8Array, options?: DeserializeOptions): SketchDelta {
    checkKnownOptions(options, DESERIALIZE_OPTION_KEYS)
    const d = decodeSketch(bytes, true, options)
    return SketchDelta.fromCells(d.shape, d.clock, d.cells)
  }
}

/**
 * Baseline cells per sketch, interleaved like the sketch's own (`cells.ts`): what the
 * sketch's view held at its last sync. Absent = all zero.
 */
const baselines = new WeakMap<object, Float64Array>()

function baselineOf(owner: object, cellCount: number): Float64Array {
  let b = baselines.get(owner)
  if (b === undefined) {
    b = new Float64Array(CELL_STRIDE * cellCount)
    baselines.set(owner, b)
  }
  return b
}

/**
 * `view − baseline` per cell at now, then baseline := view. Allocates the delta (and the
 * baseline on first use); O(L·M).
 * @param cells the sketch's interleaved cells
 * @internal
 */
export function takeDeltaOf(owner: SketchShape & { clock: Clock }, cells: Float64Array): SketchDelta {
  const n = cells.length / CELL_STRIDE
  const now = finiteNow(owner.clock, 'takeDelta')
  const base = baselineOf(owner, n)
  const out = new Float64Array(n)
  const times = new Float64Array(n)
  for (let p = 0; p < n; p++) {
    const v = decayCellTo(owner, cells, p, now)
    const b = decayCellTo(owner, base, p, now)
    let d = v - b
    // with bounds near ±MAX_VALUE the difference can overflow: keep deltas finite, or a
    // later decay computes Infinity × 0 = NaN into the receiving cell
    if (d > Number.MAX_VALUE) d = Number.MAX_VALUE
    else if (d < -Number.MAX_VALUE) d = -Number.MAX_VALUE
    if (d !== 0) {
      out[p] = d
      times[p] = now
    }
    const q = CELL_STRIDE * p
    base[q] = v
    base[q + CELL_TIME] = cells[q + CELL_TIME]
  }
  return new SketchDelta(owner, owner.clock, out, times)
}

/**
 * Add a delta into the view and into the baseline (so it is never shipped back).
 * @param cells the sketch's interleaved cells
 * @throws {GrudgeError} `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming what differs;
 * `ERR_GRUDGE_OPTION_INVALID` when `delta` is not a SketchDelta
 * @internal
 */
export function applyDeltaOf(owner: SketchShape & { clock: Clock }, cells: Float64Array, delta: SketchDelta): void {
  if (!(delta instanceof SketchDelta)) {
    throw new GrudgeError(
      'ERR_GRUDGE_OPTION_INVALID',
      'applyDelta: expected a SketchDelta or its serialized bytes, received another value',
    )
  }
  const diff = incompatibility(owner, delta)
  if (diff !== undefined) {
    throw new GrudgeError(
      'ERR_GRUDGE_MERGE_INCOMPATIBLE',
      `applyDelta: expected a delta of the same configuration and seed, received different ${diff}`,
    )
  }
  const now = finiteNow(owner.clock, 'applyDelta')
  const srcNow = finiteNow(delta.clock, "applyDelta (the delta's clock)")
  // the shapes are equal, so the baseline is the receiver's own size and a sparse delta's
  // indexes (each < its L·M) fit: nothing is sized by the delta
  const base = baselineOf(owner, cells.length / CELL_STRIDE)
  if (delta.sparse !== undefined) {
    addSparseCells(owner, cells, now, delta.sparse, srcNow, true, base)
  } else {
    addCells(owner, cells, now, splitView(delta.scores, delta.touched), srcNow, true, base)
  }
}

/**
 * baseline := view: everything the sketch holds now counts as already known to the fleet.
 * @param cells the sketch's interleaved cells
 * @internal
 */
export function markSyncedOf(owner: object, cells: Float64Array): void {
  baselineOf(owner, cells.length / CELL_STRIDE).set(cells)
}

/**
 * A fold's baseline ({@link Sketch.foldFrom}): `to`'s baseline becomes `from`'s folded as its
 * cells were (`foldLevels`); nothing when `from` has none (all zero, as `to`'s absent one).
 * @internal
 */
export function foldBaselineOf(from: object, to: object, levels: number, M: number, M2: number): void {
  const b = baselines.get(from)
  if (b === undefined) return
  const out = new Float64Array(CELL_STRIDE * levels * M2)
  foldLevels(b, out, levels, M, M2)
  baselines.set(to, out)
}

/**
 * A lazy fold's baseline ({@link Sketch.foldLazilyFrom}): `to`'s baseline allocated (zero) and
 * set now, to be filled chunk by chunk from `from`'s as the cells are; undefined when `from` has
 * none (all zero, as `to`'s absent one).
 * @returns `from`'s baseline and `to`'s new one
 * @internal
 */
export function lazyFoldBaselineOf(
  from: object,
  to: object,
  cellCount: number,
): { from: Float64Array; to: Float64Array } | undefined {
  const b = baselines.get(from)
  if (b === undefined) return undefined
  const out = new Float64Array(CELL_STRIDE * cellCount)
  baselines.set(to, out)
  return { from: b, to: out }
}
