import t from 'tap'
import { Sketch } from '../../src/sketch/sketch.js'
import { exponential, linear } from '../../src/sketch/decay.js'
import { FakeClock } from '../../src/testing/index.js'

// Bad input (issue #18): a clock that jumps by years, or steps back, never corrupts a score.
// Cells hold float64 ms times (src/sketch/cells.ts), so there is no epoch to rebase; these
// tests pin what a jump does to the interleaved [score, time] cells.
const YEAR_MS = 365.25 * 24 * 3600 * 1000

t.test('a jump of years decays to the exact expected score, never NaN', (t) => {
  const clock = new FakeClock(1_000)
  const s = new Sketch({ levels: 4, cellsPerLevel: 64, decay: exponential(1e-9), hi: 1e9, seed: 7, clock })
  s.update('a', 100)
  clock.advance(30 * YEAR_MS)
  // exp(−λ·t) with λ = 1e-9 /s over 30 years (9.47e8 s): 100 · e^−0.947
  const want = 100 * Math.exp(-1e-9 * ((30 * YEAR_MS) / 1000))
  t.ok(Math.abs(s.estimate('a') - want) < 1e-9 * want, `30 years of decay: ${s.estimate('a')} ≈ ${want}`)
  s.update('a', 1)
  t.ok(Math.abs(s.estimate('a') - (want + 1)) < 1e-9 * want, 'a write after the jump adds to the decayed score')
  t.end()
})

t.test('a linear debt meter after a jump of years is empty, and refills from zero', (t) => {
  const clock = new FakeClock(0)
  const s = new Sketch({ levels: 4, cellsPerLevel: 64, decay: linear(1), hi: 10, seed: 7, clock })
  t.ok(s.tryUpdate('k', 5, 10))
  clock.advance(100 * YEAR_MS)
  t.equal(s.estimate('k'), 0, 'drained')
  t.ok(s.tryUpdate('k', 10, 10), 'the whole burst is available again')
  t.notOk(s.tryUpdate('k', 1, 10), 'and only the burst')
  t.end()
})

t.test('a step back decays nothing and never lowers a Min estimate below the true score', (t) => {
  const clock = new FakeClock(10 * YEAR_MS)
  const s = new Sketch({ levels: 4, cellsPerLevel: 64, decay: linear(1), hi: 1e6, seed: 7, clock })
  s.update('k', 50)
  clock.set(1_000) // back by ten years
  t.equal(s.estimate('k'), 50, 'nothing decayed by a clock gone back')
  s.update('k', 5)
  t.equal(s.estimate('k'), 55, 'a write under the stepped-back clock adds in full')
  clock.set(10 * YEAR_MS + 20_000) // forward again: 20 s after the cell's last time
  t.equal(s.estimate('k'), 35, 'decay resumes from the cell time kept through the step back (55 − 20 s × 1/s)')
  t.end()
})

t.test('jumps far past any counter range (±1e300 ms, a NaN reading) never make a cell non-finite', (t) => {
  const clock = new FakeClock(0)
  const s = new Sketch({ levels: 2, cellsPerLevel: 16, decay: exponential(0.5), hi: 100, seed: 3, clock })
  s.update('x', 40)
  for (const now of [1e300, -1e300, Number.NaN, Number.MAX_VALUE, 5]) {
    // FakeClock refuses NaN, so a broken reading goes through the explicit-time forms
    s.updateAt(now, 'x', 1)
    const v = s.estimateAt(now, 'x')
    t.ok(Number.isFinite(v) && v >= 0 && v <= 100, `clock at ${now}: score ${v} finite and in [lo, hi]`)
  }
  t.end()
})
