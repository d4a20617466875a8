/**
 * Bit positions of a Bloom filter from one 64-bit hash, for any size up to 2^36 bits: the
 * scheme of frame version 2 ({@link bloomPositionsV2}, every new filter) and that of frame
 * version 1 ({@link bloomPositions}, kept for old checkpoints).
 *
 * Version 1: Kirsch–Mitzenmacher double hashing ("Less hashing, same performance: building a better
 * Bloom filter", ESA 2006) carried out on 64-bit values so that no index is confined to
 * 32 bits: with the 64-bit hash `H = hi·2^32 + lo` and the odd step
 * `B = (lo | 1)·2^32 + (hi | 1)` (H with its halves swapped, each half forced odd so neither
 * word's step is 0 and the k values x_i are distinct), the i-th value is
 * `x_i = (H + i·B) mod 2^64` and its position is
 *
 *     pos_i = floor(x_i · m / 2^64)
 *
 * the multiply-shift range reduction (Lemire, "Fast random integer generation in an
 * interval", ACM TOMACS 2019) instead of `x mod m`. Every bit of `x_i` takes part, so a
 * filter of more than 2^32 bits gets positions above 2^32 (the classic 32-bit index bug
 * cannot happen), and the bias of any position is at most m / 2^64 (≤ 2^−28 for m ≤ 2^36)
 * where a 32-bit `h mod m` is off by up to a factor 2 for m near 2^31.
 *
 * The product is computed exactly in float64 by 16-bit limbs: every partial product is
 * below 2^52 when m ≤ 2^36, so the result is the exact integer the formula defines, the
 * same on every platform. No allocation.
 */
import { fmix32 } from '../hash/murmur3.js'

/**
 * Largest bit count the position math is exact for: 2^36 (8 GiB of bits).
 * @internal
 */
export const MAX_BITS = 2 ** 36

const INV16 = 1 / 65536

/**
 * Write the k bit positions of scheme 1 (frame version 1, 64-bit Kirsch–Mitzenmacher) of
 * the 64-bit hash (hashHi, hashLo) in an m-bit filter to `out[0..k)`. Not honest at small m
 * (1 item at 1e-9, m = 44, k = 30, measured a false-positive rate of 4.7e-3): new filters
 * use {@link bloomPositionsV2}.
 * @param hashHi high 32 bits of the hash (int32 or uint32)
 * @param hashLo low 32 bits of the hash (int32 or uint32)
 * @param k number of positions, integer ≥ 1 (≤ out.length)
 * @param m bits, integer in [1, 2^36]
 * @param out receives the positions, each an integer in [0, m)
 * @internal
 */
export function bloomPositions(hashHi: number, hashLo: number, k: number, m: number, out: Float64Array): void {
  let xh = hashHi >>> 0
  let xl = hashLo >>> 0
  const bh = (xl | 1) >>> 0
  const bl = (xh | 1) >>> 0
  for (let i = 0; i < k; i++) {
    out[i] = mulHi(xh, xl, m)
    // 64-bit add of B with the carry, every word kept a uint32
    xl = (xl + bl) >>> 0
    xh = (xh + bh + (xl < bl ? 1 : 0)) >>> 0
  }
}

/**
 * floor((xh·2^32 + xl) · m / 2^64), exact for m ≤ 2^36.
 * @internal
 */
export function mulHi(xh: number, xl: number, m: number): number {
  let c = Math.floor((xl & 0xffff) * m * INV16)
  c = Math.floor(((xl >>> 16) * m + c) * INV16)
  c = Math.floor(((xh & 0xffff) * m + c) * INV16)
  return Math.floor(((xh >>> 16) * m + c) * INV16)
}

/**
 * Position scheme of frame version 1 (filters written before this change, loaded from a
 * version-1 frame): 64-bit Kirsch–Mitzenmacher double hashing above. Kept so that old
 * checkpoints answer with the positions they were written with.
 * @internal
 */
export const POSITIONS_KM = 1
/**
 * Position scheme of frame version 2 (every filter built by this release): k distinct
 * positions from a keyed stream when m ≤ {@link DISTINCT_MAX_BITS}, enhanced double
 * hashing modulo m above (see {@link bloomPositionsV2}).
 * @internal
 */
export const POSITIONS_V2 = 2
/**
 * Largest m for which scheme 2 draws k distinct positions from a stream: 2^20 bits. Above
 * it, enhanced double hashing's floor of about 3·n/m² (two items sharing h1 and h2 mod m,
 * or shifted by a few steps) is below 10 % of the target rate for every target ≥ 1e-9
 * (spec/bloom.md §3).
 * @internal
 */
export const DISTINCT_MAX_BITS = 2 ** 20

/** Weyl increment of the stream: 2^32 / φ, odd (Knuth's multiplicative hashing constant). */
const GOLDEN32 = 0x9e3779b9
const INV32 = 1 / 4294967296

/**
 * The key of the distinct-position stream of hash (hashHi, hashLo): `fmix32(hi)`; the
 * stream's j-th word (j ≥ 1) is `fmix32(((lo + j·0x9e3779b9) mod 2^32) XOR key)`.
 * @internal
 */
export function streamKey(hashHi: number): number {
  return fmix32(hashHi) >>> 0
}

/**
 * The j-th position draw of the stream, j ≥ 1: `floor(fmix32(((lo + j·γ) mod 2^32) XOR key) · m / 2^32)`.
 * @internal
 */
export function streamDraw(lo: number, key: number, j: number, m: number): number {
  return Math.floor((fmix32((lo + Math.imul(j, GOLDEN32)) ^ key) >>> 0) * m * INV32)
}

/**
 * Write the k positions of scheme 2 (frame version 2) of hash (hashHi, hashLo) in an m-bit
 * filter to `out[0..k')`, k' = min(k, m) when m ≤ 2^20, else k; returns k'. The reference
 * the filter's inlined loops must match (spec/bloom.md §3):
 *
 * - m ≤ 2^20: the first min(k, m) **distinct** values of the draws j = 1, 2, … of
 *   {@link streamDraw} (a SplitMix-style stream: a Weyl sequence through a mixing bijection,
 *   Steele, Lea & Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014).
 *   An item's positions are then a uniform k-subset, as in Bloom's analysis with k distinct
 *   bits; with repetitions allowed even ideal hashes exceed `(1 − e^(−kn/m))^k` by 2× at
 *   n = 1, p = 0.01 (Bose et al., "On the false-positive rate of Bloom filters", IPL 2008).
 * - m > 2^20: enhanced double hashing (Dillinger & Manolios, "Bloom Filters in Probabilistic
 *   Verification", FMCAD 2004, §5), `x_0 = mulHi(H, m)`, `y_0 = mulHi(H with its halves
 *   swapped, m)`, then `x_i = (x_{i−1} + y_{i−1}) mod m`, `y_i = (y_{i−1} + i) mod m`, so
 *   `x_i = x_0 + i·y_0 + (i³ − i)/6 (mod m)`: the cubic term keeps a step y_0 near a
 *   multiple of m/j from folding the k positions onto j bits, which is how 64-bit
 *   Kirsch–Mitzenmacher (scheme 1) lost its rate at small m.
 * @param hashHi high 32 bits of the hash
 * @param hashLo low 32 bits of the hash
 * @param k positions asked for, integer in [1, 1024]
 * @param m bits, integer in [1, 2^36]
 * @param out receives the positions (length ≥ k)
 * @returns the number of positions written
 * @internal
 */
export function bloomPositionsV2(hashHi: number, hashLo: number, k: number, m: number, out: Float64Array): number {
  if (m <= DISTINCT_MAX_BITS) {
    const kk = k < m ? k : m
    const lo = hashLo >>> 0
    const key = streamKey(hashHi)
    const seen = new Set<number>()
    for (let j = 1; seen.size < kk; j++) {
      const pos = streamDraw(lo, key, j, m)
      if (seen.has(pos)) continue
      out[seen.size] = pos
      seen.add(pos)
    }
    return kk
  }
  let x = mulHi(hashHi >>> 0, hashLo >>> 0, m)
  let y = mulHi(hashLo >>> 0, hashHi >>> 0, m)
  out[0] = x
  for (let i = 1; i < k; i++) {
    x += y
    if (x >= m) x -= m
    y += i
    if (y >= m) y -= m
    out[i] = x
  }
  return k
}
