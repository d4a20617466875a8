import t from 'tap'
import { ExactDistinct, HyperLogLogDistinct, distinctKeysText } from '../../src/cli/distinct.js'

const num = (n: number) => n.toLocaleString('en-US')

t.test('the printed 95% interval covers the true count about 95% of the time (measured)', async (t) => {
  // 400 independent seeds, 3,000 distinct keys each, precision 10 (σ = 1.04/√1024 ≈ 3.25 %):
  // a 95 % interval misses in 20 of 400 trials on average; binomial σ = √(400·0.05·0.95) ≈ 4.4,
  // so 5–36 misses is within ±3.5σ. A ±1σ interval would miss in about 127.
  const trials = 400
  const n = 3000
  let misses = 0
  let missesOneSigma = 0
  for (let seed = 1; seed <= trials; seed++) {
    const d = new HyperLogLogDistinct(10, seed)
    for (let i = 0; i < n; i++) d.add(`key-${seed}-${i}`)
    const text = distinctKeysText(
      { count: d.estimate(), method: d.method, relativeStandardError: d.relativeStandardError, exact: n },
      (x) => String(x),
    )
    const [, lo, hi] = /95% interval (\d+)–(\d+)/.exec(text)!.map(Number)
    if (n < lo || n > hi) misses++
    if (Math.abs(d.estimate() - n) > d.relativeStandardError * d.estimate()) missesOneSigma++
  }
  t.ok(misses >= 5 && misses <= 36, `95% interval missed ${misses} of ${trials}`)
  t.ok(missesOneSigma > 80, `a ±1σ interval misses far more often (${missesOneSigma} of ${trials}): it is not a bound`)
})

t.test('the text names the method, σ and the exact count', async (t) => {
  t.equal(
    distinctKeysText({ count: 1766.4, method: 'hyperloglog', relativeStandardError: 0.0081, exact: 1753 }, num),
    // 1.96 × 0.0081 × 1766.4 = 28.04 → [1738.36, 1794.44], widened to whole keys
    '1,766 (HyperLogLog: 95% interval 1,738–1,795, σ 0.81%; exact 1,753)',
  )
  const e = new ExactDistinct()
  e.add('a')
  e.add('a')
  t.equal(
    distinctKeysText({ count: e.estimate(), method: e.method, relativeStandardError: 0, exact: 1 }, num),
    '1 (exact)',
  )
})
