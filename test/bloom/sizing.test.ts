import t from 'tap'
import { bloomFalsePositiveRate, bloomOptimalHashes, bloomOptimalBits } from '../../src/bloom/sizing.js'

t.test('bloomOptimalBits and bloomOptimalHashes on published values', async (t) => {
  // the reference values
  t.equal(bloomOptimalBits(1000, 0.01), 9586)
  t.equal(bloomOptimalHashes(9586, 1000), 7)
  // hur.st Bloom filter calculator, its default example: n = 1,000,000, p = 0.01 → m = 9,585,059, k = 7
  t.equal(bloomOptimalBits(1_000_000, 0.01), 9_585_059)
  t.equal(bloomOptimalHashes(9_585_059, 1_000_000), 7)
  // Broder & Mitzenmacher 2004: at the optimum about 1.4427·log2(1/p) bits per item
  t.ok(Math.abs(bloomOptimalBits(1e6, 0.001) / 1e6 - 1.4427 * Math.log2(1000)) < 0.01)
  t.equal(bloomOptimalHashes(1, 1000), 1, 'at least one hash')
})

t.test('false-positive formula', async (t) => {
  t.equal(bloomFalsePositiveRate(100, 3, 0), 0)
  // (1 − e^(−kn/m))^k at the optimum ≈ p
  const m = bloomOptimalBits(1000, 0.01)
  const p = bloomFalsePositiveRate(m, bloomOptimalHashes(m, 1000), 1000)
  t.ok(p > 0.0095 && p < 0.0105, `p at capacity ${p}`)
})

t.test('sizing helpers refuse arguments outside their domain', async (t) => {
  const bad: Array<() => unknown> = [
    () => bloomOptimalBits(0, 0.01),
    () => bloomOptimalBits(-1, 0.01),
    () => bloomOptimalBits(NaN, 0.01),
    () => bloomOptimalBits(Infinity, 0.01),
    () => bloomOptimalBits(10, 0),
    () => bloomOptimalBits(10, 1),
    () => bloomOptimalBits(10, NaN),
    () => bloomOptimalHashes(0, 10),
    () => bloomOptimalHashes(10, 0),
    () => bloomOptimalHashes(NaN, 10),
    () => bloomFalsePositiveRate(10, 0, 1),
    () => bloomFalsePositiveRate(10, 1, -1),
  ]
  for (const f of bad) t.throws(f, { code: 'ERR_GRUDGE_SIZING_INVALID' })
})
