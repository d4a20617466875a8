import { systemClock, wallClockMs, type Clock } from '../clock.js'
import { GrudgeRangeError, describeValue, invalidOption } from '../errors.js'
import type { DeserializeOptions } from './shape.js'

// Time across processes (`spec/rotator.md`, "Time across processes"): a sketch or rotator
// frame carries the writer's clock and wall-clock readings, and a reader maps every cell
// time onto its own clock so that downtime counts as elapsed time. These stamps live in the
// sketch families' shape block and the mapping follows the cells' rules (a time in the
// writer's future is age 0), so they belong with the sketches, not with the family-blind
// frame in src/format.

/**
 * The clock's time in ms for an operation that stamps times into cells or frames
 * (serialize, deserialize, merge, replica deltas, rotation bookkeeping). Unlike the hot
 * paths, which treat a NaN or ±Infinity reading as "decay nothing, stamp nothing", these
 * would freeze a cell (a time of +Infinity is never in the past again) or write a frame
 * no reader accepts, so they refuse the reading before changing anything.
 * @param clock the clock to read
 * @param what who reads it, for the message
 * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` when `clock.now()` is not a finite number
 * @internal
 */
export function finiteNow(clock: Clock, what: string): number {
  return finiteTimeArg(clock.now(), what, 'clock.now()')
}

/**
 * `t` when it is a finite number, else a coded error naming `what` and `name`.
 * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE`
 * @internal
 */
export function finiteTimeArg(t: number, what: string, name: string): number {
  if (typeof t !== 'number' || !Number.isFinite(t)) {
    throw new GrudgeRangeError(
      'ERR_GRUDGE_VALUE_NOT_FINITE',
      `${what}: expected ${name} to be a finite number (ms), received ${describeValue(t)}`,
    )
  }
  return t
}

/** The writer's two readings stamped into a frame. */
export interface WriterStamp {
  /** The writer's clock time in ms. */
  nowMs: number
  /** The writer's wall-clock time in ms (Unix epoch). */
  wallMs: number
}

/**
 * The writer's stamp for `serializeAt(nowMs, wallMs)`, both checked.
 * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` naming the bad argument
 * @internal
 */
export function writerStamp(nowMs: number, wallMs: number): WriterStamp {
  return { nowMs: finiteTimeArg(nowMs, 'serialize', 'nowMs'), wallMs: finiteTimeArg(wallMs, 'serialize', 'wallMs') }
}

/**
 * The reader's clock and wall-clock ms from `deserialize` options, validated.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
 * @internal
 */
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

/**
 * A writer-clock time mapped onto the reader's clock. The shift is what is added to a
 * writer time: a cell touched at writer time τ had age `writerNow − τ` at serialization
 * and `downtime` more at load, so it lands at `readerNow − (writerNow − τ) − downtime`,
 * with `downtime = max(0, readerWall − writerWall)`.
 * @internal
 */
export class TimeMap {
  /** The offset added to a writer-clock time. */
  readonly shift: number

  /**
   * @param writer the stamps read from the frame
   * @param readerNow the reader's clock time in ms
   * @param readerWall the reader's wall-clock time in ms
   */
  constructor(
    readonly writer: WriterStamp,
    readerNow: number,
    readerWall: number,
  ) {
    const downtime = Math.max(0, readerWall - writer.wallMs)
    this.shift = readerNow - writer.nowMs - downtime
  }

  /**
   * The reader time of writer time `t`. A time after the writer's now counts as the
   * serialization instant (age 0), so nothing lands in the reader's future. Kept finite:
   * frames with extreme finite times (crafted, the CRC recomputed) can map past
   * ±Number.MAX_VALUE, and an infinite time would freeze a cell or make the restored
   * structure's own frame unreadable. −MAX_VALUE is still infinitely old.
   */
  map(t: number): number {
    const m = t > this.writer.nowMs ? this.writer.nowMs + this.shift : t + this.shift
    return m >= -Number.MAX_VALUE ? (m <= Number.MAX_VALUE ? m : Number.MAX_VALUE) : -Number.MAX_VALUE
  }
}
