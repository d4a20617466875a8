// Cell layouts compared in one run (issue #18, item 1), for sketch.bench.ts section C.
//
// Each kernel is one keyed update as Sketch.update does it: murmur3 of the key (grudge's
// Hasher), the Kirsch–Mitzenmacher cell of each level, the L cells read back to back (so
// their cache misses overlap), then each decayed (exponential), added to, clamped and
// written. Only the cell layout differs:
//   split    two Float64Arrays, scores and times (grudge ≤ 0.x: 16 B per cell, 2 cache lines per level)
//   pairs    one Float64Array of [score, time] pairs (the layout Sketch uses now: 16 B, 1 line)
//   packed8  one ArrayBuffer of 8-byte cells, Float32 score + Uint32 time in ticks from a
//            per-sketch epoch (the prototype of issue #18's 8-byte cell: 8 B, 1 line, half the
//            memory); it pays a float32 rounding per write and a tick conversion per
//            operation; a rebase before the ticks wrap is not measured (it runs once per ~49 days)
// These kernels are copies of the Sketch hot path kept for measurement only (the house rule
// "hot-path copies only with a linked measurement": this file is the measurement).
import { murmur3 } from '../../src/hash/hasher.js'
import { modByReciprocal } from '../../src/hash/indexes.js'

/** Clamp bounds and decay rate, read from a typed array so that no double is boxed. */
const P = Float64Array.of(0, 1e9, 0) // lo, hi, rate per ms

/** One layout's cells for L levels × M cells per level, and its keyed update. */
export interface LayoutKernel {
  readonly name: string
  readonly bytesPerCell: number
  /** n keyed updates of drawn[0..n), the clock at T[0] advanced by 1 µs per update. */
  run(drawn: string[], n: number, T: Float64Array): number
}

const hasher = murmur3(1)

/** The layouts at L levels, M cells per level, exponential decay at `ratePerSecond`. */
export function layoutKernels(L: number, M: number, ratePerSecond: number): LayoutKernel[] {
  P[2] = ratePerSecond / 1000
  const invM = 1 / M
  const idx = new Uint32Array(L)
  const S = new Float64Array(1) // sink

  // split: scores[p], times[p]
  const scores = new Float64Array(L * M)
  const times = new Float64Array(L * M)
  function splitOp(key: string, now: number): void {
    hasher.hashKey(key)
    let c = modByReciprocal(hasher.hashLo >>> 0, M, invM)
    const step = modByReciprocal((hasher.hashHi | 1) >>> 0, M, invM)
    let z = 0
    for (let l = 0, base = 0; l < L; l++, base += M) {
      const p = base + c
      idx[l] = p
      z += scores[p] + times[p]
      c += step
      if (c >= M) c -= M
    }
    S[0] = z
    const lo = P[0]
    const hi = P[1]
    const rate = P[2]
    for (let l = 0; l < L; l++) {
      const p = idx[l]
      let s = scores[p]
      const t = times[p]
      if (now > t) {
        if (s !== 0) s *= Math.exp(-rate * (now - t))
        times[p] = now
      }
      s += 1
      if (s < lo) s = lo
      else if (s > hi) s = hi
      scores[p] = s
    }
  }

  // pairs: cells[2p] score, cells[2p + 1] time
  const pairs = new Float64Array(2 * L * M)
  function pairsOp(key: string, now: number): void {
    hasher.hashKey(key)
    let c = modByReciprocal(hasher.hashLo >>> 0, M, invM)
    const step = modByReciprocal((hasher.hashHi | 1) >>> 0, M, invM)
    let z = 0
    for (let l = 0, base = 0; l < L; l++, base += 2 * M) {
      const p = base + 2 * c
      idx[l] = p
      z += pairs[p]
      c += step
      if (c >= M) c -= M
    }
    S[0] = z
    const lo = P[0]
    const hi = P[1]
    const rate = P[2]
    for (let l = 0; l < L; l++) {
      const p = idx[l]
      let s = pairs[p]
      const t = pairs[p + 1]
      if (now > t) {
        if (s !== 0) s *= Math.exp(-rate * (now - t))
        pairs[p + 1] = now
      }
      s += 1
      if (s < lo) s = lo
      else if (s > hi) s = hi
      pairs[p] = s
    }
  }

  // packed8: f32[2p] score, u32[2p + 1] time in ticks of TICK_MS from the epoch
  const TICK_MS = 1 / 16 // 62.5 µs ticks: 2^32 ticks ≈ 3.1 days before a rebase
  const buf = new ArrayBuffer(8 * L * M)
  const f32 = new Float32Array(buf)
  const u32 = new Uint32Array(buf)
  const epoch = new Float64Array(1) // the per-sketch epoch (ms)
  function packedOp(key: string, now: number): void {
    hasher.hashKey(key)
    let c = modByReciprocal(hasher.hashLo >>> 0, M, invM)
    const step = modByReciprocal((hasher.hashHi | 1) >>> 0, M, invM)
    let z = 0
    for (let l = 0, base = 0; l < L; l++, base += 2 * M) {
      const p = base + 2 * c
      idx[l] = p
      z += f32[p]
      c += step
      if (c >= M) c -= M
    }
    S[0] = z
    const lo = P[0]
    const hi = P[1]
    const rate = P[2]
    // the operation's time in ticks, once per operation (a rebase would run here when it nears 2^32)
    const tick = ((now - epoch[0]) / TICK_MS) >>> 0
    for (let l = 0; l < L; l++) {
      const p = idx[l]
      let s = f32[p]
      const t = u32[p + 1]
      if (tick > t) {
        if (s !== 0) s *= Math.exp(-rate * TICK_MS * (tick - t))
        u32[p + 1] = tick
      }
      s += 1
      if (s < lo) s = lo
      else if (s > hi) s = hi
      f32[p] = s
    }
  }

  return [
    {
      name: 'split (two Float64Arrays)',
      bytesPerCell: 16,
      run(drawn, n, T) {
        for (let i = 0; i < n; i++) {
          T[0] += 0.001
          splitOp(drawn[i], T[0])
        }
        return S[0] === 42 ? 1 : 0
      },
    },
    {
      name: 'pairs (one Float64Array, [score, time])',
      bytesPerCell: 16,
      run(drawn, n, T) {
        for (let i = 0; i < n; i++) {
          T[0] += 0.001
          pairsOp(drawn[i], T[0])
        }
        return S[0] === 42 ? 1 : 0
      },
    },
    {
      name: 'packed8 (Float32 score + Uint32 ticks)',
      bytesPerCell: 8,
      run(drawn, n, T) {
        for (let i = 0; i < n; i++) {
          T[0] += 0.001
          packedOp(drawn[i], T[0])
        }
        return S[0] === 42 ? 1 : 0
      },
    },
  ]
}
