import t from 'tap'
import { sketchFalsePositiveRate, sketchSuggestLevels } from '../../src/sketch/sizing.js'

// Values from the issue ("Values it must reproduce").
t.test('sketchSuggestLevels reproduces the issue values', async (t) => {
  t.equal(sketchSuggestLevels(1000, 100_000, 1e-8), 4)
  t.equal(sketchSuggestLevels(100, 1000, 1e-4), 4)
  t.equal(sketchSuggestLevels(1, 1000, 1e-4), 2)
})

t.test('sketchFalsePositiveRate(4, 100000, 1000) ≈ 9.80e-9', async (t) => {
  const p = sketchFalsePositiveRate(4, 100_000, 1000)
  t.ok(Math.abs(p - 9.8e-9) < 0.005e-9, `${p}`)
  // the formula by hand: (1 − (1 − 1/M)^H)^L
  t.ok(Math.abs(sketchFalsePositiveRate(2, 10, 3) - (1 - 0.9 ** 3) ** 2) < 1e-15, 'L=2, M=10, H=3 = 0.271^2')
  t.equal(sketchFalsePositiveRate(3, 1000, 0), 0, 'no hot keys, no false positives')
  t.equal(sketchFalsePositiveRate(3, 1, 5), 1, 'one cell per level and a hot key: always')
})

t.test('sketchSuggestLevels meets its target and is the fewest that does', async (t) => {
  for (const [h, m, p] of [
    [1000, 100_000, 1e-8],
    [100, 1000, 1e-4],
    [50, 4096, 1e-6],
    [10_000, 1 << 20, 1e-9],
  ]) {
    const l = sketchSuggestLevels(h, m, p)
    t.ok(sketchFalsePositiveRate(l, m, h) <= p, `L=${l} meets ${p}`)
    if (l > 1) t.ok(sketchFalsePositiveRate(l - 1, m, h) > p, `L=${l - 1} does not`)
  }
})

t.test('precision for tiny per-level rates (1 − Math.exp(−1e-17) is 0; expm1 keeps it)', async (t) => {
  // H/M = 1e-15: 1 − (1 − 1e-15)^1 computed naively loses 3 digits
  const p = sketchFalsePositiveRate(1, 1e15, 1)
  t.ok(Math.abs(p - 1e-15) / 1e-15 < 1e-9, `${p} ≈ 1e-15`)
})

t.test('coded errors for arguments outside the domain', async (t) => {
  const bad: Array<[string, () => number]> = [
    ['sketchSuggestLevels H = 0', () => sketchSuggestLevels(0, 1000, 1e-4)],
    ['sketchSuggestLevels H < 0', () => sketchSuggestLevels(-1, 1000, 1e-4)],
    ['sketchSuggestLevels H NaN', () => sketchSuggestLevels(NaN, 1000, 1e-4)],
    ['sketchSuggestLevels M = 1', () => sketchSuggestLevels(10, 1, 1e-4)],
    ['sketchSuggestLevels M 2.5', () => sketchSuggestLevels(10, 2.5, 1e-4)],
    ['sketchSuggestLevels M NaN', () => sketchSuggestLevels(10, NaN, 1e-4)],
    ['sketchSuggestLevels p = 0', () => sketchSuggestLevels(10, 1000, 0)],
    ['sketchSuggestLevels p = 1', () => sketchSuggestLevels(10, 1000, 1)],
    ['sketchSuggestLevels p NaN', () => sketchSuggestLevels(10, 1000, NaN)],
    ['falsePositiveRate L = 0', () => sketchFalsePositiveRate(0, 1000, 10)],
    ['falsePositiveRate M = 0', () => sketchFalsePositiveRate(2, 0, 10)],
    ['falsePositiveRate H < 0', () => sketchFalsePositiveRate(2, 1000, -1)],
    ['falsePositiveRate H NaN', () => sketchFalsePositiveRate(2, 1000, NaN)],
  ]
  for (const [name, f] of bad)
    t.throws(f, { name: 'GrudgeRangeError', code: 'ERR_GRUDGE_SIZING_INVALID', message: /expected .*, received/ }, name)
})
