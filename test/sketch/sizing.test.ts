import t from 'tap'
import {
  abuseFalseBlockRate,
  debtCellTail,
  debtMeterCellsForLoad,
  fairnessFalseThrottleRate,
  parseSizeBytes,
  scoreCellsForLoad,
  sketchFalsePositiveRate,
  sketchSuggestLevels,
} from '../../src/sketch/sizing.js'
import { Sketch } from '../../src/sketch/sketch.js'
import { SKETCH_BYTES_PER_CELL } from '../../src/sketch/shape.js'

// Values from the issue ("Values it must reproduce").
t.test('sketchSuggestLevels reproduces the issue values', async (t) => {
  t.equal(sketchSuggestLevels(100_000, { hotKeys: 1000 }, 1e-8), 4)
  t.equal(sketchSuggestLevels(1000, { hotKeys: 100 }, 1e-4), 4)
  t.equal(sketchSuggestLevels(1000, { hotKeys: 1 }, 1e-4), 2)
})

t.test('sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 100000 }, { hotKeys: 1000 }) ≈ 9.80e-9', async (t) => {
  const p = sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 100_000 }, { hotKeys: 1000 })
  t.ok(Math.abs(p - 9.8e-9) < 0.005e-9, `${p}`)
  // the formula by hand: (1 − (1 − 1/M)^H)^L
  t.ok(
    Math.abs(sketchFalsePositiveRate({ levels: 2, cellsPerLevel: 10 }, { hotKeys: 3 }) - (1 - 0.9 ** 3) ** 2) < 1e-15,
    'L=2, M=10, H=3 = 0.271^2',
  )
  t.equal(
    sketchFalsePositiveRate({ levels: 3, cellsPerLevel: 1000 }, { hotKeys: 0 }),
    0,
    'no hot keys, no false positives',
  )
  t.equal(
    sketchFalsePositiveRate({ levels: 3, cellsPerLevel: 1 }, { hotKeys: 5 }),
    1,
    'one cell per level and a hot key: always',
  )
})

t.test('sketchSuggestLevels meets its target and is the fewest that does', async (t) => {
  for (const [h, m, p] of [
    [1000, 100_000, 1e-8],
    [100, 1000, 1e-4],
    [50, 4096, 1e-6],
    [10_000, 1 << 20, 1e-9],
  ]) {
    const l = sketchSuggestLevels(m, { hotKeys: h }, p)
    t.ok(sketchFalsePositiveRate({ levels: l, cellsPerLevel: m }, { hotKeys: h }) <= p, `L=${l} meets ${p}`)
    if (l > 1)
      t.ok(sketchFalsePositiveRate({ levels: l - 1, cellsPerLevel: m }, { hotKeys: h }) > p, `L=${l - 1} does not`)
  }
})

t.test('precision for tiny per-level rates (1 − Math.exp(−1e-17) is 0; expm1 keeps it)', async (t) => {
  // H/M = 1e-15: 1 − (1 − 1e-15)^1 computed naively loses 3 digits
  const p = sketchFalsePositiveRate({ levels: 1, cellsPerLevel: 1e15 }, { hotKeys: 1 })
  t.ok(Math.abs(p - 1e-15) / 1e-15 < 1e-9, `${p} ≈ 1e-15`)
})

t.test('coded errors for arguments outside the domain', async (t) => {
  const bad: Array<[string, () => number]> = [
    ['sketchSuggestLevels H < 0', () => sketchSuggestLevels(1000, { hotKeys: -1 }, 1e-4)],
    ['sketchSuggestLevels H NaN', () => sketchSuggestLevels(1000, { hotKeys: NaN }, 1e-4)],
    ['sketchSuggestLevels M = 1', () => sketchSuggestLevels(1, { hotKeys: 10 }, 1e-4)],
    ['sketchSuggestLevels M 2.5', () => sketchSuggestLevels(2.5, { hotKeys: 10 }, 1e-4)],
    ['sketchSuggestLevels M NaN', () => sketchSuggestLevels(NaN, { hotKeys: 10 }, 1e-4)],
    ['sketchSuggestLevels p = 0', () => sketchSuggestLevels(1000, { hotKeys: 10 }, 0)],
    ['sketchSuggestLevels p = 1', () => sketchSuggestLevels(1000, { hotKeys: 10 }, 1)],
    ['sketchSuggestLevels p NaN', () => sketchSuggestLevels(1000, { hotKeys: 10 }, NaN)],
    ['falsePositiveRate L = 0', () => sketchFalsePositiveRate({ levels: 0, cellsPerLevel: 1000 }, { hotKeys: 10 })],
    ['falsePositiveRate M = 0', () => sketchFalsePositiveRate({ levels: 2, cellsPerLevel: 0 }, { hotKeys: 10 })],
    ['falsePositiveRate H < 0', () => sketchFalsePositiveRate({ levels: 2, cellsPerLevel: 1000 }, { hotKeys: -1 })],
    ['falsePositiveRate H NaN', () => sketchFalsePositiveRate({ levels: 2, cellsPerLevel: 1000 }, { hotKeys: NaN })],
  ]
  for (const [name, f] of bad)
    t.throws(f, { name: 'GrudgeRangeError', code: 'ERR_GRUDGE_SIZING_INVALID', message: /expected .*, received/ }, name)
})

// Erlang's M/D/1 waiting-time distribution (Erlang 1909; Crommelin 1932), service time 1:
// P(W ≤ x) = (1 − ρ) Σ_{k=0}^{⌊x⌋} (ρ(k − x))^k / k! · e^{−ρ(k − x)}; by PASTA also the workload.
function erlangTail(rho: number, x: number): number {
  let sum = 0
  let fact = 1
  for (let k = 0; k <= Math.floor(x); k++) {
    if (k > 0) fact *= k
    sum += (Math.pow(rho * (k - x), k) / fact) * Math.exp(-rho * (k - x))
  }
  return 1 - (1 - rho) * sum
}

t.test("one debt cell is the M/D/1 workload: Erlang's formula, P(W > 0) = ρ", async (t) => {
  for (const rho of [0.1, 0.5, 0.8, 0.95])
    for (const x of [0, 0.5, 1, 3, 9]) {
      const want = erlangTail(rho, x)
      if (want < 1e-12) continue
      const got = debtCellTail(rho, x, 1e4)
      t.ok(Math.abs(got - want) <= 1e-3 * want + 1e-12, `ρ ${rho} x ${x}: ${got} vs ${want}`)
    }
  t.ok(Math.abs(debtCellTail(0.3, 0, 1e4) - 0.3) < 1e-6, 'the busy share is ρ')
  t.equal(debtCellTail(0, 3, 30), 0, 'no load, never full')
  t.ok(debtCellTail(2, 9, 100) > 0.999, 'ρ = 2 keeps a capped cell near its ceiling')
})

t.test('the load model: monotone in load and in cells; hot keys alone give the Bloom formula', async (t) => {
  const load = { requestsPerSecond: 3000, rate: 1, burst: 10 }
  const at = (m: number): number => sketchFalsePositiveRate({ levels: 4, cellsPerLevel: m }, load)
  t.ok(at(2048) > at(4096) && at(4096) > at(8192), 'more cells, fewer false rejects')
  t.ok(at(2048) > 0.05, `ρ ≈ 1.5 refuses many: ${at(2048)}`)
  t.ok(at(32768) < 1e-12, `ρ ≈ 0.09 refuses none: ${at(32768)}`)
  const both = sketchFalsePositiveRate(
    { levels: 2, cellsPerLevel: 1000 },
    { ...load, requestsPerSecond: 500, hotKeys: 50 },
  )
  const hotOnly = sketchFalsePositiveRate({ levels: 2, cellsPerLevel: 1000 }, { hotKeys: 50 })
  t.ok(both > hotOnly, 'background load adds to the hot keys')
})

t.test('debtMeterCellsForLoad: the smallest power of two that meets the target', async (t) => {
  const load = { requestsPerSecond: 3000, rate: 1, burst: 10 }
  const m = debtMeterCellsForLoad(load, { levels: 4, targetFalseReject: 1e-5 })
  t.equal(m & (m - 1), 0, 'a power of two')
  t.ok(sketchFalsePositiveRate({ levels: 4, cellsPerLevel: m }, load) <= 1e-5)
  t.ok(sketchFalsePositiveRate({ levels: 4, cellsPerLevel: m / 2 }, load) > 1e-5, 'half of it misses')
  t.equal(debtMeterCellsForLoad(load, { levels: 4, maxCells: 256 }), 256, 'capped at maxCells')
  t.equal(debtMeterCellsForLoad({ requestsPerSecond: 0 }, { levels: 4, minCells: 64 }), 64, 'no load: minCells')
  t.throws(() => debtMeterCellsForLoad({ requestsPerSecond: NaN, rate: 1, burst: 10 }, { levels: 4 }), {
    code: 'ERR_GRUDGE_SIZING_INVALID',
  })
  t.throws(() => debtMeterCellsForLoad({ requestsPerSecond: -1, rate: 1, burst: 10 }, { levels: 4 }), {
    code: 'ERR_GRUDGE_SIZING_INVALID',
  })
  t.throws(() => debtMeterCellsForLoad({ requestsPerSecond: 10 }, { levels: 4 }), { message: /^rate:/ })
  t.throws(() => debtMeterCellsForLoad(load, { levels: 4, minCells: 24 }), { message: /^minCells:/ })
})

// Shot noise with exponential decay and unit jumps: its mean is a = ν/λ (Campbell), and for
// a < 1 below one jump P(S ≤ s) = c·s^a exactly (Takács 1955). The abuse false-block rate at
// a threshold above one jump must fall as cells grow.
t.test('scores: shot-noise tails, false blocks and false throttles', async (t) => {
  const load = { eventsPerSecond: 100, weight: 1, lambdaPerSecond: Math.LN2 / 600, maxScore: 40 }
  const block = (m: number): number => abuseFalseBlockRate({ levels: 4, cellsPerLevel: m }, load, 10)
  t.ok(block(1024) > block(4096), 'more cells, fewer false blocks')
  const m = scoreCellsForLoad(load, { levels: 4, threshold: 10, targetFalseReject: 1e-5 })
  t.ok(block(m) <= 1e-5 && block(m / 2) > 1e-5, `M = ${m}`)
  const fair = { eventsPerSecond: 50, weight: 0.1, lambdaPerSecond: 0.1, maxScore: 1 }
  const thr = (m: number): number => fairnessFalseThrottleRate({ levels: 4, cellsPerLevel: m }, fair)
  t.ok(thr(16) > thr(256) && thr(256) >= 0, 'more cells, fewer throttles')
  // with one level and M = 1 the key's score is the cell's: E[S] = ν·w/λ = 50 · 0.1 / 0.1 = 50, clamped at 1
  t.ok(fairnessFalseThrottleRate({ levels: 1, cellsPerLevel: 1 }, fair) > 0.95, 'a saturated cell throttles nearly all')
  const light = { ...fair, eventsPerSecond: 0.01 }
  // mean background 0.01 · 0.1 / 0.1 / 1 = 0.01 at L = 1 (E[min] = E[S] below the cap)
  const one = fairnessFalseThrottleRate({ levels: 1, cellsPerLevel: 1 }, light)
  t.ok(Math.abs(one - 0.01) < 0.001, `E[S] = 0.01: ${one}`)
  // Campbell's theorem at a lighter load, 2 %: a query below one jump was read at the nearest
  // grid point, Z(0) = 0, a tail of 1 there: a floor of ~1e-3 whatever the load (1.8e-3 here)
  const lighter = fairnessFalseThrottleRate({ levels: 1, cellsPerLevel: 1 }, { ...fair, eventsPerSecond: 0.001 })
  t.ok(Math.abs(lighter - 0.001) < 2e-5, `E[S] = 0.001: ${lighter}`)
  t.equal(
    fairnessFalseThrottleRate({ levels: 4, cellsPerLevel: 64 }, { ...fair, eventsPerSecond: 0 }),
    0,
    'no events, no throttles',
  )
  t.throws(() => abuseFalseBlockRate({ levels: 4, cellsPerLevel: 64 }, { ...load, eventsPerSecond: -1 }, 10), {
    code: 'ERR_GRUDGE_SIZING_INVALID',
  })
})

t.test('parseSizeBytes: powers of 1024, strict', async (t) => {
  t.equal(parseSizeBytes('memory', '64MB'), 64 * 1024 * 1024)
  t.equal(parseSizeBytes('memory', '1.5 KiB'), 1536)
  t.equal(parseSizeBytes('memory', '512kb'), 512 * 1024)
  t.equal(parseSizeBytes('memory', 4096), 4096)
  t.equal(parseSizeBytes('memory', '100'), 100)
  for (const bad of ['', 'MB', '-1MB', '1TB', '0', 0, -5, 1.5, NaN, Infinity, null, {}, '1e3'])
    t.throws(
      () => parseSizeBytes('memory', bad),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"memory"/ },
      JSON.stringify(bad) ?? typeof bad,
    )
  // the message says what is wrong: an unknown unit lists the units, a number past 2^53 − 1 the range
  t.throws(() => parseSizeBytes('memory', '1TB'), { message: /units B, KB\/KiB, MB\/MiB, GB\/GiB/ })
  t.throws(() => parseSizeBytes('memory', 2 ** 60), { message: /up to 2\^53 − 1/ })
})

t.test('SKETCH_BYTES_PER_CELL is what a Sketch holds per cell', async (t) => {
  t.equal(new Sketch({ levels: 3, cellsPerLevel: 64 }).sizeBytes(), 3 * 64 * SKETCH_BYTES_PER_CELL)
})
