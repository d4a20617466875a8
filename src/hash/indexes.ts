/**
 * Kirsch–Mitzenmacher double hashing ("Less hashing, same performance: building a better
 * Bloom filter", ESA 2006): the i-th of L indexes into M cells comes from one 64-bit hash
 * as `(h1 + i·h2) mod M`, with h1 = the low 32 bits (unsigned) and h2 = the high 32 bits
 * forced odd (`| 1`, so never 0 and the L indexes never collapse onto one cell when M is
 * a power of two), then replaced by 1 when it is ≡ 0 (mod M) for M > 1 (an odd M can divide
 * it; the key would otherwise get one column repeated at every level). The sum is computed exactly in float64 (h1, h2 < 2^32, i < 2^20), not
 * modulo 2^32, so the reduction is `floor` division by M.
 *
 * @param hashHi high word of the 64-bit hash (int32 or uint32)
 * @param hashLo low word of the 64-bit hash (int32 or uint32)
 * @param levels L, integer 1..2^20
 * @param cells M, integer 1..2^32
 * @param out receives the L indexes, each in [0, M)
 */
export function kmIndexes(hashHi: number, hashLo: number, levels: number, cells: number, out: Uint32Array): void {
  const h1 = hashLo >>> 0
  let h2 = (hashHi | 1) >>> 0
  // a step ≡ 0 (mod M) would give the key one column at every level: step 1 instead
  if (cells > 1 && h2 % cells === 0) h2 = 1
  for (let i = 0; i < levels; i++) out[i] = (h1 + i * h2) % cells
}

/**
 * `x mod m` for integers `0 ≤ x < 2^32`, `1 ≤ m ≤ 2^32`, by a multiply with the
 * precomputed reciprocal `invM = 1 / m` instead of a division (the cell-index hot path).
 * Exact: `x · invM` is within 2^−20 of x / m, so its floor is off by at most one, which
 * the two corrections remove; `q · m` < 2^33 is exact in float64.
 * @param x the dividend, an integer in [0, 2^32)
 * @param m the modulus, an integer in [1, 2^32]
 * @param invM `1 / m` as computed by JavaScript
 * @returns the remainder in [0, m)
 */
export function modByReciprocal(x: number, m: number, invM: number): number {
  let r = x - Math.floor(x * invM) * m
  if (r < 0) r += m
  else if (r >= m) r -= m
  return r
}
