import { GrudgeError } from '../errors.js'
import { CELL_SCORE, CELL_STRIDE, CELL_TIME, type CellView } from './cells.js'
import { applyDecay } from './decay.js'
import { incompatibility, type SketchShape } from './shape.js'
import type { SparseCells } from './sketch-codec.js'

/**
 * Throw unless `a` and `b` are compatible and distinct.
 * @throws {GrudgeError} `ERR_GRUDGE_MERGE_SELF` when `a === b`, `ERR_GRUDGE_MERGE_INCOMPATIBLE`
 * naming the first difference
 * @internal
 */
export function assertMergeable(what: string, a: SketchShape, b: SketchShape): void {
  if (a === b)
    throw new GrudgeError('ERR_GRUDGE_MERGE_SELF', `${what}: expected another ${what}, received the same instance`)
  const diff = incompatibility(a, b)
  if (diff !== undefined) {
    throw new GrudgeError(
      'ERR_GRUDGE_MERGE_INCOMPATIBLE',
      `${what}: expected the same configuration and seed, received different ${diff}`,
    )
  }
}

/**
 * Decay cell `p` of interleaved `cells` (a Sketch's layout, `cells.ts`) to `now` in place,
 * as the Sketch does lazily: a clock gone back decays nothing and the time never moves
 * back, except that a never-touched cell (score 0, time 0) takes `now` whatever its sign.
 * @returns the cell's decayed score
 * @internal
 */
export function decayCellTo(shape: SketchShape, cells: Float64Array, p: number, now: number): number {
  const q = CELL_STRIDE * p
  const last = cells[q + CELL_TIME]
  let s = cells[q + CELL_SCORE]
  if (now > last) {
    if (s !== 0) {
      s = applyDecay(s, shape.decay, now - last)
      cells[q + CELL_SCORE] = s
    }
    cells[q + CELL_TIME] = now
  } else if (s === 0 && last === 0 && now > -Infinity) {
    cells[q + CELL_TIME] = now // a never-touched cell under a clock reading ≤ 0 (see Sketch)
  }
  return s
}

/**
 * Add the cells of a source into a destination's interleaved cells (decayed to `dstNow`),
 * clamping to [lo, hi]; cells whose source score is 0 are skipped. This is `merge` and
 * both halves of `applyDelta`.
 *
 * A source value v was taken `age = srcNow − srcTouched` ago. Merge (`inTransit` false):
 * v decays over `age` like any cell, then is added at now. Delta (`inTransit` true, `age`
 * is the time since `takeDelta`): exponential and no decay also decay v over `age` (exact:
 * decay is linear in the score); linear decay, when v and the destination cell have the
 * same sign, adds v as if at its own time to a single token bucket, so it drains only for
 * the part of `age` during which the destination cell would have been empty (after
 * `τ + |s| / rate`, τ and s the cell's last-touched time and score): exact when the cell
 * was not touched in between. The same amount is added to the `also` cells (a replica's
 * baseline, interleaved), so the view − baseline difference is unchanged. See
 * `spec/rotator.md` § 4.
 * @param src the source cells in either layout; `src.count` MUST equal the destination's
 * @internal
 */
export function addCells(
  shape: SketchShape,
  dst: Float64Array,
  dstNow: number,
  src: CellView,
  srcNow: number,
  inTransit: boolean,
  also?: Float64Array,
): void {
  const linearRatePerMs = inTransit && shape.decay.kind === 'linear' ? shape.decay.ratePerSecond / 1000 : 0
  const { scores, times, stride, count } = src
  for (let p = 0; p < count; p++) {
    const v = scores[p * stride]
    if (v === 0) continue
    addCell(shape, dst, dstNow, p, v, srcNow - times[p * stride], linearRatePerMs, also)
  }
}

/**
 * {@link addCells} for a source given by its non-zero cells only (a sparse delta block:
 * strictly increasing indexes, all taken at `srcAt`), so that no L·M array is built for it.
 * The indexes MUST be < the destination's cell count (the caller checked the shapes).
 * @internal
 */
export function addSparseCells(
  shape: SketchShape,
  dst: Float64Array,
  dstNow: number,
  src: SparseCells,
  srcNow: number,
  inTransit: boolean,
  also?: Float64Array,
): void {
  const linearRatePerMs = inTransit && shape.decay.kind === 'linear' ? shape.decay.ratePerSecond / 1000 : 0
  const age = srcNow - src.at
  for (let k = 0; k < src.indexes.length; k++) {
    addCell(shape, dst, dstNow, src.indexes[k], src.values[k], age, linearRatePerMs, also)
  }
}

/** One cell of {@link addCells}: source value `v` (non-zero), taken `age` ms ago, into cell `p`. */
function addCell(
  shape: SketchShape,
  dst: Float64Array,
  dstNow: number,
  p: number,
  v: number,
  age: number,
  linearRatePerMs: number,
  also: Float64Array | undefined,
): void {
  const lo = shape.lo
  const hi = shape.hi
  const decay = shape.decay
  const q = CELL_STRIDE * p
  if (age > 0) {
    const before = dst[q + CELL_SCORE]
    if (linearRatePerMs > 0 && (before === 0 || before > 0 === v > 0)) {
      const takenAt = dstNow - age
      const touched = dst[q + CELL_TIME]
      // a never-touched cell (score 0, time 0) has been empty forever, whatever the clock's origin
      const emptyFrom = before === 0 && touched === 0 ? -Infinity : touched + Math.abs(before) / linearRatePerMs
      const drainMs = dstNow - (takenAt > emptyFrom ? takenAt : emptyFrom)
      if (drainMs > 0) v = applyDecay(v, decay, drainMs)
    } else {
      v = applyDecay(v, decay, age)
    }
    if (v === 0) return
  }
  let s = decayCellTo(shape, dst, p, dstNow) + v
  if (s < lo) s = lo
  else if (s > hi) s = hi
  dst[q + CELL_SCORE] = s
  if (also !== undefined) {
    let b = decayCellTo(shape, also, p, dstNow) + v
    if (b < lo) b = lo
    else if (b > hi) b = hi
    also[q + CELL_SCORE] = b
  }
}
