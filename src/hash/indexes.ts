/**
 * Kirsch–Mitzenmacher double hashing ("Less hashing, same performance: building a better
 * Bloom filter", ESA 2006): the i-th of L indexes into M cells comes from one 64-bit hash
 * as `(h1 + i·h2) mod M`, with h1 = the low 32 bits (unsigned) and h2 = the high 32 bits
 * forced odd (`| 1`, so never 0 and the L indexes never collapse onto one cell when M is
 * a power of two). The sum is computed exactly in float64 (h1, h2 < 2^32, i < 2^20), not
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
  const h2 = (hashHi | 1) >>> 0
  for (let i = 0; i < levels; i++) out[i] = (h1 + i * h2) % cells
}
