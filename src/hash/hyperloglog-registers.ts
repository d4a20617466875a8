// The HyperLogLog register rule and estimator over a 64-bit hash (hi, lo), in one home for
// the window layer's HyperLogLog and the sketch layer's load meter (a structure may not
// import another, and both count distinct keys from hashes they already hold).

/** α∞ = 1 / (2 ln 2), the limit of the HyperLogLog bias constant (Ertl 2017, eq. 9). */
const ALPHA_INF = 1 / (2 * Math.LN2)
/** Reused register histogram of {@link estimateFromRegisters} (values 0..q+1 ≤ 61). */
const COUNTS = new Float64Array(64)

/**
 * Count one item by its 64-bit hash: the top p bits of `hi` choose the register, which keeps
 * the maximum of 1 + the number of leading zeros of the remaining q = 64 − p bits
 * (`Math.clz32` on the two 32-bit words, so the full q bits count; a zero remainder gives
 * q + 1). Flajolet, Fusy, Gandouet & Meunier, "HyperLogLog", AofA 2007. No allocation.
 * @param registers the 2^p one-byte registers
 * @param precision p in [4, 18]
 * @param hi high 32 bits of the hash (int32 or uint32)
 * @param lo low 32 bits of the hash (int32 or uint32)
 * @internal
 */
export function addHashToRegisters(registers: Uint8Array, precision: number, hi: number, lo: number): void {
  const shift = 32 - precision
  const idx = hi >>> shift
  const rest = hi << precision
  // leading zeros of the q = 64 − p bits after the index, plus one
  const rho = rest !== 0 ? Math.clz32(rest) + 1 : shift + Math.clz32(lo) + 1
  if (rho > registers[idx]) registers[idx] = rho
}

/**
 * The estimated number of distinct items counted into `registers`, by Ertl's improved raw
 * estimator (Ertl, "New cardinality estimation algorithms for HyperLogLog sketches", 2017,
 * Algorithm 6): with C_k the number of registers holding k and q = 64 − p,
 * `z = m·τ(1 − C_{q+1}/m)`, then `z = (z + C_k)/2` for k = q … 1, then `z += m·σ(C_0/m)`,
 * and the estimate is `α∞·m²/z` with α∞ = 1/(2 ln 2). Exactly 0 for empty registers.
 * @param registers the 2^p one-byte registers
 * @param precision p in [4, 18]
 * @internal
 */
export function estimateFromRegisters(registers: Uint8Array, precision: number): number {
  const m = registers.length
  const q = 64 - precision
  const counts = COUNTS
  counts.fill(0)
  for (let i = 0; i < m; i++) counts[registers[i]]++
  if (counts[0] === m) return 0
  let z = m * tau(1 - counts[q + 1] / m)
  for (let k = q; k >= 1; k--) z = 0.5 * (z + counts[k])
  z += m * sigma(counts[0] / m)
  return (ALPHA_INF * m * m) / z
}

/**
 * σ(x) = x + Σ_{k≥1} x^{2^k}·2^{k−1} (Ertl 2017, eq. 39), the correction for empty
 * registers; σ(1) = ∞. The series is summed until it stops changing in float64.
 */
function sigma(x: number): number {
  if (x === 1) return Infinity
  let y = 1
  let z = x
  let prev: number
  do {
    x *= x
    prev = z
    z += x * y
    y += y
  } while (z !== prev)
  return z
}

/**
 * τ(x) = (1 − x − Σ_{k≥1} (1 − x^{2^−k})²·2^−k) / 3 (Ertl 2017, eq. 40), the correction
 * for saturated registers; τ(0) = τ(1) = 0.
 */
function tau(x: number): number {
  if (x === 0 || x === 1) return 0
  let y = 1
  let z = 1 - x
  let prev: number
  do {
    x = Math.sqrt(x)
    prev = z
    y *= 0.5
    z -= (1 - x) * (1 - x) * y
  } while (z !== prev)
  return z / 3
}
