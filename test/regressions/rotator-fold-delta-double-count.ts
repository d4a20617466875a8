// Found reviewing d4cde46 (early growth folds the live generations in place): a folded
// generation is a new Sketch, and a Sketch's delta baseline (spec/rotator.md §4) lives beside
// the Sketch object, so the fold drops it: the folded generation's baseline is zero while its
// view holds everything the generation held, already shipped and applied by the other
// replicas. The next takeDelta() ships it all again. Two replicas with the same master seed and
// the same (deterministic) sizing fold at the same check, as their shapes must agree to
// exchange deltas (spec/rotator.md §1 "Merge and deltas"); one key, no collision, nothing
// written after the fold: one sync round must leave both reading the key's debt (4 after 1 s
// of drain at rate 1). Before a fix: 8 on both (each replica's whole view shipped back;
// with R replicas each would read about R times the key's debt, up to hi), violating
// "No double counting" (spec/rotator.md §4, property 1). Before d4cde46 the replaced
// youngest was fresh, so its zero baseline was right.
import t from 'tap'
import { Rotator, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('a fold keeps the delta baseline: one sync round after a fold counts each update once', async (t) => {
  const clock = new FakeClock(0)
  let big = false
  const replica = (ticker: FakeTicker): Rotator =>
    new Rotator({
      sketch: { levels: 4, decay: linear(1), hi: 10 },
      generations: 2,
      periodMs: 10_000,
      clock,
      ticker,
      seed: 7,
      sizing: { sizeNextGeneration: () => (big ? 1024 : 64), maxCellsPerLevel: 1024, growEarlyWhen: () => big },
    })
  const ta = new FakeTicker()
  const tb = new FakeTicker()
  const a = replica(ta)
  const b = replica(tb)
  t.teardown(() => {
    a.close()
    b.close()
  })
  for (const r of [a, b]) {
    r.rotate()
    r.rotate() // [64, 64] (sized by the sizer)
  }
  t.same(a.generationCellsPerLevel, [64, 64])
  clock.set(1000)
  a.update('x', 5)
  b.applyDelta(a.takeDelta())
  t.equal(b.estimate('x'), 5, 'synced before the fold')
  big = true
  clock.set(2000)
  ta.tick()
  tb.tick() // both replicas fold both generations into 1,024 cells at the same check
  big = false
  t.same(a.generationCellsPerLevel, [1024, 1024])
  t.same(b.generationCellsPerLevel, [1024, 1024])
  t.equal(a.estimate('x'), 4, 'the fold keeps the read (5 drained 1 s)')
  b.applyDelta(a.takeDelta())
  a.applyDelta(b.takeDelta())
  t.equal(a.estimate('x'), 4, 'a: nothing new was written, so nothing new arrives')
  t.equal(b.estimate('x'), 4, 'b: nothing new was written, so nothing new arrives')
})
