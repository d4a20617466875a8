import { systemClock, wallClockMs, type Clock } from '../clock.js'
import { GrudgeError, GrudgeRangeError, describeValue, invalidOption } from '../errors.js'
import { FAMILY, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { hasherFromId, isHasherId, type Hasher } from '../hash/hasher.js'
import { DECAY_IDS, exponential, linear, none, type Decay } from './decay.js'
import type { Aggregator, SketchOptions } from './sketch.js'
import { optionKeys } from '../options.js'

/** Highest version of the sketch family (FAMILY.sketch = 1) this release writes and reads. */
export const SKETCH_FORMAT_VERSION = 1
/** Highest version of the rotator family (FAMILY.rotator = 2) this release writes and reads. */
export const ROTATOR_FORMAT_VERSION = 1
/** Size in bytes of the shape params block shared by the sketch and rotator families. */
export const SHAPE_PARAMS_BYTES = 52
/** Size in bytes of the rotator params (shape block + rotator fields). */
export const ROTATOR_PARAMS_BYTES = 84
/** Frame flag bit 0 (both families): the frame holds a replica delta, not a full state. */
export const FLAG_DELTA = 1
/** Rotator frame flag bit 1: generation seeds derive from the master seed in the frame's seed field. */
export const FLAG_SEEDED = 2
/** Frame flag bit 2 (both families, delta frames only): cell blocks are sparse (see `spec/format.md`). */
export const FLAG_SPARSE = 4

const AGG_BY_ID: readonly Aggregator[] = ['min', 'max', 'mean']
const AGG_IDS: Record<Aggregator, number> = { min: 0, max: 1, mean: 2 }

/** Options of every `serialize`. */
export interface SerializeOptions {
  /**
   * The writer's wall-clock time in ms (Unix epoch) stamped into the frame. Default
   * `Date.now()`; tests pass a fixed value.
   */
  wallMs?: number
}

/** Options of every `deserialize`. */
export interface DeserializeOptions {
  /** The reader's time source in ms; default {@link systemClock}. */
  clock?: Clock
  /**
   * The reader's wall-clock time in ms (Unix epoch) at load. Default `Date.now()`. The
   * downtime `max(0, wallMs − writer's wallMs)` is added to every cell's age.
   */
  wallMs?: number
}

/** The option names of {@link DeserializeOptions}; any other key is refused. */
export const DESERIALIZE_OPTION_KEYS = optionKeys<DeserializeOptions>({ clock: true, wallMs: true })

/** The configuration fields a frame carries; `Sketch`, `SketchDelta` and a rotator's generations all have them. */
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

/** A decoded shape params block. */
export interface DecodedShape {
  levels: number
  cellsPerLevel: number
  decay: Decay
  lo: number
  hi: number
  aggregator: Aggregator
  hasherId: number
  writerWallMs: number
  writerNowMs: number
}

/** Cells decoded from a payload and mapped onto the reader's clock. */
export interface DecodedCells {
  scores: Float64Array
  touched: Float64Array
}

/** A fully decoded and verified sketch-family frame. */
export interface DecodedSketch {
  config: SketchOptions & { clock: Clock }
  delta: boolean
  cells: DecodedCells
}

const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f

/**
 * The clock's time in ms for an operation that stamps times into cells or frames
 * (serialize, deserialize, merge, replica deltas, rotation bookkeeping). Unlike the hot
 * paths, which treat a NaN or ±Infinity reading as "decay nothing, stamp nothing", these
 * would freeze a cell (a time of +Infinity is never in the past again) or write a frame
 * no reader accepts, so they refuse the reading before changing anything.
 * @param clock the clock to read
 * @param what who reads it, for the message
 * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when `clock.now()` is not a finite number
 */
export function finiteNow(clock: Clock, what: string): number {
  const t = clock.now()
  if (typeof t !== 'number' || !Number.isFinite(t)) {
    throw new GrudgeRangeError(
      'ERR_GRUDGE_VALUE_NOT_FINITE',
      `${what}: expected clock.now() to be a finite number (ms), received ${describeValue(t)}`,
    )
  }
  return t
}

/** Writer-side time stamps: wall-clock ms and clock now ms. */
export function writerStamp(clock: Clock, options: SerializeOptions | undefined): [number, number] {
  const wall = options?.wallMs ?? wallClockMs()
  if (typeof wall !== 'number' || !Number.isFinite(wall)) invalidOption('wallMs', 'a finite number (ms)', wall)
  return [wall, finiteNow(clock, 'serialize')]
}

/** Reader-side clock and wall-clock ms, validated. */
export function readerStamp(options: DeserializeOptions | undefined): { clock: Clock; wall: number } {
  if (options !== undefined && (typeof options !== 'object' || options === null))
    invalidOption('options', 'an object', options)
  const clock = options?.clock ?? systemClock
  if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function') {
    invalidOption('clock', 'an object with now(): number', clock)
  }
  const wall = options?.wallMs ?? wallClockMs()
  if (typeof wall !== 'number' || !Number.isFinite(wall)) invalidOption('wallMs', 'a finite number (ms)', wall)
  return { clock, wall }
}

/** Write the 52-byte shape block at `off`. */
export function writeShape(dv: DataView, off: number, s: SketchShape, writerWall: number, writerNow: number): void {
  dv.setUint32(off, s.levels, true)
  dv.setUint32(off + 4, s.cellsPerLevel, true)
  dv.setUint8(off + 8, DECAY_IDS[s.decay.kind])
  dv.setUint8(off + 9, AGG_IDS[s.aggregator])
  dv.setUint8(off + 10, s.hasher.id)
  dv.setUint8(off + 11, 0)
  dv.setFloat64(off + 12, s.decay.ratePerSecond, true)
  dv.setFloat64(off + 20, s.lo, true)
  dv.setFloat64(off + 28, s.hi, true)
  dv.setFloat64(off + 36, writerWall, true)
  dv.setFloat64(off + 44, writerNow, true)
}

/**
 * Read and check the 52-byte shape block at `off`.
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming the first bad field
 */
export function readShape(dv: DataView, off: number): DecodedShape {
  const levels = dv.getUint32(off, true)
  const cells = dv.getUint32(off + 4, true)
  if (levels < 1 || levels > 1 << 20) invalidField('levels', 'an integer in [1, 2^20]', levels)
  if (cells < 1) invalidField('cellsPerLevel', 'an integer ≥ 1', cells)
  if (levels * cells > 0x7fffffff)
    invalidField('cellsPerLevel', `levels × cellsPerLevel ≤ 2^31 − 1 (levels = ${levels})`, cells)
  const decayId = dv.getUint8(off + 8)
  const aggId = dv.getUint8(off + 9)
  const hasherId = dv.getUint8(off + 10)
  const reserved = dv.getUint8(off + 11)
  const rate = dv.getFloat64(off + 12, true)
  const lo = dv.getFloat64(off + 20, true)
  const hi = dv.getFloat64(off + 28, true)
  const writerWallMs = dv.getFloat64(off + 36, true)
  const writerNowMs = dv.getFloat64(off + 44, true)
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
  if (aggId >= AGG_BY_ID.length) invalidField('aggregator id', '0 (min), 1 (max) or 2 (mean)', aggId)
  if (!isHasherId(hasherId)) {
    invalidField('hasher id', '1 (murmur3x64), 2 (siphash) or 3 (murmur3)', hasherId)
  }
  if (reserved !== 0) invalidField('reserved byte 11', '0', reserved)
  if (!(Number.isFinite(lo) && lo <= 0)) invalidField('lo', 'a finite number ≤ 0', lo)
  if (!(Number.isFinite(hi) && hi >= 0 && hi > lo)) invalidField('hi', `a finite number ≥ 0 and > lo (${lo})`, hi)
  if (!Number.isFinite(writerWallMs)) invalidField('writer wall-clock ms', 'a finite number', writerWallMs)
  if (!Number.isFinite(writerNowMs)) invalidField('writer clock ms', 'a finite number', writerNowMs)
  return {
    levels,
    cellsPerLevel: cells,
    decay,
    lo,
    hi,
    aggregator: AGG_BY_ID[aggId],
    hasherId,
    writerWallMs,
    writerNowMs,
  }
}

/** Copy `n` float64 values little-endian into `out` at byte offset `off`. */
function putF64(out: Uint8Array, off: number, src: Float64Array): void {
  if (LITTLE_ENDIAN) {
    out.set(new Uint8Array(src.buffer, src.byteOffset, src.byteLength), off)
    return
  }
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength)
  for (let i = 0; i < src.length; i++) dv.setFloat64(off + i * 8, src[i], true)
}

/** Read `n` little-endian float64 values at byte offset `off`. */
function getF64(bytes: Uint8Array, off: number, n: number): Float64Array {
  const out = new Float64Array(n)
  if (LITTLE_ENDIAN) {
    new Uint8Array(out.buffer).set(bytes.subarray(off, off + n * 8))
    return out
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let i = 0; i < n; i++) out[i] = dv.getFloat64(off + i * 8, true)
  return out
}

/** Write one cell block (scores then times, L·M float64 each) at `off`. */
export function writeCells(out: Uint8Array, off: number, scores: Float64Array, touched: Float64Array): void {
  putF64(out, off, scores)
  putF64(out, off + scores.byteLength, touched)
}

/** Number of non-zero cells and their common time, or undefined when the times differ (then only the dense block can hold them). */
function sparseInfo(scores: Float64Array, touched: Float64Array): { count: number; at: number } | undefined {
  let count = 0
  let at = 0
  for (let p = 0; p < scores.length; p++) {
    if (scores[p] === 0) continue
    if (count === 0) at = touched[p]
    else if (touched[p] !== at) return undefined
    count++
  }
  return { count, at }
}

/** Bytes of a sparse cell block of `count` entries. */
function sparseBytes(count: number): number {
  return 16 + 12 * count
}

/** Write a sparse cell block at `off`: K, reserved, time, then K × (index u32, value f64). */
function writeSparse(out: Uint8Array, off: number, scores: Float64Array, count: number, at: number): void {
  const dv = new DataView(out.buffer, out.byteOffset, out.byteLength)
  dv.setUint32(off, count, true)
  dv.setUint32(off + 4, 0, true)
  dv.setFloat64(off + 8, at, true)
  let o = off + 16
  for (let p = 0; p < scores.length; p++) {
    if (scores[p] === 0) continue
    dv.setUint32(o, p, true)
    dv.setFloat64(o + 4, scores[p], true)
    o += 12
  }
}

/**
 * Read and check a sparse delta cell block at `off` (within `end`), mapping its time like
 * {@link readCells}; returns dense cells and the offset after the block.
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming the first bad field
 */
function readSparse(
  bytes: Uint8Array,
  off: number,
  end: number,
  shape: DecodedShape,
  shift: number,
  what: string,
): { cells: DecodedCells; next: number } {
  const n = shape.levels * shape.cellsPerLevel
  if (off + 16 > end) invalidField(`${what} sparse header`, `16 bytes at offset ${off}`, `${end - off} bytes`)
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const count = dv.getUint32(off, true)
  const reserved = dv.getUint32(off + 4, true)
  const at = dv.getFloat64(off + 8, true)
  if (count > n) invalidField(`${what} sparse count`, `at most levels × cellsPerLevel (${n})`, count)
  if (reserved !== 0) invalidField(`${what} sparse reserved`, '0', reserved)
  if (!Number.isFinite(at)) invalidField(`${what} sparse time`, 'a finite number (ms)', at)
  if (off + sparseBytes(count) > end)
    invalidField('payload length', `at least ${off + sparseBytes(count)} (sparse block of ${count} cells)`, end)
  const bound = Math.min(shape.hi - shape.lo, Number.MAX_VALUE) // hi − lo may overflow: values stay finite
  const scores = new Float64Array(n)
  const touched = new Float64Array(n)
  const time = finiteTime(at > shape.writerNowMs ? shape.writerNowMs + shift : at + shift)
  let prev = -1
  let o = off + 16
  for (let k = 0; k < count; k++, o += 12) {
    const p = dv.getUint32(o, true)
    const v = dv.getFloat64(o + 4, true)
    if (p <= prev || p >= n)
      invalidField(`${what} sparse index[${k}]`, `an index in (${prev}, ${n}) (strictly increasing)`, p)
    if (!(v >= -bound && v <= bound) || v === 0)
      invalidField(`${what} sparse value[${k}]`, `a non-zero number in [${-bound}, ${bound}]`, v)
    scores[p] = v
    touched[p] = time
    prev = p
  }
  return { cells: { scores, touched }, next: o }
}

/**
 * A mapped time kept finite: frames with extreme finite times (crafted, the CRC recomputed)
 * can map a time past ±Number.MAX_VALUE, and an infinite time would freeze a cell or make
 * the restored structure's own frame unreadable. −MAX_VALUE is still infinitely old.
 */
function finiteTime(t: number): number {
  return t >= -Number.MAX_VALUE ? (t <= Number.MAX_VALUE ? t : Number.MAX_VALUE) : -Number.MAX_VALUE
}

/**
 * The offset added to a writer-clock time to get a reader-clock time: a cell touched at
 * writer time τ had age `writerNow − τ` at serialization and `downtime` more at load, so
 * it lands at `readerNow − (writerNow − τ) − downtime`, with
 * `downtime = max(0, readerWall − writerWall)`.
 */
export function clockShift(shape: DecodedShape, readerNow: number, readerWall: number): number {
  const downtime = Math.max(0, readerWall - shape.writerWallMs)
  return readerNow - shape.writerNowMs - downtime
}

/**
 * Read and check one cell block at `off` and map its times onto the reader's clock.
 * Scores must be finite and in [lo, hi] (for deltas: |score| ≤ min(hi − lo, MAX_VALUE)); times finite.
 * A time after the writer's now counts as touched at serialization (age 0), so no cell
 * lands in the reader's future. Cells with score 0 get time 0 (never touched).
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` naming the first bad cell
 */
export function readCells(
  bytes: Uint8Array,
  off: number,
  shape: DecodedShape,
  delta: boolean,
  shift: number,
  what: string,
): DecodedCells {
  const n = shape.levels * shape.cellsPerLevel
  const scores = getF64(bytes, off, n)
  const touched = getF64(bytes, off + n * 8, n)
  const span = Math.min(shape.hi - shape.lo, Number.MAX_VALUE) // hi − lo may overflow: deltas stay finite
  const lo = delta ? -span : shape.lo
  const hi = delta ? span : shape.hi
  const downtimeAt = shape.writerNowMs + shift // reader time of the serialization instant, minus downtime
  for (let p = 0; p < n; p++) {
    const s = scores[p]
    const t = touched[p]
    if (!(s >= lo && s <= hi)) invalidField(`${what} score[${p}]`, `a number in [${lo}, ${hi}]`, s)
    if (!Number.isFinite(t)) invalidField(`${what} time[${p}]`, 'a finite number (ms)', t)
    if (s === 0) touched[p] = 0
    else touched[p] = finiteTime(t > shape.writerNowMs ? downtimeAt : t + shift)
  }
  return { scores, touched }
}

/**
 * Encode a sketch-family frame (FAMILY.sketch): shape params + cells. See `spec/format.md`.
 * A delta uses the sparse cell block (flag bit 2) when it is smaller than the dense one.
 * @param delta set flag bit 0 (a replica delta)
 */
export function encodeSketch(
  shape: SketchShape,
  clock: Clock,
  scores: Float64Array,
  touched: Float64Array,
  delta: boolean,
  options: SerializeOptions | undefined,
): Uint8Array {
  const [wall, now] = writerStamp(clock, options)
  const params = new Uint8Array(SHAPE_PARAMS_BYTES)
  writeShape(new DataView(params.buffer), 0, shape, wall, now)
  const sparse = delta ? sparseInfo(scores, touched) : undefined
  let payload: Uint8Array
  let flags = delta ? FLAG_DELTA : 0
  if (sparse !== undefined && sparseBytes(sparse.count) < scores.byteLength * 2) {
    payload = new Uint8Array(sparseBytes(sparse.count))
    writeSparse(payload, 0, scores, sparse.count, sparse.at)
    flags |= FLAG_SPARSE
  } else {
    payload = new Uint8Array(scores.byteLength * 2)
    writeCells(payload, 0, scores, touched)
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
 */
export function decodeSketch(
  bytes: Uint8Array,
  wantDelta: boolean,
  options: DeserializeOptions | undefined,
): DecodedSketch {
  const { clock, wall } = readerStamp(options)
  const frame = readFrame(bytes, FAMILY.sketch, SKETCH_FORMAT_VERSION)
  if ((frame.flags & ~(FLAG_DELTA | FLAG_SPARSE)) !== 0)
    invalidField('flags', 'only bits 0 (delta) and 2 (sparse) may be set', frame.flags)
  const isDelta = (frame.flags & FLAG_DELTA) !== 0
  const isSparse = (frame.flags & FLAG_SPARSE) !== 0
  if (isSparse && !isDelta) invalidField('flags', 'bit 2 (sparse) only with bit 0 (delta)', frame.flags)
  if (isDelta !== wantDelta) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_INVALID',
      `frame field "flags": expected ${wantDelta ? 'a delta frame (bit 0 set)' : 'a full state (bit 0 clear)'}, received ${isDelta ? "a delta frame (read it with the delta class's deserialize)" : 'a full state (read it with Sketch.deserialize)'}`,
    )
  }
  if (frame.params.length !== SHAPE_PARAMS_BYTES)
    invalidField('params length', `${SHAPE_PARAMS_BYTES}`, frame.params.length)
  const shape = readShape(new DataView(frame.params.buffer, frame.params.byteOffset, frame.params.byteLength), 0)
  const n = shape.levels * shape.cellsPerLevel
  const now = finiteNow(clock, 'deserialize')
  const shift = clockShift(shape, now, wall)
  let cells: DecodedCells
  if (isSparse) {
    const r = readSparse(frame.payload, 0, frame.payload.length, shape, shift, 'cell')
    if (r.next !== frame.payload.length)
      invalidField('payload length', `${r.next} (the sparse block)`, frame.payload.length)
    cells = r.cells
  } else {
    if (frame.payload.length !== n * 16)
      invalidField('payload length', `${n * 16} (16 × levels × cellsPerLevel)`, frame.payload.length)
    cells = readCells(frame.payload, 0, shape, isDelta, shift, 'cell')
  }
  const seed = new Uint8Array(frame.seed)
  return {
    delta: isDelta,
    cells,
    config: {
      levels: shape.levels,
      cellsPerLevel: shape.cellsPerLevel,
      decay: shape.decay,
      lo: shape.lo,
      hi: shape.hi,
      aggregator: shape.aggregator,
      hasher: hasherFromId(shape.hasherId, seed),
      clock,
    },
  }
}

/** Rotator-level fields of a rotator-family frame. */
export interface RotatorFields {
  /** N, generations. */
  generations: number
  /** Rotation period in ms. */
  periodMs: number
  /** Completed rotations (the index of the oldest generation). */
  rotations: number
  /** Clock time in ms of the last rotation (or construction). */
  lastRotationAtMs: number
}

/** One generation's cells and seed. */
export interface GenerationCells {
  seed: Uint8Array
  scores: Float64Array
  touched: Float64Array
}

/**
 * Encode a rotator-family frame (FAMILY.rotator): shape block, rotator fields, then per
 * generation (oldest first) its 16-byte seed and cells. See `spec/format.md`.
 * @param masterSeed the rotator's master seed (flag bit 1) or undefined (seed field zero)
 */
export function encodeRotator(
  shape: SketchShape,
  clock: Clock,
  fields: RotatorFields,
  masterSeed: Uint8Array | undefined,
  gens: readonly GenerationCells[],
  delta: boolean,
  options: SerializeOptions | undefined,
): Uint8Array {
  const [wall, now] = writerStamp(clock, options)
  const params = new Uint8Array(ROTATOR_PARAMS_BYTES)
  const dv = new DataView(params.buffer)
  writeShape(dv, 0, shape, wall, now)
  dv.setUint32(52, fields.generations, true)
  dv.setUint32(56, 0, true)
  dv.setFloat64(60, fields.periodMs, true)
  dv.setFloat64(68, fields.rotations, true)
  dv.setFloat64(76, fields.lastRotationAtMs, true)
  const cellBytes = shape.levels * shape.cellsPerLevel * 16
  const sparse = delta ? gens.map((g) => sparseInfo(g.scores, g.touched)) : []
  const useSparse =
    delta &&
    sparse.every((x) => x !== undefined) &&
    sparse.reduce((acc, x) => acc + 16 + sparseBytes(x.count), 0) < gens.length * (16 + cellBytes)
  let payload: Uint8Array
  if (useSparse) {
    payload = new Uint8Array(sparse.reduce((acc, x) => acc + 16 + sparseBytes(x.count), 0))
    let off = 0
    for (let g = 0; g < gens.length; g++) {
      payload.set(gens[g].seed, off)
      writeSparse(payload, off + 16, gens[g].scores, sparse[g].count, sparse[g].at)
      off += 16 + sparseBytes(sparse[g].count)
    }
  } else {
    payload = new Uint8Array(gens.length * (16 + cellBytes))
    for (let g = 0; g < gens.length; g++) {
      const off = g * (16 + cellBytes)
      payload.set(gens[g].seed, off)
      writeCells(payload, off + 16, gens[g].scores, gens[g].touched)
    }
  }
  const flags = (delta ? FLAG_DELTA : 0) | (masterSeed !== undefined ? FLAG_SEEDED : 0) | (useSparse ? FLAG_SPARSE : 0)
  return writeFrame({
    family: FAMILY.rotator,
    version: ROTATOR_FORMAT_VERSION,
    flags,
    seed: masterSeed ?? new Uint8Array(16),
    params,
    payload,
  })
}

/** A fully decoded and verified rotator-family frame. */
export interface DecodedRotator {
  shape: DecodedShape
  fields: RotatorFields
  masterSeed: Uint8Array | undefined
  gens: GenerationCells[]
  clock: Clock
  delta: boolean
}

/**
 * Decode and check a rotator-family frame; times (cells and last rotation) are mapped
 * onto the reader's clock. Generation seeds are checked against the master seed when
 * flag bit 1 is set.
 * @param deriveSeed the generation-seed derivation (index → 16 bytes) for seeded frames
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_*`
 */
export function decodeRotator(
  bytes: Uint8Array,
  wantDelta: boolean,
  options: DeserializeOptions | undefined,
  deriveSeed: (master: Uint8Array, index: number) => Uint8Array,
): DecodedRotator {
  const { clock, wall } = readerStamp(options)
  const frame = readFrame(bytes, FAMILY.rotator, ROTATOR_FORMAT_VERSION)
  if ((frame.flags & ~(FLAG_DELTA | FLAG_SEEDED | FLAG_SPARSE)) !== 0) {
    invalidField('flags', 'only bits 0 (delta), 1 (seeded) and 2 (sparse) may be set', frame.flags)
  }
  const isDelta = (frame.flags & FLAG_DELTA) !== 0
  const isSparse = (frame.flags & FLAG_SPARSE) !== 0
  if (isSparse && !isDelta) invalidField('flags', 'bit 2 (sparse) only with bit 0 (delta)', frame.flags)
  if (isDelta !== wantDelta) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_INVALID',
      `frame field "flags": expected ${wantDelta ? 'a delta frame (bit 0 set)' : 'a full state (bit 0 clear)'}, received ${isDelta ? 'a delta frame (read it with RotatorDelta.deserialize)' : 'a full state (read it with Rotator.deserialize)'}`,
    )
  }
  const seeded = (frame.flags & FLAG_SEEDED) !== 0
  if (frame.params.length !== ROTATOR_PARAMS_BYTES)
    invalidField('params length', `${ROTATOR_PARAMS_BYTES}`, frame.params.length)
  const dv = new DataView(frame.params.buffer, frame.params.byteOffset, frame.params.byteLength)
  const shape = readShape(dv, 0)
  const generations = dv.getUint32(52, true)
  const reserved = dv.getUint32(56, true)
  const periodMs = dv.getFloat64(60, true)
  const rotations = dv.getFloat64(68, true)
  const lastRotationAtMs = dv.getFloat64(76, true)
  if (generations < 2 || generations > 0xffff) invalidField('generations', 'an integer in [2, 65535]', generations)
  if (reserved !== 0) invalidField('reserved bytes 56..59', '0', reserved)
  if (!(Number.isFinite(periodMs) && periodMs > 0)) invalidField('periodMs', 'a finite number > 0', periodMs)
  if (!(Number.isSafeInteger(rotations) && rotations >= 0)) invalidField('rotations', 'a safe integer ≥ 0', rotations)
  if (!Number.isFinite(lastRotationAtMs)) invalidField('last rotation ms', 'a finite number', lastRotationAtMs)
  const master = seeded ? new Uint8Array(frame.seed) : undefined
  if (!seeded) {
    for (let i = 0; i < 16; i++)
      if (frame.seed[i] !== 0) invalidField('seed', '16 zero bytes (flag bit 1 clear: no master seed)', frame.seed[i])
  }
  const n = shape.levels * shape.cellsPerLevel
  const per = 16 + n * 16
  const end = frame.payload.length
  if (!isSparse && end !== generations * per) {
    invalidField('payload length', `${generations * per} (generations × (16 + 16 × levels × cellsPerLevel))`, end)
  }
  const now = finiteNow(clock, 'deserialize')
  const shift = clockShift(shape, now, wall)
  const gens: GenerationCells[] = []
  let off = 0
  for (let g = 0; g < generations; g++) {
    if (off + 16 > end) invalidField('payload length', `room for generation ${g}'s seed at offset ${off}`, end)
    const seed = new Uint8Array(frame.payload.subarray(off, off + 16))
    if (master !== undefined) {
      const want = deriveSeed(master, rotations + g)
      for (let i = 0; i < 16; i++) {
        if (seed[i] !== want[i])
          invalidField(
            `generation ${g} seed`,
            `the seed derived from the master seed for generation index ${rotations + g}`,
            'another seed',
          )
      }
    }
    let cells: DecodedCells
    if (isSparse) {
      const r = readSparse(frame.payload, off + 16, end, shape, shift, `generation ${g}`)
      cells = r.cells
      off = r.next
    } else {
      cells = readCells(frame.payload, off + 16, shape, isDelta, shift, `generation ${g} cell`)
      off += per
    }
    gens.push({ seed, scores: cells.scores, touched: cells.touched })
  }
  if (off !== end) invalidField('payload length', `${off} (the generations' blocks)`, end)
  const mappedLast = finiteTime(
    lastRotationAtMs > shape.writerNowMs ? shape.writerNowMs + shift : lastRotationAtMs + shift,
  )
  return {
    shape,
    fields: { generations, periodMs, rotations, lastRotationAtMs: mappedLast },
    masterSeed: master,
    gens,
    clock,
    delta: isDelta,
  }
}
