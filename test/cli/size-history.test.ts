// grudge replay's "sizes over time" (issue #14 item 5): a point at the start, one per rotation
// and, since early growth, one per early growth (a load jump that grew the generations before
// the rotation; in process by folding every smaller live one), marked `early`.
import t from 'tap'
import { SizeHistory, type SizeModel } from '../../src/cli/size-history.js'
import type { GenerationShapes, ScoreStore } from '../../src/limit/store.js'

/** A store whose generationShapes() returns what the test sets. */
function stubStore(shapes: { current: GenerationShapes }): ScoreStore {
  return { generationShapes: () => shapes.current } as unknown as ScoreStore
}

// ρ = perSecond / M and a rate of ρ / 10: enough to see which shape each point was taken on
const model: SizeModel = {
  loadFactor: (m, perSecond) => perSecond / m,
  predict: (m, perSecond) => perSecond / m / 10,
}

t.test('a point at the start, at an early growth (marked) and at a rotation', async (t) => {
  const shapes = {
    current: { generationCellsPerLevel: [128, 128], resizes: 0, rotations: 0, earlyGrowths: 0 } as GenerationShapes,
  }
  const h = new SizeHistory(stubStore(shapes), model, 0)
  h.admitted(1_000)
  h.check(1_000) // nothing changed: no point
  t.equal(h.points.length, 1, 'only the start')
  // a load jump: both generations folded into a larger shape, no rotation
  shapes.current = { generationCellsPerLevel: [512, 512], resizes: 1, rotations: 0, earlyGrowths: 1 }
  h.check(2_000)
  t.equal(h.points.length, 2, 'a point at the early growth')
  t.match(h.points[1], { atMs: 2_000, rotation: 0, early: true, cellsPerLevel: [512, 512], loadPerSecond: 500 })
  // ρ of the deciding (oldest) generation, folded to 512 cells, at 500/s
  t.equal(h.points[1].loadFactor, 500 / 512)
  h.check(2_500)
  t.equal(h.points.length, 2, 'the same early growth is not counted twice')
  // the rotation: the folded youngest now decides, the appended one sized at the load
  shapes.current = { generationCellsPerLevel: [512, 256], resizes: 2, rotations: 1, earlyGrowths: 1 }
  h.check(4_000)
  t.equal(h.points.length, 3)
  t.notOk('early' in h.points[2], 'a rotation point is not marked early')
  t.match(h.points[2], { rotation: 1, cellsPerLevel: [512, 256] })
  t.notOk('early' in h.points[0], 'nor the start')
})

t.test('the window measures B: admitted amount and distinct keys decided since the point before', async (t) => {
  const shapes = {
    current: { generationCellsPerLevel: [128, 128], resizes: 0, rotations: 0, earlyGrowths: 0 } as GenerationShapes,
  }
  const windows: { amount: number; distinctKeys: number }[] = []
  const h = new SizeHistory(
    stubStore(shapes),
    { loadFactor: (m, perSecond) => perSecond / m, predict: (m, perSecond, hot, window) => (windows.push(window), 0) },
    0,
  )
  t.same(windows, [{ amount: 0, distinctKeys: 0 }], 'the start: nothing measured')
  // two keys, 3 requests each (one refused), plus a key seen twice
  for (const k of ['a', 'a', 'a', 'b', 'b', 'b', 'c', 'c']) h.seen(k)
  h.admitted(7)
  shapes.current = { generationCellsPerLevel: [128, 128], resizes: 0, rotations: 1, earlyGrowths: 0 }
  h.check(10_000)
  t.same(windows[1], { amount: 7, distinctKeys: 3 }, 'the window of the rotation')
  // the next window starts empty
  h.seen('d')
  h.admitted(1)
  shapes.current = { generationCellsPerLevel: [128, 128], resizes: 0, rotations: 2, earlyGrowths: 0 }
  h.check(20_000)
  t.same(windows[2], { amount: 1, distinctKeys: 1 })
})
