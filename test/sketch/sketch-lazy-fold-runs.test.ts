// Sketch.foldLazilyFrom against Sketch.foldFrom, cell by cell (spec/rotator.md §1, _Early growth
// by folding_): random interleavings of an operation's chunk (`foldChunkOf`, a plain loop) and the
// sweep (`foldSome`, a copy per run of unfolded chunks whose sources follow each other, native or
// by a loop, breaking where j mod M wraps, and across a level boundary when the sources are contiguous
// there), with odd budgets, at L = 1…5, M = 1…64, M′ = M, 2M, 3M, 4M, 8M, chunks of 1…256, with
// and without a delta baseline. After each step every folded chunk is the fold at once's bit for
// bit; at the end every cell, and the delta (which reads the baseline); the subclass hook
// `foldedChunk(fromCell, toCell, cells)` sees every cell once, each from level·M + (j mod M).
import t from 'tap'
import { Sketch, linear } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'
import { mulberry32 as rng } from '../fixtures/mulberry32.js'

interface Held {
  cells: Float64Array
  lazy: { shift: number; done: Uint8Array; next: number } | undefined
}
const held = (s: Sketch) => s as unknown as Held

const calls: { from: number; to: number; cells: number }[] = []
class Hooked extends Sketch {
  protected override foldedChunk(fromCell: number, toCell: number, cells: number): void {
    calls.push({ from: fromCell, to: toCell, cells })
  }
}

/** A smaller sketch whose every cell (and baseline cell) differs, so a wrong source shows. */
function smallerOf(opts: object, M: number, L: number, withBase: boolean): Sketch {
  const s = new Sketch({ ...opts, cellsPerLevel: M })
  const c = held(s).cells
  for (let p = 0; p < L * M; p++) {
    c[2 * p] = 1000 + 3 * p + 1
    c[2 * p + 1] = 500 + p
  }
  if (withBase) {
    s.markSynced()
    for (let p = 0; p < L * M; p++) {
      c[2 * p] = 5000 + 7 * p
      c[2 * p + 1] = 600 + p
    }
  }
  return s
}

t.test('a lazy fold, swept in runs and folded by operations, is the fold at once', async (t) => {
  let bad = 0
  for (let seed = 1; seed <= 600 && bad === 0; seed++) {
    const r = rng(seed)
    const L = [1, 2, 3, 5][Math.floor(r() * 4)]
    const M = [1, 2, 4, 8, 16, 32, 64][Math.floor(r() * 7)]
    const M2 = M * [1, 2, 3, 4, 8][Math.floor(r() * 5)]
    const chunkAsk = [1, 2, 4, 8, 16, 256][Math.floor(r() * 6)]
    const withBase = r() < 0.5
    const clock = new FakeClock(1000)
    const opts = { levels: L, decay: linear(1), hi: 1e9, clock, seed: 7 }
    const sa = smallerOf(opts, M, L, withBase)
    const sb = smallerOf(opts, M, L, withBase)
    const a = new Hooked({ ...opts, cellsPerLevel: M2, hasher: sa.hasher })
    const b = new Sketch({ ...opts, cellsPerLevel: M2, hasher: sb.hasher })
    b.foldFrom(sb)
    calls.length = 0
    a.foldLazilyFrom(sa, chunkAsk)
    const shift = held(a).lazy!.shift
    const ca = held(a).cells
    const cb = held(b).cells
    const n = L * M2
    const what = `seed ${seed}: L ${L}, M ${M} → ${M2}, chunk ${1 << shift}, baseline ${withBase}`
    while (a.folding && bad === 0) {
      if (r() < 0.5) a.foldChunkOf(Math.floor(r() * n))
      // the sweep both ways: a native copy per run (a turn's) and the allocation-free loop (a call's)
      else a.foldSome(Math.floor(r() * 3 * (1 << shift)) + (r() < 0.2 ? 0 : 1), r() < 0.5)
      const f = held(a).lazy
      for (let p = 0; p < n; p++) {
        const c = p >>> shift
        if (f !== undefined && c >= f.next && f.done[c] === 0) continue
        if (ca[2 * p] !== cb[2 * p] || ca[2 * p + 1] !== cb[2 * p + 1]) {
          bad++
          t.fail(
            `${what}: cell ${p} reads ${ca[2 * p]}@${ca[2 * p + 1]}, the fold at once ${cb[2 * p]}@${cb[2 * p + 1]}`,
          )
          break
        }
      }
    }
    const seen = new Uint8Array(n)
    for (const c of calls)
      for (let q = 0; q < c.cells; q++) {
        const p = c.to + q
        const level = Math.floor(p / M2)
        const want = level * M + ((p - level * M2) % M)
        if (c.from + q !== want || seen[p] !== 0) {
          bad++
          t.fail(`${what}: the hook gives cell ${p} from ${c.from + q} (want ${want}), seen ${seen[p]}`)
        }
        seen[p] = 1
      }
    if (seen.indexOf(0) !== -1) {
      bad++
      t.fail(`${what}: the hook never saw cell ${seen.indexOf(0)}`)
    }
    const da = a.takeDelta()
    const db = b.takeDelta()
    if (da.scores.join() !== db.scores.join() || da.touched.join() !== db.touched.join()) {
      bad++
      t.fail(`${what}: the deltas differ (the baseline folded otherwise)`)
    }
  }
  t.equal(bad, 0, '600 random folds, every cell, the hook and the baseline as the fold at once')
})
