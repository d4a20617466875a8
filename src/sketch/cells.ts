/**
 * The in-memory cell layout of a Sketch (the 8-byte cell of issue #18), and the views
 * through which the cold paths (frame writers, merge, replica deltas) read cells of any
 * layout.
 *
 * A Sketch keeps its L·M cells in one ArrayBuffer of 8·L·M bytes, level-major: cell
 * p = i·M + j (level i, cell j) is the 32-bit word pair at 2p, 2p + 1, seen through two
 * views of the same buffer: a Float32Array holds the score at `2p` ({@link CELL_SCORE}) and
 * a Uint32Array the last-touched time at `2p + 1` ({@link CELL_TIME}), in whole ms (ticks)
 * after the sketch's epoch. A cell is 8 bytes at an 8-byte-aligned offset, so a cell's
 * score and time always share one 64-byte cache line (one line per level per operation),
 * and the cells take half the memory of float64 pairs. The prototype of this kernel took
 * 0.68–0.74× the time of the float64-pair kernel at M = 100,000 (examples/bench/sketch.bench.ts,
 * section C "cell layouts"). Precision, the epoch and its rebase: spec/sketch.md §2.
 * @module
 */

/** 32-bit words per cell in a Sketch's cell buffer. */
export const CELL_STRIDE = 2
/** Offset of a cell's score (Float32) within its pair. */
export const CELL_SCORE = 0
/** Offset of a cell's last-touched time (Uint32 ticks after the epoch) within its pair. */
export const CELL_TIME = 1
/** Bytes one cell of a Sketch holds: a Float32 score and a Uint32 time. */
export const CELL_BYTES = 8
/** The largest tick a cell can hold, 2^32 − 1 (a tick is 1 ms). */
export const MAX_TICK = 2 ** 32 - 1
/**
 * Where a new epoch puts the time that set it: 2^31 ticks (about 24.9 days) after the
 * epoch, so clock readings up to 2^31 − 1 ms behind it and 2^31 ms ahead of it stay in range.
 */
export const EPOCH_HALF_RANGE = 2 ** 31
/** The largest finite Float32, 2^128 − 2^104 ≈ 3.4028234663852886e38: scores saturate there. */
export const F32_MAX = 3.4028234663852886e38

const scratchF32 = new Float32Array(1)
const scratchU32 = new Uint32Array(scratchF32.buffer)

/**
 * The smallest Float32 value ≥ `s` (`s` finite, |s| ≤ {@link F32_MAX}), as a number: what a
 * cell stores for a score `s`, so a stored score never under-states the computed one
 * (spec/sketch.md §2). The hot paths write the same rounding inline on their own arrays.
 * @internal
 */
export function roundUpF32(s: number): number {
  scratchF32[0] = s
  const f = scratchF32[0]
  if (f < s) scratchU32[0] = f > 0 ? scratchU32[0] + 1 : f < 0 ? scratchU32[0] - 1 : 1
  return scratchF32[0]
}

/**
 * The largest Float32 value ≤ `x` (`x` finite): an upper clamp bound a cell can hold.
 * @internal
 */
export function roundDownF32(x: number): number {
  return -roundUpF32(-x)
}

/**
 * A read view of `count` cells, whatever their layout: the score of cell p is at
 * `scores[p·stride]`, its time in ms `epochMs + times[p·stride]`. A Sketch's 8-byte cells
 * are viewed by {@link packedView}; a delta's two separate float64 arrays by {@link splitView}.
 * @internal
 */
export interface CellView {
  readonly scores: Float32Array | Float64Array
  readonly times: Uint32Array | Float64Array
  readonly stride: number
  /** What a time in `times` is counted from, in ms (0 for absolute times). */
  readonly epochMs: number
  /** Number of cells (L·M). */
  readonly count: number
}

/**
 * The {@link CellView} of 8-byte cells (a Float32 and a Uint32 view of one buffer) with
 * their epoch in ms. No copy.
 * @internal
 */
export function packedView(scores: Float32Array, words: Uint32Array, epochMs: number): CellView {
  return { scores, times: words.subarray(CELL_TIME), stride: CELL_STRIDE, epochMs, count: scores.length / CELL_STRIDE }
}

/**
 * The {@link CellView} of separate score and time (absolute ms) arrays of equal length. No copy.
 * @internal
 */
export function splitView(scores: Float64Array, times: Float64Array): CellView {
  return { scores, times, stride: 1, epochMs: 0, count: scores.length }
}

/**
 * The clamp bounds a cell can hold for a shape's [lo, hi]: the Float32 values nearest 0
 * within them (lo rounded up, hi rounded down, both within ±{@link F32_MAX}), so a clamped
 * score rounded up stays in [lo, hi]. With lo ≤ 0 ≤ hi they still hold 0.
 * @internal
 */
export function cellBounds(lo: number, hi: number): { lo: number; hi: number } {
  return { lo: roundUpF32(lo < -F32_MAX ? -F32_MAX : lo), hi: roundDownF32(hi > F32_MAX ? F32_MAX : hi) }
}

/**
 * Cells as the cold paths (merge, replica deltas, frame loading) read and write them, one
 * cell at a time: a Sketch's 8-byte cells ({@link PackedCells}) or a float64 baseline
 * ({@link Float64Cells}). Every stored score is clamped to the shape's cell bounds and
 * rounded up to a Float32 value, whatever the store, so a view and a baseline that start
 * equal and see the same operations stay equal.
 * @internal
 */
export interface CellStore {
  /** Number of cells. */
  readonly count: number
  /** The score of cell p. */
  score(p: number): number
  /** The last-touched time of cell p in ms. */
  time(p: number): number
  /** Store score `s` (clamped to the cell bounds, rounded up) in cell p; returns what was stored. */
  setScore(p: number, s: number): number
  /** Store time `t` (ms; within the store's range: at or after the epoch, ≤ {@link MAX_TICK} ticks past it). */
  setTime(p: number, t: number): void
  /** Whether cell p was never touched (score 0 at time 0): it then takes any time. */
  isFresh(p: number): boolean
}

/**
 * A Sketch's 8-byte cells as a {@link CellStore}, with the epoch they count ticks from.
 * @internal
 */
export class PackedCells implements CellStore {
  readonly count: number
  private readonly lo: number
  private readonly hi: number
  constructor(
    private readonly scores: Float32Array,
    private readonly words: Uint32Array,
    readonly epochMs: number,
    shape: { lo: number; hi: number },
  ) {
    this.count = scores.length / CELL_STRIDE
    const b = cellBounds(shape.lo, shape.hi)
    this.lo = b.lo
    this.hi = b.hi
  }
  score(p: number): number {
    return this.scores[CELL_STRIDE * p + CELL_SCORE]
  }
  time(p: number): number {
    return this.epochMs + this.words[CELL_STRIDE * p + CELL_TIME]
  }
  setScore(p: number, s: number): number {
    const v = roundUpF32(s < this.lo ? this.lo : s > this.hi ? this.hi : s)
    this.scores[CELL_STRIDE * p + CELL_SCORE] = v
    return v
  }
  setTime(p: number, t: number): void {
    this.words[CELL_STRIDE * p + CELL_TIME] = t - this.epochMs
  }
  isFresh(): boolean {
    // a cell at tick 0 is at the epoch, a real time: every reading in range is at or after it
    return false
  }
}

/**
 * Interleaved float64 cells (score at 2p, time in ms at 2p + 1) holding the values a
 * Sketch's cells would: a replica's delta baseline.
 * @internal
 */
export class Float64Cells implements CellStore {
  readonly count: number
  private readonly lo: number
  private readonly hi: number
  constructor(
    readonly cells: Float64Array,
    shape: { lo: number; hi: number },
  ) {
    this.count = cells.length / CELL_STRIDE
    const b = cellBounds(shape.lo, shape.hi)
    this.lo = b.lo
    this.hi = b.hi
  }
  score(p: number): number {
    return this.cells[CELL_STRIDE * p + CELL_SCORE]
  }
  time(p: number): number {
    return this.cells[CELL_STRIDE * p + CELL_TIME]
  }
  setScore(p: number, s: number): number {
    const v = roundUpF32(s < this.lo ? this.lo : s > this.hi ? this.hi : s)
    this.cells[CELL_STRIDE * p + CELL_SCORE] = v
    return v
  }
  setTime(p: number, t: number): void {
    this.cells[CELL_STRIDE * p + CELL_TIME] = t
  }
  isFresh(p: number): boolean {
    return this.cells[CELL_STRIDE * p + CELL_SCORE] === 0 && this.cells[CELL_STRIDE * p + CELL_TIME] === 0
  }
}

/**
 * The most the epoch moves can add to a cell's score within `spanMs` ms of clock
 * (spec/sketch.md §2 "Clock range and the epoch"): a move decays a cell older than the new
 * epoch to it and rounds it up by less than one Float32 ulp of that value (≤ 2^-23 of it, or
 * 2^-149 below the normal range), and moves are at least 2^31 ms apart, so at most
 * ⌊spanMs / 2^31⌋ + 1 of them fall in the span. The value is the cell's at the new epoch, up
 * to 2^31 ms before the reading that moved it: under linear decay more than the score now
 * (the caller bounds it, e.g. by hi). A promise of a time at which a score will have drained
 * enough (a Retry-After) adds this, so no move in between breaks it.
 * @param atEpoch a bound on |score| at any new epoch in the span (finite)
 * @param spanMs the span of clock in ms (finite, ≥ 0)
 * @returns the bound, in score units (≥ 0)
 * @internal
 */
export function epochMoveRoundingMax(atEpoch: number, spanMs: number): number {
  const ulp = Math.max(Math.abs(atEpoch) * 2 ** -23, 2 ** -149)
  return (Math.floor(spanMs / EPOCH_HALF_RANGE) + 1) * ulp
}
