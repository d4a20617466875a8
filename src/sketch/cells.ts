/**
 * The in-memory cell layout of a Sketch, and the views through which the cold paths
 * (frame writers, merge, replica deltas) read cells of either layout.
 *
 * A Sketch keeps its L·M cells in one Float64Array of 2·L·M doubles, level-major and
 * interleaved: cell p = i·M + j (level i, cell j) holds its score at `2p` and its
 * last-touched time in ms at `2p + 1` ({@link CELL_SCORE}, {@link CELL_TIME}). A cell is 16
 * bytes at a 16-byte-aligned offset, so the score and time of one cell always share a
 * 64-byte cache line: an operation touches one line per level, not two (issue #18;
 * measured in examples/bench/sketch.bench.ts, section C "cell layouts"). The frame format
 * is unchanged by this layout: frames still carry the scores block, then the times block
 * (spec/format.md), so old frames load as they are.
 * @module
 */

/** Doubles per cell in a Sketch's cell array. */
export const CELL_STRIDE = 2
/** Offset of a cell's score within its pair. */
export const CELL_SCORE = 0
/** Offset of a cell's last-touched time (ms) within its pair. */
export const CELL_TIME = 1

/**
 * A read view of `count` cells, whatever their layout: the score of cell p is at
 * `scores[p·stride]`, its time at `times[p·stride]`. A Sketch's interleaved cells are
 * viewed by {@link interleavedView}; a delta's two separate arrays by {@link splitView}.
 * @internal
 */
export interface CellView {
  readonly scores: Float64Array
  readonly times: Float64Array
  readonly stride: number
  /** Number of cells (L·M). */
  readonly count: number
}

/**
 * The {@link CellView} of interleaved cells (2 doubles per cell). No copy.
 * @internal
 */
export function interleavedView(cells: Float64Array): CellView {
  return { scores: cells, times: cells.subarray(CELL_TIME), stride: CELL_STRIDE, count: cells.length / CELL_STRIDE }
}

/**
 * The {@link CellView} of separate score and time arrays of equal length. No copy.
 * @internal
 */
export function splitView(scores: Float64Array, times: Float64Array): CellView {
  return { scores, times, stride: 1, count: scores.length }
}

/**
 * Write separate score and time arrays (of equal length n) into interleaved cells (2n doubles).
 * @internal
 */
export function interleaveInto(cells: Float64Array, scores: Float64Array, times: Float64Array): void {
  for (let p = 0, q = 0; p < scores.length; p++, q += CELL_STRIDE) {
    cells[q + CELL_SCORE] = scores[p]
    cells[q + CELL_TIME] = times[p]
  }
}

/**
 * Fold interleaved cells of L levels × M into L levels × M′ (M′ a multiple of M): level i of
 * `to` becomes level i of `from` repeated M′ / M times, each cell's score and time copied
 * (spec/rotator.md §1 "Self-sizing", _Early growth by folding_). Used for a Sketch's cells and
 * for its delta baseline alike.
 * @param from 2·L·M doubles
 * @param to 2·L·M′ doubles, overwritten
 * @internal
 */
export function foldLevels(from: Float64Array, to: Float64Array, levels: number, M: number, M2: number): void {
  const span = CELL_STRIDE * M
  for (let i = 0; i < levels; i++) {
    const level = from.subarray(i * span, (i + 1) * span)
    for (let at = CELL_STRIDE * i * M2, end = at + CELL_STRIDE * M2; at < end; at += span) to.set(level, at)
  }
}

/**
 * Cells a lazy fold copies at most per slice (a call's share in the sync store, a turn of the
 * event loop in a Rotator's or a sync's completion), besides the chunks of a call's key's cells
 * (spec/rotator.md §1 "Self-sizing", _Early growth by folding_, _Cost_): 8,192 cells, 32 chunks
 * of `FOLD_CHUNK_CELLS`, 128 KiB of cells written by native copies; a fold of at most this
 * many cells is done at once (`Sketch.foldFrom`). Folding at once, 2 generations × 4 levels ×
 * 65,536 cells (1,024 → 65,536, 23.6 MB held in a sync store) paused a review's call 8–48 ms.
 * @internal
 */
export const FOLD_SLICE_CELLS = 8192

/**
 * Cells of a lazy fold's chunk (at most; fewer when the smaller shape's cells per level are a
 * smaller power of two): the unit folded at once, by one native copy of 4 KiB from a view of
 * the smaller shape's cells made when the fold starts, so a slice costs about the same in cold
 * code as in optimized code (a cell at a time, the first slices of a fold, which runs once per
 * growth, took 15–17 ms for 8,192 cells before V8 optimized them; load ≈ 10 on 2 cores), and a
 * call's key costs at most L chunks per generation folding.
 * @internal
 */
export const FOLD_CHUNK_CELLS = 256
