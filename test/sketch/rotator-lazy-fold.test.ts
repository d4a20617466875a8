// The Rotator's bounded fold (spec/rotator.md §1 "Self-sizing", _Early growth by folding_,
// _Cost_): an early growth of more than `foldSliceCells` cells per generation folds lazily
// (`Sketch.foldLazilyFrom`), chunk by chunk: each keyed operation first folds its key's chunks,
// a slice per turn of the event loop sweeps the rest, frames and deltas finish it first. Two
// rotators run the same operations on one driven clock: A folds lazily (slices of 8 cells,
// chunks of 4), B at once (`foldSliceCells = Infinity`: `Sketch.foldFrom`, as before). After
// every operation and slice every cell of every generation of A, read as the fold defines it (a
// chunk not folded yet is the smaller generation's cells j mod M), is B's bit for bit (score and
// time), and so is every answer; both took a delta before the fold (a baseline, which folds
// chunk by chunk with the cells), so the deltas after it, and the frames, are the same bytes.
// A folds at most L chunks in an operation and whole chunks of at most its slice in a turn; B
// folds the deciding generation's 1,024 cells in the one check (the youngest is at the largest
// shape already: an early growth folds one generation at a time, the next once the one before
// has ended, tested below with the memory it holds).
import t, { type Test } from 'tap'
import { Rotator, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { mulberry32 as rng } from '../fixtures/mulberry32.js'

/** What the test reads of a generation (private fields of Sketch). */
interface HeldSketch {
  cells: Float64Array
  cellsPerLevel: number
  lazy: { fromCells: number; shift: number; from: Float64Array; done: Uint8Array; next: number } | undefined
}
const gensOf = (r: Rotator) => (r as unknown as { gens: HeldSketch[] }).gens

/** Cells folded so far in the generations folding (whole chunks, swept or an operation's). */
const foldedCells = (r: Rotator) => {
  let n = 0
  for (const g of gensOf(r)) {
    const f = g.lazy
    if (f === undefined) continue
    for (let c = 0; c < f.done.length; c++) n += f.done[c] << f.shift
  }
  return n
}

/** Fold generation `g` of `r` at once to `cells` now (a rotator with foldSliceCells = Infinity), through its own queue. */
function foldAtOnce(r: Rotator, g: number, cells: number): void {
  const x = r as unknown as { growCells: number; growQueue: number[]; completed: number; foldNextQueued(): boolean }
  x.growCells = cells
  x.growQueue.push(x.completed + g)
  x.foldNextQueued()
}

const L = 4
const make = (clock: FakeClock, ticker: FakeTicker, grow: () => boolean) =>
  new Rotator({
    sketch: { levels: L, decay: linear(1), hi: 10 },
    generations: 2,
    periodMs: 10_000,
    clock,
    ticker,
    seed: 7,
    sizing: { sizeNextGeneration: () => (grow() ? 256 : 64), maxCellsPerLevel: 256, growEarlyWhen: grow },
  })

/**
 * A rotator of [64, 64] holding 200 keys (slices of 64 cells), grown early to 256 by one check a
 * second later: [256 folding, 64 queued]. `grow(ms)` moves the clock and runs a check that
 * wants 256 again.
 */
function growing(t: Test): { clock: FakeClock; ticker: FakeTicker; r: Rotator; grow: (ms: number) => void } {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  let big = false
  const r = make(clock, ticker, () => big)
  t.teardown(() => r.close())
  r.foldSliceCells = 64
  r.rotate()
  r.rotate()
  for (let i = 0; i < 200; i++) r.update(`k${i}`, 1)
  const grow = (ms: number) => {
    big = true
    clock.advance(ms)
    ticker.tick()
    big = false
  }
  grow(1000)
  return { clock, ticker, r, grow }
}

t.test('a lazy fold reads and writes as the fold at once, a bounded share per operation', async (t) => {
  const clock = new FakeClock(0)
  let big = false
  const ta = new FakeTicker()
  const tb = new FakeTicker()
  const a = make(clock, ta, () => big)
  const b = make(clock, tb, () => big)
  t.teardown(() => {
    a.close()
    b.close()
  })
  a.foldSliceCells = 8
  a.foldChunkCells = 4
  b.foldSliceCells = Infinity
  for (const r of [a, b]) {
    r.rotate()
    r.rotate() // [64, 64] (sized by the sizer)
  }
  let compared = 0
  let mismatches = 0
  const fail = (what: string) => {
    if (mismatches++ < 8) t.fail(what)
  }
  const compare = (when: string) => {
    const ga = gensOf(a)
    const gb = gensOf(b)
    for (let k = 0; k < ga.length; k++) {
      const x = ga[k]
      const y = gb[k]
      const M2 = x.cellsPerLevel
      if (M2 !== y.cellsPerLevel)
        return fail(`${when}: generation ${k}: ${M2} cells per level against ${y.cellsPerLevel}`)
      const f = x.lazy
      for (let p = 0; p < L * M2; p++) {
        let score = x.cells[2 * p]
        let time = x.cells[2 * p + 1]
        if (f !== undefined && p >> f.shift >= f.next && f.done[p >> f.shift] === 0) {
          // a chunk not folded yet: the smaller generation's cell j mod M (Sketch.foldFrom's mapping)
          const q = Math.floor(p / M2) * f.fromCells + ((p % M2) % f.fromCells)
          score = f.from[2 * q]
          time = f.from[2 * q + 1]
        }
        compared++
        if (!Object.is(score, y.cells[2 * p]) || !Object.is(time, y.cells[2 * p + 1]))
          fail(
            `${when}: generation ${k} cell ${p}: (${score}, ${time}) lazily, (${y.cells[2 * p]}, ${y.cells[2 * p + 1]}) at once`,
          )
      }
    }
  }
  const random = rng(0x1a2f)
  const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`)
  let maxPerOp = 0
  let opsFolding = 0
  const op = (when: string) => {
    const key = keys[Math.floor(random() * keys.length)]
    const x = random()
    const cost = 1 + Math.floor(random() * 3)
    const before = foldedCells(a)
    const folding = gensOf(a).filter((g) => g.lazy !== undefined).length
    let answers: unknown[]
    if (x < 0.35) answers = [a, b].map((r) => r.tryUpdate(key, cost, 8))
    else if (x < 0.55) answers = [a, b].map((r) => r.consume(key, cost, 8))
    else if (x < 0.7) answers = [a, b].map((r) => r.update(key, cost))
    else if (x < 0.8) answers = [a, b].map((r) => r.updateAndEstimate(key, -1))
    else if (x < 0.9) answers = [a, b].map((r) => r.estimate(key))
    else answers = [a, b].map((r) => r.estimateDetailed(key))
    if (folding > 0) {
      opsFolding++
      // the folds that ended in this operation count all their cells; only those that go on are measured
      if (gensOf(a).filter((g) => g.lazy !== undefined).length === folding) {
        const n = foldedCells(a) - before
        if (n > maxPerOp) maxPerOp = n
      }
    }
    if (JSON.stringify(answers[0]) !== JSON.stringify(answers[1]))
      fail(`${when}: ${key}: ${JSON.stringify(answers[0])} lazily, ${JSON.stringify(answers[1])} at once`)
    compare(when)
  }
  for (let step = 0; step < 60; step++) {
    clock.advance(Math.floor(random() * 100))
    op(`before, step ${step}`)
  }
  // a delta before the fold: both now hold a baseline, which the fold must fold alike
  t.same(a.takeDelta().serializeAt(clock.now(), 0), b.takeDelta().serializeAt(clock.now(), 0), 'the deltas before')
  for (let step = 0; step < 30; step++) {
    clock.advance(Math.floor(random() * 100))
    op(`before, after the delta, step ${step}`)
  }
  big = true
  clock.advance(1000)
  ta.tick() // A grows early: the deciding generation lazily, the youngest once that fold ends
  big = false
  // B, the reference, folds each generation at once when A starts folding it
  foldAtOnce(b, 0, 256)
  t.same(a.generationCellsPerLevel, [256, 64])
  t.same(b.generationCellsPerLevel, [256, 64])
  t.equal(foldedCells(a), 0, 'the check itself folds nothing (lazily)')
  t.ok(gensOf(a)[0].lazy !== undefined, 'the deciding generation folding')
  compare('at the growth')
  let maxPerSlice = 0
  let slices = 0
  let youngestAt = -1
  for (let step = 0; step < 400; step++) {
    clock.advance(Math.floor(random() * 50))
    op(`folding, step ${step}`)
    if (random() < 0.5) {
      const before = foldedCells(a)
      const folding = gensOf(a).findIndex((g) => g.lazy !== undefined)
      a.foldSlice()
      slices++
      if (folding >= 0 && gensOf(a)[folding].lazy !== undefined) {
        const n = foldedCells(a) - before
        if (n > maxPerSlice) maxPerSlice = n
      }
      if (youngestAt < 0 && a.generationCellsPerLevel[1] === 256) {
        youngestAt = step
        t.ok(gensOf(a)[0].lazy === undefined, `step ${step}: the youngest's fold starts once the deciding one's ended`)
        foldAtOnce(b, 1, 256)
      }
      compare(`folding, slice after step ${step}`)
    }
  }
  t.ok(youngestAt > 0, `the youngest's fold started at step ${youngestAt}`)
  t.ok(gensOf(a)[1].lazy !== undefined, 'still folding after 400 operations (the frames below finish it)')
  t.ok(opsFolding >= 400, `${opsFolding} operations during the folds`)
  t.ok(maxPerOp <= L * 4, `at most L chunks of 4 cells in an operation (${maxPerOp})`)
  t.ok(maxPerSlice <= 8 && slices > 20, `at most a slice of 8 cells a turn (${maxPerSlice}, ${slices} slices)`)
  const now = clock.now()
  t.same(a.takeDelta().serializeAt(now, 0), b.takeDelta().serializeAt(now, 0), 'the deltas after the fold: same bytes')
  t.ok(
    gensOf(a).every((g) => g.lazy === undefined),
    'the delta finished the folds',
  )
  t.same(a.serializeAt(now, 0), b.serializeAt(now, 0), 'the frames: same bytes')
  for (let step = 0; step < 30; step++) {
    clock.advance(Math.floor(random() * 100))
    op(`after, step ${step}`)
  }
  t.equal(mismatches, 0, `A as B in every cell and answer (${compared} cells compared)`)
})

t.test(
  'the rotator sweeps a lazy fold a slice per turn of the event loop, one generation after the other',
  async (t) => {
    const clock = new FakeClock(0)
    let big = false
    const ticker = new FakeTicker()
    const r = make(clock, ticker, () => big)
    t.teardown(() => r.close())
    r.foldSliceCells = 64
    r.rotate()
    r.rotate()
    for (let i = 0; i < 200; i++) r.update(`k${i}`, 1)
    big = true
    clock.advance(1000)
    const before = r.estimate('k3')
    ticker.tick()
    big = false
    t.same(r.generationCellsPerLevel, [256, 64], 'the deciding generation first; the youngest waits its turn')
    let turns = 0
    let both = 0
    let youngestAt = -1
    while (gensOf(r).some((g) => g.lazy !== undefined) && turns < 1000) {
      await new Promise((resolve) => setImmediate(resolve))
      turns++
      if (gensOf(r).every((g) => g.lazy !== undefined)) both++
      if (youngestAt < 0 && r.generationCellsPerLevel[1] === 256) youngestAt = turns
    }
    t.equal(both, 0, 'never two generations folding at once')
    // 4 levels × 256 cells at 64 cells a turn: the youngest starts in the turn the deciding one ends
    t.equal(youngestAt, (L * 256) / 64, `the youngest's fold starts at turn ${youngestAt}`)
    t.equal(turns, (2 * L * 256) / 64, `done in ${turns} turns, a slice each`)
    t.same(r.generationCellsPerLevel, [256, 256])
    t.equal(r.estimate('k3'), before, `reads as before the fold (${before})`)

    // closed while folding: no more turns, nothing thrown
    const s = make(clock, new FakeTicker(), () => big)
    s.foldSliceCells = 64
    s.rotate()
    s.rotate()
    big = true
    clock.advance(1000)
    ;(s as unknown as { check(): void }).check()
    big = false
    t.ok(
      gensOf(s).some((g) => g.lazy !== undefined),
      'folding',
    )
    s.close()
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
    t.ok(
      gensOf(s).some((g) => g.lazy !== undefined),
      'a closed rotator sweeps no more',
    )
  },
)

t.test('a caller that never yields: the next check ends a fold a window old and starts the next', async (t) => {
  const { clock, ticker, r } = growing(t)
  t.same(r.generationCellsPerLevel, [256, 64])
  // no turn of the event loop: only the operations' own chunks are folded
  for (let i = 0; i < 50; i++) r.estimate(`k${i}`)
  clock.advance(999)
  ticker.tick()
  t.same(r.generationCellsPerLevel, [256, 64], 'a check less than a window after the growth waits')
  t.ok(gensOf(r)[0].lazy !== undefined, 'the deciding generation still folding')
  clock.advance(1)
  const youngest = gensOf(r)[1] as unknown as { estimate(key: string): number }
  const reads = Array.from({ length: 200 }, (_, i) => youngest.estimate(`k${i}`))
  ticker.tick()
  t.same(r.generationCellsPerLevel, [256, 256], 'a window after: the deciding fold ended, the youngest folding')
  t.ok(gensOf(r)[0].lazy === undefined && gensOf(r)[1].lazy !== undefined)
  const grown = gensOf(r)[1] as unknown as { estimate(key: string): number }
  t.same(
    Array.from({ length: 200 }, (_, i) => grown.estimate(`k${i}`)),
    reads,
    'the youngest reads after its fold started what it read just before (200 keys)',
  )
  clock.advance(1000)
  ticker.tick()
  t.ok(
    gensOf(r).every((g) => g.lazy === undefined),
    'the next window: every fold ended',
  )
})

t.test('a busy event loop that still turns: a check does not end the fold at once', async (t) => {
  // A loaded loop runs a slice per turn but fewer turns a window than the fold has slices (a
  // 2^19 -> 2^21 growth needs 1,024 turns a generation: at 3 ms a turn the window's check found
  // the deciding fold half done and ended it at once, a 54 ms pause, /tmp/h1-fuzz/stall21.ts).
  // Only a fold no turn swept since the last check is a stalled one.
  const { clock, ticker, r } = growing(t)
  t.same(r.generationCellsPerLevel, [256, 64])
  for (let w = 1; w <= 3; w++) {
    clock.advance(1000)
    r.foldSlice() // one turn of the loop in this window
    ticker.tick()
    t.ok(gensOf(r)[0].lazy !== undefined, `window ${w}: the deciding generation still folds, a slice a turn`)
    t.same(r.generationCellsPerLevel, [256, 64], `window ${w}: the youngest waits its turn`)
  }
  // then the turns stop: the next check a window on ends the fold and starts the youngest's
  clock.advance(1000)
  ticker.tick()
  t.same(r.generationCellsPerLevel, [256, 256], 'no turn in a window: the deciding fold ended, the youngest folding')
  t.ok(gensOf(r)[0].lazy === undefined && gensOf(r)[1].lazy !== undefined)
})

t.test(
  'a rotation during the queue: a growth to the size under way still folds the youngest it appended',
  async (t) => {
    // [256 folding, 64 queued]; a rotation retires the folding one and appends a youngest of 64 (the
    // sizer's answer then). A check that grows to 256 again must queue that youngest: it was
    // dropped as "a growth to at most the size already under way", so the youngest stayed at 64
    // after the queue ended, until a later check
    const { r, grow } = growing(t)
    t.same(r.generationCellsPerLevel, [256, 64])
    r.rotate()
    t.same(r.generationCellsPerLevel, [64, 64], 'the queued one decides, a youngest of 64 appended')
    for (let i = 0; i < 200; i++) r.update(`k${i}`, 1)
    grow(500)
    let slices = 0
    while (r.foldSlice() > 0 && slices < 1000) slices++
    t.same(r.generationCellsPerLevel, [256, 256], `both grown once the queue ended (${slices} slices)`)
    const x = r as unknown as { growCells: number }
    t.equal(x.growCells, 0, 'no growth under way')
  },
)

t.test('a rotation of every generation during the queue: no growth left under way', async (t) => {
  // [256 folding, 64 queued]; rotateTo(+2) retires both: nothing of the growth is live, and a check
  // before the next turn that grows to 256 must fold the fresh generations, not be refused as
  // "at most the size already under way"
  const { r, grow } = growing(t)
  t.same(r.generationCellsPerLevel, [256, 64])
  r.rotateTo(r.rotations + 2)
  t.same(r.generationCellsPerLevel, [64, 64])
  for (let i = 0; i < 200; i++) r.update(`k${i}`, 1)
  grow(500)
  t.same(r.generationCellsPerLevel, [256, 64], 'the check grows the deciding generation at once')
})

t.test('an early growth stays within maxBytes: one smaller generation held at a time', async (t) => {
  // budget 2048 + (N + ½) × L × 128 × 16 = 22,528 B: max = 128 cells per level. Both generations
  // sized at max / 2 = 64, then an early growth folds both to 128, lazily (slices of 64 cells),
  // one after the other: while one folds, its view holds the smaller generation's whole cells
  const N = 2
  const maxBytes = 2048 + (N + 0.5) * L * 128 * 16
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  let big = false
  const r = new Rotator({
    sketch: { levels: L, decay: linear(1), hi: 10 },
    generations: N,
    periodMs: 10_000,
    clock,
    ticker,
    seed: 7,
    sizing: { sizeNextGeneration: () => (big ? 128 : 64), maxBytes, growEarlyWhen: () => big },
  })
  t.teardown(() => r.close())
  r.foldSliceCells = 64
  t.equal(r.maxCellsPerLevel, 128)
  t.equal(
    new Rotator({
      sketch: { levels: L, decay: linear(1), hi: 10 },
      generations: N,
      periodMs: 10_000,
      clock,
      ticker: new FakeTicker(),
      sizing: { sizeNextGeneration: () => 64, maxBytes: maxBytes - 1 },
    }).maxCellsPerLevel,
    64,
    'a byte less: the largest shape halves (the half generation a growth holds is in the rule)',
  )
  r.rotate()
  r.rotate()
  t.same(r.generationCellsPerLevel, [64, 64])
  t.equal(r.sizeBytes(), 2048 + N * L * 64 * 16, 'before the growth: the meter and 2 × 4 × 64 cells')
  for (let i = 0; i < 100; i++) r.update(`k${i}`, 1)
  big = true
  clock.advance(1000)
  ticker.tick()
  big = false
  t.same(r.generationCellsPerLevel, [128, 64])
  t.equal(
    r.sizeBytes(),
    2048 + L * (128 + 64 + 64) * 16,
    'the deciding one folding: L × (M′ + M) × 16 B, the youngest L × M × 16',
  )
  let peak = r.sizeBytes()
  let slices = 0
  let left = 1
  while (left > 0 && slices < 100) {
    for (let i = 0; i < 10; i++) r.update(`k${i}`, 1)
    left = r.foldSlice()
    slices++
    const bytes = r.sizeBytes()
    if (bytes > peak) peak = bytes
    t.ok(bytes <= maxBytes, `slice ${slices}: ${bytes} ≤ ${maxBytes}`)
    t.ok(gensOf(r).filter((g) => g.lazy !== undefined).length <= 1, `slice ${slices}: one generation folding at most`)
  }
  t.equal(
    peak,
    maxBytes,
    `the peak, while the youngest folds, is the budget: 2048 + L × (128 + 128 + 64) × 16 = ${peak}`,
  )
  t.equal(left, 0, `the folds ended (${slices} slices)`)
  t.same(r.generationCellsPerLevel, [128, 128])
  t.equal(r.sizeBytes(), 2048 + N * L * 128 * 16, 'after the folds: L × M′ × 16 B each')
})

t.test('rotations during a growth: a retired generation leaves the queue, the rest goes on', async (t) => {
  const clock = new FakeClock(0)
  let big = false
  const r = make(clock, new FakeTicker(), () => big)
  t.teardown(() => r.close())
  r.foldSliceCells = 64
  r.rotate()
  r.rotate()
  for (let i = 0; i < 200; i++) r.update(`k${i}`, 1)
  big = true
  clock.advance(1000)
  ;(r as unknown as { check(): void }).check()
  t.same(r.generationCellsPerLevel, [256, 64], 'the deciding one folding, the youngest queued')
  const internals = r as unknown as { growCells: number; growQueue: number[] }
  // one rotation retires the folding generation: the youngest, now deciding, is still queued
  r.rotate()
  t.equal(internals.growQueue.length, 1, 'the youngest still queued')
  t.equal(r.generationCellsPerLevel[0], 64)
  t.ok(r.foldSlice() > 0, 'the next slice starts its fold')
  t.equal(r.generationCellsPerLevel[0], 256, 'the one queued folds, now deciding')
  big = false
  // a growth then N rotations at once: nothing it queued is live, the growth is over
  const s = make(clock, new FakeTicker(), () => big)
  t.teardown(() => s.close())
  s.foldSliceCells = 64
  s.rotate()
  s.rotate()
  big = true
  clock.advance(1000)
  ;(s as unknown as { check(): void }).check()
  big = false
  const si = s as unknown as { growCells: number; growQueue: number[]; checkAtCost: number }
  t.equal(si.growCells, 256)
  s.rotate()
  s.rotate()
  t.same(s.generationCellsPerLevel, [64, 64], 'every generation replaced at the sizer’s size')
  t.same([si.growCells, si.growQueue.length], [0, 0], 'the growth is over')
  t.equal(
    si.checkAtCost,
    (64 * 1 * 1000) / 1000,
    'the write-triggered check measures the youngest again (64 cells × rate × 1 s)',
  )
})
