import t from 'tap'
import fc from 'fast-check'
import { Rotator, Sketch, suggestPeriodMs, linear, exponential } from '../../src/index.js'
import { murmur3 } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import type { Sketch as SketchT } from '../../src/sketch/sketch.js'

// Carry-forward (spec/rotator.md §1, "Carry-forward"): with linear decay, a write that lands
// on the oldest generation raises the key's cells in every younger generation to at least
// the oldest generation's aggregate after the write (non-negative deltas only).

/** A Rotator whose generations the test can read one by one. */
class Peek extends Rotator {
  gen(i: number): SketchT {
    return this.gens[i]
  }
  reads(key: string): number[] {
    return this.gens.map((g) => g.estimate(key))
  }
}

/** An exact single-key token bucket (a debt drained at ratePerMs per ms), the reference. */
class Bucket {
  debt = 0
  private at = 0
  constructor(private readonly ratePerMs: number) {}
  read(now: number): number {
    if (now > this.at) {
      this.debt = Math.max(0, this.debt - this.ratePerMs * (now - this.at))
      this.at = now
    }
    return this.debt
  }
  tryConsume(now: number, cost: number, limit: number): boolean {
    if (this.read(now) + cost > limit) return false
    this.debt += cost
    return true
  }
}

type Row =
  | { atS: number; op: 'try'; cost: number; expected: boolean; reads: number[] }
  | { atS: number; op: 'tick'; reads: number[] }
  | { atS: number; op: 'read'; reads: number[] }

t.test('step table: after an admit every younger generation reads ≥ the oldest; a denial writes nothing', async (t) => {
  // rate 1/s, hi = burst = 10, 3 generations, period 5 s (the guard: 2 × 5 s ≥ 10 / 1 s).
  // Expected reads worked by hand from the token bucket (debt drains 1/s):
  // t=0: 10 taken → 10 everywhere. t=5: tick, old G0 retired; 5 left in G0 and G1, the fresh
  // G2 reads 0. +2 → 7; without carry G2 would read 2 (the amnesty of the regression test),
  // with it max(0 + 2, 7) = 7. +4 is denied (7 + 4 > 10) and changes nothing. t=10: tick,
  // G0 = G1 = 2, fresh G2 = 0; +8 → 10 everywhere. t=11: 9; +2 denied, nothing changes.
  // t=15: tick, 5, 5, fresh 0; t=20: tick, 0, 0, 0.
  const rows: Row[] = [
    { atS: 0, op: 'try', cost: 10, expected: true, reads: [10, 10, 10] },
    { atS: 0, op: 'try', cost: 1, expected: false, reads: [10, 10, 10] },
    { atS: 5, op: 'tick', reads: [5, 5, 0] },
    { atS: 5, op: 'try', cost: 2, expected: true, reads: [7, 7, 7] },
    { atS: 5, op: 'try', cost: 4, expected: false, reads: [7, 7, 7] },
    { atS: 6, op: 'read', reads: [6, 6, 6] },
    { atS: 10, op: 'tick', reads: [2, 2, 0] },
    { atS: 10, op: 'try', cost: 8, expected: true, reads: [10, 10, 10] },
    { atS: 11, op: 'read', reads: [9, 9, 9] },
    { atS: 11, op: 'try', cost: 2, expected: false, reads: [9, 9, 9] },
    { atS: 15, op: 'tick', reads: [5, 5, 0] },
    { atS: 20, op: 'tick', reads: [0, 0, 0] },
  ]
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Peek({
    sketch: { decay: linear(1), hi: 10, levels: 4, cellsPerLevel: 256, hasher: murmur3(3) },
    generations: 3,
    periodMs: 5_000,
    clock,
    ticker,
  })
  const ref = new Bucket(1 / 1000)
  for (const row of rows) {
    clock.set(row.atS * 1000)
    const at = `t=${row.atS} s ${row.op}`
    if (row.op === 'tick') ticker.tick()
    else if (row.op === 'try') {
      const before = r.reads('k')
      t.equal(ref.tryConsume(row.atS * 1000, row.cost, 10), row.expected, `${at}: the reference agrees`)
      t.equal(r.tryUpdate('k', row.cost, 10), row.expected, `${at} ${row.cost}: ${row.expected}`)
      if (!row.expected) t.same(r.reads('k'), before, `${at}: a denial changes no generation`)
    }
    const reads = r.reads('k')
    t.same(reads, row.reads, `${at}: generations read ${row.reads.join(', ')}`)
    t.equal(reads[0], ref.read(row.atS * 1000), `${at}: the oldest equals the token bucket`)
    if (row.op === 'try' && row.expected) {
      for (let i = 1; i < reads.length; i++) t.ok(reads[i] >= reads[0], `${at}: generation ${i} ≥ the oldest`)
    }
  }
  r.close()
})

t.test('update and updateAndEstimate carry non-negative deltas only; exponential decay never carries', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Peek({
    sketch: { decay: linear(1), hi: 10, levels: 2, cellsPerLevel: 64, hasher: murmur3(5) },
    periodMs: 10_000,
    clock,
    ticker,
  })
  r.update('k', 8)
  t.same(r.reads('k'), [8, 8])
  clock.set(12_000)
  r.rotate() // G0 = 8 drained over 12 s = 0, fresh G1
  r.update('k', 6)
  t.same(r.reads('k'), [6, 6])
  r.rotate() // G0 = 6, fresh G1
  t.equal(r.updateAndEstimate('k', 1), 7)
  t.same(r.reads('k'), [7, 7], 'updateAndEstimate carries: G1 = max(0 + 1, 7) (a plain add: 1)')
  r.rotate() // G0 = 7, fresh G1
  t.equal(r.updateAndEstimate('k', -3), 4)
  t.same(r.reads('k'), [4, 0], 'a negative delta is a plain add: G1 = clamp(0 − 3) = 0, not raised to 4')
  r.rotate() // G0 = 0, fresh G1
  t.equal(r.tryUpdate('k', -1, 10), true)
  t.same(r.reads('k'), [0, 0], 'tryUpdate with a negative delta does not carry either')
  r.close()

  const e = new Peek({
    sketch: { decay: exponential(0.001), hi: 10, levels: 2, cellsPerLevel: 64, hasher: murmur3(5) },
    periodMs: 1_000,
    clock,
    ticker,
  })
  e.update('k', 5)
  e.rotate()
  e.update('k', 1)
  t.same(e.reads('k'), [6, 1], 'exponential decay: the fresh generation counts from its creation')
  t.equal(e.tryUpdate('k', 1, 10), true)
  t.same(e.reads('k'), [7, 2], 'and tryUpdate is a plain add too')
  e.close()
})

t.test('Sketch.updateWithFloor: clamp(max(decayed + delta, floor)) in each cell, in one pass', async (t) => {
  const clock = new FakeClock(0)
  const s = new Sketch({ decay: linear(1), lo: -5, hi: 10, levels: 3, cellsPerLevel: 8, hasher: murmur3(1), clock })
  s.update('k', 2)
  s.updateWithFloor('k', 1, 7)
  t.equal(s.estimate('k'), 7, 'raised to the floor')
  s.updateWithFloor('k', 2, 3)
  t.equal(s.estimate('k'), 9, 'above the floor: a plain add')
  s.updateWithFloor('k', 0, 50)
  t.equal(s.estimate('k'), 10, 'a floor above hi yields hi')
  clock.set(4_000)
  s.updateWithFloor('k', -20, -Infinity)
  t.equal(s.estimate('k'), -5, 'decayed to 6, −20, clamped to lo; −Infinity is no floor')
  t.throws(() => s.updateWithFloor('k', 1, NaN), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE', message: /floor/ })
  t.throws(() => s.updateWithFloor('k', 1, Infinity), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE', message: /floor/ })
  t.throws(() => s.updateWithFloor('k', NaN, 1), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE', message: /delta/ })
  t.equal(s.estimate('k'), -5, 'a rejected call changes nothing')
})

// Property: rate 1000/s (1 per ms) and integer times and costs keep every drain exact, so
// the comparison with the exact bucket is exact. Rotations come at every multiple of the
// guard's period (rotateTo(floor(t / period)) with a ticker that never fires).
// Mostly 0–3 ms apart at costs 1–6 (demand ≈ 2/ms against a drain of 1/ms: keys held at
// their limit across rotations, the case without carry gets wrong), with a few long gaps.
const stepArb = fc.record({
  dt: fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min: 0, max: 3 }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 80 }) },
  ),
  cost: fc.integer({ min: 1, max: 6 }),
  key: fc.nat(2),
})
const cfgArb = fc.record({
  limit: fc.integer({ min: 1, max: 20 }),
  hiFactor: fc.integer({ min: 1, max: 3 }),
  generations: fc.integer({ min: 2, max: 4 }),
})
const never = { every: () => ({ cancel() {} }) }

t.test('one key: the rotator decides exactly as the exact token bucket (guard period, any costs)', async (t) => {
  fc.assert(
    fc.property(
      cfgArb,
      fc.array(stepArb, { minLength: 50, maxLength: 300, size: 'max' }),
      ({ limit, hiFactor, generations }, steps) => {
        const hi = limit * hiFactor
        const periodMs = suggestPeriodMs(hi, 1000, generations)
        const clock = new FakeClock(0)
        const r = new Rotator({
          sketch: { decay: linear(1000), hi, levels: 2, cellsPerLevel: 16, hasher: murmur3(9) },
          generations,
          periodMs,
          clock,
          ticker: never,
        })
        const ref = new Bucket(1)
        let now = 0
        for (const { dt, cost } of steps) {
          now += dt
          clock.set(now)
          r.rotateTo(Math.floor(now / periodMs))
          const want = ref.tryConsume(now, cost, limit)
          if (r.tryUpdate('k', cost, limit) !== want) return false
          if (r.estimate('k') !== ref.read(now)) return false
        }
        r.close()
        return true
      },
    ),
    { numRuns: 300, seed: 20261130 },
  )
  t.pass('300 sequences')
})

t.test('colliding keys: the deciding reading is never below the exact bucket fed the admitted requests', async (t) => {
  // 3 keys in 1 level of 2 cells: collisions only add (non-negative deltas, Min), and the
  // carry keeps every younger generation ≥ the oldest, so at every request the reading is ≥
  // the token bucket fed exactly what the rotator admitted: the rotator never admits a
  // request that bucket would refuse (the admitted stream conforms to rate and burst).
  fc.assert(
    fc.property(
      cfgArb,
      fc.array(stepArb, { minLength: 50, maxLength: 300, size: 'max' }),
      ({ limit, hiFactor, generations }, steps) => {
        const hi = limit * hiFactor
        const periodMs = suggestPeriodMs(hi, 1000, generations)
        const clock = new FakeClock(0)
        const r = new Rotator({
          sketch: { decay: linear(1000), hi, levels: 1, cellsPerLevel: 2, hasher: murmur3(11) },
          generations,
          periodMs,
          clock,
          ticker: never,
        })
        const fed = [new Bucket(1), new Bucket(1), new Bucket(1)]
        let now = 0
        for (const { dt, cost, key } of steps) {
          now += dt
          clock.set(now)
          r.rotateTo(Math.floor(now / periodMs))
          const k = `key-${key}`
          if (r.estimate(k) < fed[key].read(now)) return false
          if (r.tryUpdate(k, cost, limit)) {
            if (fed[key].read(now) + cost > limit) return false
            fed[key].debt += cost
          }
        }
        r.close()
        return true
      },
    ),
    { numRuns: 300, seed: 20261130 },
  )
  t.pass('300 sequences')
})

t.test('the carry floor holds for the max and mean aggregators too', async (t) => {
  for (const aggregator of ['max', 'mean'] as const) {
    const clock = new FakeClock(0)
    const r = new Peek({
      sketch: { decay: linear(1), hi: 10, levels: 3, cellsPerLevel: 64, aggregator, hasher: murmur3(2) },
      periodMs: 10_000,
      clock,
      ticker: new FakeTicker(),
    })
    t.equal(r.tryUpdate('k', 6, 10), true)
    r.rotate() // G0 = 6, fresh G1
    t.equal(r.tryUpdate('k', 1, 10), true)
    t.same(r.reads('k'), [7, 7], `${aggregator}: the fresh generation reads max(0 + 1, 7)`)
    t.equal(r.tryUpdate('k', 4, 10), false)
    t.same(r.reads('k'), [7, 7], `${aggregator}: a denial writes nothing`)
    r.close()
  }
})

t.test('carry paths: non-finite arguments change nothing; updateWithFloor decays like update', async (t) => {
  const clock = new FakeClock(0)
  const r = new Peek({
    sketch: { decay: linear(1), hi: 10, levels: 2, cellsPerLevel: 64, hasher: murmur3(4) },
    periodMs: 10_000,
    clock,
    ticker: new FakeTicker(),
  })
  r.update('k', 3)
  t.throws(() => r.tryUpdate('k', NaN, 10), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE', message: /delta/ })
  t.throws(() => r.tryUpdate('k', 1, Infinity), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE', message: /limit/ })
  t.same(r.reads('k'), [3, 3])
  r.close()
  // exponential decay, and a never-touched cell under a clock reading ≤ 0 (as in update)
  const c2 = new FakeClock(-1000)
  const a = new Sketch({ decay: exponential(Math.LN2), levels: 2, cellsPerLevel: 8, hasher: murmur3(1), clock: c2 })
  const b = new Sketch({ decay: exponential(Math.LN2), levels: 2, cellsPerLevel: 8, hasher: murmur3(1), clock: c2 })
  a.updateWithFloor('k', 4, -Infinity)
  b.update('k', 4)
  c2.set(0) // one half-life later
  t.equal(a.estimate('k'), b.estimate('k'))
  t.equal(a.estimate('k'), 2)
  a.updateWithFloor('k', 1, 0)
  t.equal(a.estimate('k'), 3, 'decayed to 2, + 1')
})
