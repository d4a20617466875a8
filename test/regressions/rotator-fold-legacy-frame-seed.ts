// Found reviewing d4cde46 (early growth folds the live generations in place): the fold builds
// the larger generation with freshGeneration(index, cells) and copies the cells into it,
// which keeps every read only when the new generation places keys as the old one did (same
// seed and hasher: Sketch.foldFrom's "The caller guarantees the same seed and hasher"). A
// rotator restored from a frame without a master seed and without the keyed-mix placement
// (flags 0: written by a release before it, spec/rotator.md §1 "Placement") keeps hashing
// each key under each generation's own seed, and freshGeneration gives such a rotator a
// random seed. So `Rotator.deserialize(frame, { sizing })` followed by an early growth moves
// every key to unrelated cells: its debt is forgiven (amnesty) and it reads other keys'.
// Here 50 keys (debts 1 … 7, and 10) on 64 cells per level, one growth to 1,024 one second
// later: every key must read at least its debt less 1 s of drain. Before a fix: 42 and 49 of 50
// in two runs (the seed is random) read below it, most 0. A frame with a master seed (flag bit 1) derives the same
// seed again and holds (the control below).
import t from 'tap'
import { Rotator, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { crc32c } from '../../src/format/crc32c.js'

const WALL = 1_750_000_000_000

/** A frame as a release before the keyed-mix placement wrote it: flags 0 or 2 (seeded). */
function legacyFrame(clock: FakeClock, seeded: boolean): Uint8Array {
  const src = new Rotator({
    sketch: { levels: 4, cellsPerLevel: 64, decay: linear(1), hi: 10 },
    generations: 2,
    periodMs: 10_000,
    clock,
    ticker: new FakeTicker(),
    seed: 7,
  })
  const bytes = src.serializeAt(0, WALL)
  src.close()
  // header: flags u16 at 6 (bit 1 seeded, bit 3 keyed-mix placement), seed field at 12..27
  bytes[6] = seeded ? 2 : 0
  if (!seeded) bytes.fill(0, 12, 28)
  new DataView(bytes.buffer, bytes.byteOffset).setUint32(bytes.length - 4, crc32c(bytes, 0, bytes.length - 4), true)
  return bytes
}

for (const seeded of [false, true]) {
  t.test(
    `a restored ${seeded ? 'seeded' : 'unseeded'} pre-keyed-mix frame folds without forgiving any debt`,
    async (t) => {
      const clock = new FakeClock(0)
      const ticker = new FakeTicker()
      let big = false
      const r = Rotator.deserialize(legacyFrame(clock, seeded), {
        clock,
        wallMs: WALL,
        ticker,
        sizing: { sizeNextGeneration: () => (big ? 1024 : 64), maxCellsPerLevel: 1024, growEarlyWhen: () => big },
      })
      t.teardown(() => r.close())
      t.same(r.generationCellsPerLevel, [64, 64])
      const keys = Array.from({ length: 50 }, (_, i) => `k${i}`)
      const debt = keys.map((_, i) => (i === 9 ? 10 : 1 + (i % 7)))
      keys.forEach((k, i) => r.update(k, debt[i]))
      big = true
      clock.set(1000)
      ticker.tick() // early growth: both generations folded into 1,024 cells per level
      big = false
      t.same(r.generationCellsPerLevel, [1024, 1024])
      const below = keys.filter((k, i) => r.estimate(k) < debt[i] - 1 - 1e-9)
      t.same(below, [], 'no key reads below its own debt drained 1 s')
    },
  )
}
