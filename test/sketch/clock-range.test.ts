import t from 'tap'
import { Sketch } from '../../src/sketch/sketch.js'
import { exponential, linear } from '../../src/sketch/decay.js'
import type { Decay } from '../../src/sketch/shape.js'
import { FakeClock } from '../../src/testing/index.js'
import { closeUp } from './fixtures/f32.js'

// Bad input (issue #18): a clock that runs past the cell format's time range (an epoch
// rebase while requests arrive, a jump of years) or steps back never corrupts a score.
// Cells hold Uint32 ticks (ms) after a per-sketch epoch (src/sketch/cells.ts, spec/sketch.md
// §2 "Time"); a time out of range moves the epoch, decaying the cells older than the new one.
const YEAR_MS = 365.25 * 24 * 3600 * 1000

t.test('a jump of years decays to the exact expected score, never NaN', (t) => {
  const clock = new FakeClock(1_000)
  const s = new Sketch({ levels: 4, cellsPerLevel: 64, decay: exponential(1e-9), hi: 1e9, seed: 7, clock })
  s.update('a', 100)
  clock.advance(30 * YEAR_MS)
  // exp(−λ·t) with λ = 1e-9 /s over 30 years (9.47e8 s): 100 · e^−0.947
  const want = 100 * Math.exp(-1e-9 * ((30 * YEAR_MS) / 1000))
  // two roundings up: the move of the epoch decays the cell to the new epoch, the read to now
  closeUp(t, s.estimate('a'), want, '30 years of decay', 2, 1e-9)
  s.update('a', 1)
  closeUp(t, s.estimate('a'), want + 1, 'a write after the jump adds to the decayed score', 3, 1e-9)
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

const EPOCH_MS = 2 ** 32 // the cells' time range in ticks (1 ms): a steady clock crosses it every 49.7 days

t.test(
  'requests every 7 hours for a year: the epoch moves about 12 times, scores follow the exact decay from above',
  (t) => {
    for (const decay of [exponential(1e-6), linear(1e-4)]) {
      const clock = new FakeClock(1_700_000_000_000) // Unix ms: far past 2^32 from the start
      const s = new Sketch({ levels: 4, cellsPerLevel: 64, decay, hi: 1e6, seed: 11, clock })
      // the reference: one key, no collisions, float64, the decay of spec/sketch.md §4 step by step
      let exact = 0
      let steps = 0
      let below = 0
      let worst = 0
      for (let ms = 0; ms < 365 * 24 * 3600 * 1000; ms += 7 * 3600 * 1000 + 123) {
        clock.set(1_700_000_000_000 + ms)
        if (steps > 0) exact = applyExact(decay, exact, 7 * 3600 * 1000 + 123)
        s.update('k', 10)
        exact += 10
        const got = s.estimate('k')
        if (got < exact * (1 - 1e-12)) below++
        worst = Math.max(worst, (got - exact) / exact)
        steps++
      }
      t.ok(
        steps * (7 * 3600 * 1000) > 6 * EPOCH_MS,
        `${decay.kind}: ${steps} requests over more than 6 ranges of 2^32 ms`,
      )
      t.equal(below, 0, `${decay.kind}: never below the exact score`)
      // every stored write rounds up by < 1 Float32 ulp (relative 2^-23); a few hundred writes stay far under 1e-4
      t.ok(worst < 1e-4, `${decay.kind}: at most ${worst.toExponential(2)} above it (relative)`)
    }
    t.end()
  },
)

function applyExact(decay: Decay, s: number, ms: number): number {
  const r = decay.ratePerSecond / 1000
  return decay.kind === 'exponential' ? s * Math.exp(-r * ms) : Math.max(0, s - r * ms)
}

t.test('a move of the epoch while requests arrive: keys touched on either side read as one exact sketch', (t) => {
  const clock = new FakeClock(0)
  const s = new Sketch({ levels: 3, cellsPerLevel: 1024, decay: linear(1), hi: 1e9, seed: 5, clock })
  // the first reading sets the epoch 2^31 ms before it: the range ends 2^31 − 1 ms after 0
  s.update('old', 1e6) // drains 1 per second: 1e6 s ≈ 11.6 days
  clock.set(2 ** 31 - 1)
  s.update('late', 3000)
  clock.set(2 ** 31) // one tick past the range: the epoch moves here, every cell is decayed to the new epoch
  s.update('new', 7)
  t.equal(s.estimate('new'), 7, 'the request that moved the epoch adds in full')
  // a read stores nothing and returns the float64 decay of the stored cells (spec/sketch.md §2)
  t.equal(s.estimate('late'), 3000 - 0.001, 'a key touched 1 ms before the move drained 1 ms, no more')
  t.equal(s.estimate('old'), 0, 'a key drained long before the move reads 0, as the exact meter does')
  clock.set(2 ** 31 + 1_000_000)
  t.equal(s.estimate('late'), 3000 - 1000.001, 'and keeps draining after it (1,000 s later), from its own time')
  t.equal(s.estimate('new'), 0, 'the small key drained in 7 s')
  t.end()
})

t.test('a clock gone back by 20 days stays in range: a key first seen there decays from its own time', (t) => {
  const T0 = 1_700_000_000_000
  const DAY_MS = 24 * 3600 * 1000
  const clock = new FakeClock(T0) // the first reading puts the epoch 2^31 ms (24.9 days) before it
  const s = new Sketch({ levels: 3, cellsPerLevel: 64, decay: linear(1), hi: 1e6, seed: 8, clock })
  s.update('a', 100)
  clock.set(T0 - 20 * DAY_MS)
  s.update('b', 10)
  clock.set(T0 - 20 * DAY_MS + 2_000)
  t.equal(s.estimate('b'), 8, 'b drained 2 s from its own time')
  t.equal(s.estimate('a'), 100, 'a, touched later than now, decayed nothing')
  clock.set(T0 + 10_000)
  t.equal(s.estimate('a'), 90, 'a drains from its own time once the clock passes it (10 s)')
  t.end()
})

t.test('a clock gone back by years past the range: every cell is newer, nothing decays, nothing is lost', (t) => {
  const clock = new FakeClock(20 * YEAR_MS)
  const s = new Sketch({ levels: 3, cellsPerLevel: 64, decay: exponential(0.001), hi: 1e6, seed: 8, clock })
  s.update('a', 100)
  clock.set(YEAR_MS) // 19 years back: the epoch cannot move there with a cell at 20 years
  s.update('b', 10)
  t.equal(s.estimate('a'), 100, 'a keeps its score')
  t.equal(s.estimate('b'), 10, 'b adds in full, at no time before the epoch: it decays less, never more')
  clock.set(20 * YEAR_MS + 1000)
  closeUp(t, s.estimate('a'), 100 * Math.exp(-0.001), 'the clock back at 20 years: a decays 1 s')
  t.end()
})
