/**
 * Sweeps the measured false-positive rate of Bloom filters built byAccuracy against
 * `bloomFalsePositiveRate` over capacities from 1 to 10^7 and error rates from 0.1 to 1e-9
 * (spec/bloom.md §3): the large-capacity half of the check whose small half is
 * test/bloom/fpr-sweep.test.ts (which also runs {@link sweep} on two filters above 2^20
 * bits). Items and queries are random 64-bit hashes.
 *
 *   npx tsx scripts/bloom-fpr-sweep.ts            full sweep (minutes; 10^7 items per filter at the top)
 *   npx tsx scripts/bloom-fpr-sweep.ts --quick    capacities up to 10^5, fewer queries (seconds)
 *
 * Per row: m, k, the formula, the measured rate (false positives / queries) and the verdict
 * against the requirement (within 1.5× of the formula, or within 1e-6), with a one-sided 4σ
 * binomial allowance. Where the queries cannot resolve the rate (fewer than 10 expected),
 * "count-limited" is printed and the argument of spec/bloom.md §3 applies (distinct
 * positions below 2^20 bits, the 3n/m² floor of enhanced double hashing above).
 */
import { pathToFileURL } from 'node:url'
import { BloomFilter } from '../src/bloom/bloom-filter.js'
import { bloomFalsePositiveRate } from '../src/bloom/sizing.js'
import { mulberry32Uint32 } from '../test/fixtures/mulberry32.js'

/** One measured configuration. */
export interface SweepRow {
  capacity: number
  errorRate: number
  bits: number
  hashes: number
  formula: number
  falsePositives: number
  queries: number
  /** Within 1.5× of the formula or 1e-6 of it, up to a one-sided 4σ binomial allowance. */
  ok: boolean
  /** Fewer than 10 false positives expected: the count cannot resolve the rate. */
  countLimited: boolean
}

/**
 * Measure every (capacity, errorRate): filters of `capacity` random items, `queries`
 * random non-members in all (spread over up to 1000 filters for small capacities, so the
 * rate averages over fills too).
 */
export function sweep(capacities: readonly number[], rates: readonly number[], queries: number, seed = 1): SweepRow[] {
  const draw = mulberry32Uint32(seed)
  const next = (): number => draw() | 0
  const rows: SweepRow[] = []
  for (const capacity of capacities) {
    for (const errorRate of rates) {
      const filters = Math.max(1, Math.min(1000, Math.floor(1_000_000 / capacity)))
      const perFilter = Math.ceil(queries / filters)
      let falsePositives = 0
      let first: BloomFilter | undefined
      for (let f = 0; f < filters; f++) {
        const g = BloomFilter.byAccuracy({ capacity, errorRate, seed: 1 })
        first ??= g
        for (let i = 0; i < capacity; i++) g.addHashed(next(), next())
        for (let q = 0; q < perFilter; q++) if (g.mightContainHashed(next(), next())) falsePositives++
      }
      const b = first!
      const trials = filters * perFilter
      const formula = bloomFalsePositiveRate(b.bitCount, b.hashCount, capacity)
      const expected = trials * Math.max(1.5 * formula, formula + 1e-6)
      rows.push({
        capacity,
        errorRate,
        bits: b.bitCount,
        hashes: b.hashCount,
        formula,
        falsePositives,
        queries: trials,
        ok: falsePositives <= expected + 4 * Math.sqrt(expected) + 3,
        countLimited: trials * formula < 10,
      })
    }
  }
  return rows
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const quick = process.argv.includes('--quick')
  const capacities = quick
    ? [1, 3, 10, 30, 100, 1_000, 10_000, 100_000]
    : [1, 3, 10, 30, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000]
  const rows = sweep(capacities, [0.1, 0.01, 1e-3, 1e-4, 1e-6, 1e-9], quick ? 200_000 : 5_000_000)
  console.log('| capacity | p | m | k | formula | measured | false positives / queries | verdict |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const r of rows) {
    const verdict = !r.ok ? 'FAIL' : r.countLimited ? 'ok (count-limited)' : 'ok'
    console.log(
      `| ${r.capacity} | ${r.errorRate} | ${r.bits} | ${r.hashes} | ${r.formula.toExponential(2)} | ${(r.falsePositives / r.queries).toExponential(2)} | ${r.falsePositives} / ${r.queries} | ${verdict} |`,
    )
  }
  const failures = rows.filter((r) => !r.ok).length
  console.log(failures === 0 ? '\nall rows within the requirement' : `\n${failures} rows FAILED`)
  process.exitCode = failures === 0 ? 0 : 1
}
