import { GrudgeRangeError, describeValue } from '../errors.js'

function bad(name: string, expected: string, value: unknown): never {
  throw new GrudgeRangeError(
    'ERR_GRUDGE_SIZING_INVALID',
    `${name}: expected ${expected}, received ${describeValue(value)}`,
  )
}

/**
 * The number of bits a Bloom filter needs to hold `n` items at false-positive rate `p`
 * with the optimal number of hash functions: `m = ceil(−n · ln p / (ln 2)²)` (Bloom 1970,
 * "Space/time trade-offs in hash coding with allowable errors"; the closed form as in
 * Broder & Mitzenmacher 2004, "Network applications of Bloom filters: a survey", §2.1).
 * Reference: `bloomOptimalBits(1000, 0.01)` = 9586.
 * @param n expected number of distinct items (capacity), a finite number > 0
 * @param p target false-positive rate, in (0, 1)
 * @returns m, an integer ≥ 1, in bits
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for n ≤ 0, p outside (0, 1), NaN or ±Infinity
 */
export function bloomOptimalBits(n: number, p: number): number {
  if (typeof n !== 'number' || !(n > 0) || !Number.isFinite(n)) bad('n', 'a finite number > 0', n)
  if (typeof p !== 'number' || !(p > 0 && p < 1)) bad('p', 'a number in (0, 1)', p)
  return Math.max(1, Math.ceil((-n * Math.log(p)) / (Math.LN2 * Math.LN2)))
}

/**
 * The number of hash functions that minimises the false-positive rate of an `m`-bit
 * filter holding `n` items: `k = round(m / n · ln 2)`, at least 1 (Bloom 1970; Broder &
 * Mitzenmacher 2004, §2.1). Reference: `bloomOptimalHashes(9586, 1000)` = 7.
 * @param m bits, a finite number > 0
 * @param n expected number of items, a finite number > 0
 * @returns k, an integer ≥ 1
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for m ≤ 0, n ≤ 0, NaN or ±Infinity
 */
export function bloomOptimalHashes(m: number, n: number): number {
  if (typeof m !== 'number' || !(m > 0) || !Number.isFinite(m)) bad('m', 'a finite number > 0', m)
  if (typeof n !== 'number' || !(n > 0) || !Number.isFinite(n)) bad('n', 'a finite number > 0', n)
  return Math.max(1, Math.round((m / n) * Math.LN2))
}

/**
 * The false-positive rate of an `m`-bit filter with `k` hash functions after `n`
 * distinct insertions: `(1 − e^(−k·n/m))^k` (Bloom 1970; the standard approximation,
 * Broder & Mitzenmacher 2004, §2.1).
 * @param m bits, a finite number > 0
 * @param k hash functions, a finite number > 0
 * @param n insertions, a finite number ≥ 0
 * @returns a probability in [0, 1]
 * @throws {GrudgeRangeError} `ERR_GRUDGE_SIZING_INVALID` for arguments out of domain or NaN
 */
export function bloomFalsePositiveRate(m: number, k: number, n: number): number {
  if (typeof m !== 'number' || !(m > 0) || !Number.isFinite(m)) bad('m', 'a finite number > 0', m)
  if (typeof k !== 'number' || !(k > 0) || !Number.isFinite(k)) bad('k', 'a finite number > 0', k)
  if (typeof n !== 'number' || !(n >= 0) || !Number.isFinite(n)) bad('n', 'a finite number ≥ 0', n)
  return Math.pow(-Math.expm1((-k * n) / m), k)
}
