import type { Clock } from '../clock.js'
import { GrudgeError } from '../errors.js'
import { FAMILY, FieldReader, FieldWriter, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { HASHER_IDS, hasherFromId, isHasherId } from '../hash/hasher.js'
import { finiteNow, readerStamp, TimeMap, type WriterStamp } from './clock-stamp.js'
import type { CellView } from './cells.js'
import { exponential, linear, none } from './decay.js'
import {
  AGGREGATORS,
  AGGREGATOR_IDS,
  DECAY_IDS,
  MAX_CELLS,
  MAX_LEVELS,
  type Decay,
  type DeserializeOptions,
  shapeOf,
  type SketchShape,
} from './shape.js'

// The sketch family (FAMILY.sketch) and the blocks the rotator family reuses: the 52-byte
// shape block and the dense and sparse cell blocks. Byte tables in `spec/format.md`.

/** Highest version of the sketch family (FAMILY.sketch = 1) this release writes and reads. */
export const SKETCH_FORMAT_VERSION = 1
/**
 * Size in bytes of the shape params block shared by the sketch and rotator families.
 * @internal
 */
export const SHAPE_PARAMS_BYTES = 52
/**
 * Frame flag bit 0 (both families): the frame holds a replica delta, not a full state.
 * @internal
 */
export const FLAG_DELTA = 1
/**
 * Frame flag bit 2 (both families, delta frames only): cell blocks are sparse (see `spec/format.md`).
 * @internal
 */
export const FLAG_SPARSE = 4

/**
 * A decoded shape params block: the shape with its hasher id (the seed comes from
 * elsewhere in the frame) and the writer's stamps.
 * @internal
 */
export interface DecodedShape extends Omit<SketchShape, 'hasher'> {
  hasherId: number
  writer: WriterStamp
}

/**
 * The shape of a decoded block with its hasher rebuilt under `seed`.
 * @internal
 */
export function shapeWithSeed(s: DecodedShape, seed: Uint8Array): SketchShape {
  return shapeOf({ ...s, hasher: hasherFromId(s.hasherId, seed) })
}

/**
 * Cells decoded from a payload and mapped onto the reader's clock. A sparse block keeps
 * its entries in `sparse` and builds the dense arrays only when they are read: its frame
 * declares L·M cells it does not carry, and allocating them on read would let a frame of a
 * hundred bytes demand 32 GiB (issue 15, "Hardening").
 * @internal
 */
export interface DecodedCells {
  readonly scores: Float64Array
  readonly touched: Float64Array
  /** The entries of a sparse block, when the cells came from one. */
  readonly sparse?: SparseCells
}

/**
 * The non-zero cells of a sparse delta block: `count` strictly increasing cell indexes in
 * [0, size) with their non-zero values, all taken at one time `at` (on the reader's clock).
 * Memory is 12 bytes per entry: bounded by the frame's own length.
 * @internal
 */
export interface SparseCells {
  /** L·M, the number of cells the block's shape declares. */
  readonly size: number
  /** The cell indexes, strictly increasing, each in [0, size). */
  readonly indexes: Uint32Array
  /** The non-zero value of each listed cell. */
  readonly values: Float64Array
  /** The time in ms (reader's clock) every listed cell was taken at. */
  readonly at: number
}

/**
 * Dense scores and times of sparse cells (0 and time 0 for unlisted cells). Allocates
 * 16·size bytes: call it only for a shape already known to be allocatable (a receiver's
 * own, or one the caller asked for).
 * @internal
 */
export function densify(c: SparseCells): { scores: Float64Array; touched: Float64Array } {
  const scores = new Float64Array(c.size)
  const touched = new Float64Array(c.size)
  for (let k = 0; k < c.indexes.length; k++) {
    scores[c.indexes[k]] = c.values[k]
    touched[c.indexes[k]] = c.at
  }
  return { scores, touched }
}

/** {@link DecodedCells} of a sparse block: dense arrays built on first read. */
class LazySparseCells implements DecodedCells {
  private dense: { scores: Float64Array; touched: Float64Array } | undefined
  constructor(readonly sparse: SparseCells) {}
  get scores(): Float64Array {
    return (this.dense ??= densify(this.sparse)).scores
  }
  get touched(): Float64Array {
    return (this.dense ??= densify(this.sparse)).touched
  }
}

/**
 * A fully decoded and verified sketch-family frame.
 * @internal
 */
export interface DecodedSketch {
  shape: SketchShape
  clock: Clock
  delta: boolean
  cells: DecodedCells
}

/**
 * Write the 52-byte shape block.
 * @internal
 */
export function writeShape(w: FieldWriter, s: SketchShape, stamp: WriterStamp): void {
  w.u32(s.levels)
  w.u32(s.cellsPerLevel)
  w.u8(DECAY_IDS[s.decay.kind])
  w.u8(AGGREGATOR_IDS[s.aggregator])
  w.u8(s.hasher.id)
  w.u8(0)
  w.f64(s.decay.ratePerSecond)
  w.f64(s.lo)
  w.f64(s.hi)
  w.f64(stamp.wallMs)
  w.f64(stamp.nowMs)
}

/**
 * Read and check the 52-byte shape block.
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming the first bad field
 * @internal
 */
export function readShape(r: FieldReader): DecodedShape {
  const levels = r.u32('levels')
  const cells = r.u32('cellsPerLevel')
  if (levels < 1 || levels > MAX_LEVELS) invalidField('levels', 'an integer in [1, 2^20]', levels)
  if (cells < 1) invalidField('cellsPerLevel', 'an integer ≥ 1', cells)
  if (levels * cells > MAX_CELLS)
    invalidField('cellsPerLevel', `levels × cellsPerLevel ≤ 2^30 (levels = ${levels})`, cells)
  const decayId = r.u8('decay id')
  const aggId = r.u8('aggregator id')
  const hasherId = r.u8('hasher id')
  const reserved = r.u8('reserved byte 11')
  const rate = r.f64('decay rate')
  const lo = r.f64('lo')
  const hi = r.f64('hi')
  const wallMs = r.f64('writer wall-clock ms')
  const nowMs = r.f64('writer clock ms')
  let decay: Decay
  if (decayId === DECAY_IDS.none) {
    if (rate !== 0) invalidField('decay rate', '0 for decay none', rate)
    decay = none()
  } else if (decayId === DECAY_IDS.exponential || decayId === DECAY_IDS.linear) {
    if (!(Number.isFinite(rate) && rate > 0)) invalidField('decay rate', 'a finite number > 0', rate)
    decay = decayId === DECAY_IDS.exponential ? exponential(rate) : linear(rate)
  } else {
    invalidField('decay id', '0 (none), 1 (exponential) or 2 (linear)', decayId)
  }
  if (aggId >= AGGREGATORS.length) invalidField('aggregator id', '0 (min), 1 (max) or 2 (mean)', aggId)
  if (!isHasherId(hasherId)) {
    invalidField(
      'hasher id',
      `${HASHER_IDS.murmur3x64} (murmur3x64), ${HASHER_IDS.siphash} (siphash) or ${HASHER_IDS.murmur3} (murmur3)`,
      hasherId,
    )
  }
  if (reserved !== 0) invalidField('reserved byte 11', '0', reserved)
  if (!(Number.isFinite(lo) && lo <= 0)) invalidField('lo', 'a finite number ≤ 0', lo)
  if (!(Number.isFinite(hi) && hi >= 0 && hi > lo)) invalidField('hi', `a finite number ≥ 0 and > lo (${lo})`, hi)
  if (!Number.isFinite(wallMs)) invalidField('writer wall-clock ms', 'a finite number', wallMs)
  if (!Number.isFinite(nowMs)) invalidField('writer clock ms', 'a finite number', nowMs)
  return {
    levels,
    cellsPerLevel: cells,
    decay,
    lo,
    hi,
    aggregator: AGGREGATORS[aggId],
    hasherId,
    writer: { wallMs, nowMs },
  }
}

/**
 * Check the flags of a sketch- or rotator-family frame against what the reader expects.
 * @param extra flag bits the family allows beyond delta and sparse
 * @param allowed the message naming the allowed bits
 * @param readers the messages naming the reader of a delta and of a full state
 * @returns whether the frame is sparse
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` for an unknown bit, sparse without
 * delta, or a delta frame where a full state is expected (and the reverse)
 * @internal
 */
export function checkFlags(
  flags: number,
  extra: number,
  allowed: string,
  wantDelta: boolean,
  readers: { delta: string; full: string },
): boolean {
  if ((flags & ~(FLAG_DELTA | FLAG_SPARSE | extra)) !== 0) invalidField('flags', allowed, flags)
  const isDelta = (flags & FLAG_DELTA) !== 0
  const isSparse = (flags & FLAG_SPARSE) !== 0
  if (isSparse && !isDelta) invalidField('flags', 'bit 2 (sparse) only with bit 0 (delta)', flags)
  if (isDelta !== wantDelta) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_INVALID',
      `frame field "flags": expected ${wantDelta ? 'a delta frame (bit 0 set)' : 'a full state (bit 0 clear)'}, received ${isDelta ? `a delta frame (read it with ${readers.delta})` : `a full state (read it with ${readers.full})`}`,
    )
  }
  return isSparse
}

/**
 * Write one dense cell block: scores then times, L·M float64 each (the frame keeps this
 * block layout whatever the in-memory one: `cells.ts`).
 * @internal
 */
export function writeCells(w: FieldWriter, cells: CellView): void {
  const { scores, times, stride, count } = cells
  if (stride === 1) {
    w.f64s(scores)
    w.f64s(times)
    return
  }
  for (let p = 0; p < count; p++) w.f64(scores[p * stride])
  for (let p = 0; p < count; p++) w.f64(times[p * stride])
}

/**
 * Number of non-zero cells and their common time, or undefined when the times differ
 * (then only the dense block can hold them).
 * @internal
 */
export function sparseInfo(cells: CellView): { count: number; at: number } | undefined {
  const { scores, times, stride } = cells
  let count = 0
  let at = 0
  for (let p = 0; p < cells.count; p++) {
    if (scores[p * stride] === 0) continue
    if (count === 0) at = times[p * stride]
    else if (times[p * stride] !== at) return undefined
    count++
  }
  return { count, at }
}

/**
 * Bytes of a sparse cell block of `count` entries.
 * @internal
 */
export function sparseBytes(count: number): number {
  return 16 + 12 * count
}

/**
 * Write a sparse cell block: K, reserved, time, then K × (index u32, value f64).
 * @internal
 */
export function writeSparse(w: FieldWriter, cells: CellView, count: number, at: number): void {
  const { scores, stride } = cells
  w.u32(count)
  w.u32(0)
  w.f64(at)
  for (let p = 0; p < cells.count; p++) {
    const v = scores[p * stride]
    if (v === 0) continue
    w.u32(p)
    w.f64(v)
  }
}

/**
 * Read and check a sparse delta cell block, mapping its time like {@link readCells}.
 * Allocates 12 bytes per listed cell, never the L·M cells of the declared shape (see
 * {@link DecodedCells}).
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming the first bad field
 * @internal
 */
export function readSparse(r: FieldReader, shape: DecodedShape, time: TimeMap, what: string): DecodedCells {
  const n = shape.levels * shape.cellsPerLevel
  const off = r.offset
  r.need(16, `${what} sparse header`)
  const count = r.u32(`${what} sparse count`)
  const reserved = r.u32(`${what} sparse reserved`)
  const at = r.f64(`${what} sparse time`)
  if (count > n) invalidField(`${what} sparse count`, `at most levels × cellsPerLevel (${n})`, count)
  if (reserved !== 0) invalidField(`${what} sparse reserved`, '0', reserved)
  if (!Number.isFinite(at)) invalidField(`${what} sparse time`, 'a finite number (ms)', at)
  if (r.remaining < sparseBytes(count) - 16)
    invalidField(
      'payload length',
      `at least ${off + sparseBytes(count)} (sparse block of ${count} cells)`,
      off + 16 + r.remaining,
    )
  const bound = Math.min(shape.hi - shape.lo, Number.MAX_VALUE) // hi − lo may overflow: values stay finite
  // count entries, not the n cells the shape declares: count ≤ remaining / 12 was just checked,
  // so what is allocated is bounded by the frame's length whatever levels × cellsPerLevel say
  const indexes = new Uint32Array(count)
  const values = new Float64Array(count)
  const t = time.map(at)
  let prev = -1
  for (let k = 0; k < count; k++) {
    const p = r.u32(`${what} sparse index[${k}]`)
    const v = r.f64(`${what} sparse value[${k}]`)
    if (p <= prev || p >= n)
      invalidField(`${what} sparse index[${k}]`, `an index in (${prev}, ${n}) (strictly increasing)`, p)
    if (!(v >= -bound && v <= bound) || v === 0)
      invalidField(`${what} sparse value[${k}]`, `a non-zero number in [${-bound}, ${bound}]`, v)
    indexes[k] = p
    values[k] = v
    prev = p
  }
  return new LazySparseCells({ size: n, indexes, values, at: t })
}

/**
 * Read and check one dense cell block and map its times onto the reader's clock.
 * Scores must be finite and in [lo, hi] (for deltas: |score| ≤ min(hi − lo, MAX_VALUE)); times finite.
 * A time after the writer's now counts as touched at serialization (age 0), so no cell
 * lands in the reader's future. Cells with score 0 get time 0 (never touched).
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming the first bad cell
 * @internal
 */
export function readCells(
  r: FieldReader,
  shape: DecodedShape,
  delta: boolean,
  time: TimeMap,
  what: string,
): DecodedCells {
  const n = shape.levels * shape.cellsPerLevel
  const scores = r.f64s(n, `${what} scores`)
  const touched = r.f64s(n, `${what} times`)
  const span = Math.min(shape.hi - shape.lo, Number.MAX_VALUE) // hi − lo may overflow: deltas stay finite
  const lo = delta ? -span : shape.lo
  const hi = delta ? span : shape.hi
  for (let p = 0; p < n; p++) {
    const s = scores[p]
    const t = touched[p]
    if (!(s >= lo && s <= hi)) invalidField(`${what} score[${p}]`, `a number in [${lo}, ${hi}]`, s)
    if (!Number.isFinite(t)) invalidField(`${what} time[${p}]`, 'a finite number (ms)', t)
    touched[p] = s === 0 ? 0 : time.map(t)
  }
  return { scores, touched }
}

/**
 * Encode a sketch-family frame (FAMILY.sketch): shape params + cells. See `spec/format.md`.
 * A delta uses the sparse cell block (flag bit 2) when it is smaller than the dense one.
 * @param delta set flag bit 0 (a replica delta)
 * @internal
 */
export function encodeSketch(shape: SketchShape, stamp: WriterStamp, cells: CellView, delta: boolean): Uint8Array {
  const params = new Uint8Array(SHAPE_PARAMS_BYTES)
  writeShape(new FieldWriter(params), shape, stamp)
  const sparse = delta ? sparseInfo(cells) : undefined
  const denseBytes = cells.count * 16
  let payload: Uint8Array
  let flags = delta ? FLAG_DELTA : 0
  if (sparse !== undefined && sparseBytes(sparse.count) < denseBytes) {
    payload = new Uint8Array(sparseBytes(sparse.count))
    writeSparse(new FieldWriter(payload), cells, sparse.count, sparse.at)
    flags |= FLAG_SPARSE
  } else {
    payload = new Uint8Array(denseBytes)
    writeCells(new FieldWriter(payload), cells)
  }
  return writeFrame({
    family: FAMILY.sketch,
    version: SKETCH_FORMAT_VERSION,
    flags,
    seed: shape.hasher.seed,
    params,
    payload,
  })
}

/**
 * Decode and check a sketch-family frame. Every field is checked before anything is built.
 * @param wantDelta whether a delta frame (flag bit 0 set) is expected
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*` (see `readFrame`), `ERR_GRUDGE_FORMAT_INVALID`
 * for a bad params field, flag, payload size or cell
 * @internal
 */
export function decodeSketch(
  bytes: Uint8Array,
  wantDelta: boolean,
  options: DeserializeOptions | undefined,
): DecodedSketch {
  const { clock, wall } = readerStamp(options)
  const frame = readFrame(bytes, FAMILY.sketch, SKETCH_FORMAT_VERSION)
  const isSparse = checkFlags(frame.flags, 0, 'only bits 0 (delta) and 2 (sparse) may be set', wantDelta, {
    delta: "the delta class's deserialize",
    full: 'Sketch.deserialize',
  })
  const isDelta = wantDelta
  if (frame.params.length !== SHAPE_PARAMS_BYTES)
    invalidField('params length', `${SHAPE_PARAMS_BYTES}`, frame.params.length)
  const shape = readShape(new FieldReader(frame.params))
  const n = shape.levels * shape.cellsPerLevel
  const time = new TimeMap(shape.writer, finiteNow(clock, 'deserialize'), wall)
  const payload = new FieldReader(frame.payload)
  let cells: DecodedCells
  if (isSparse) {
    cells = readSparse(payload, shape, time, 'cell')
    if (payload.remaining !== 0)
      invalidField('payload length', `${payload.offset} (the sparse block)`, frame.payload.length)
  } else {
    if (frame.payload.length !== n * 16)
      invalidField('payload length', `${n * 16} (16 × levels × cellsPerLevel)`, frame.payload.length)
    cells = readCells(payload, shape, isDelta, time, 'cell')
  }
  return { delta: isDelta, cells, clock, shape: shapeWithSeed(shape, new Uint8Array(frame.seed)) }
}
