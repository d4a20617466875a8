/**
 * Bit positions of a Bloom filter from one 64-bit hash, for any size up to 2^36 bits.
 *
 * Kirsch–Mitzenmacher double hashing ("Less hashing, same performance: building a better
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

/**
 * Largest bit count the position math is exact for: 2^36 (8 GiB of bits).
 * @internal
 */
export const MAX_BITS = 2 ** 36

const INV16 = 1 / 65536

/**
 * Write the k bit positions of the 64-bit hash (hashHi, hashLo) in an m-bit filter to
 * `out[0..k)`.
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
