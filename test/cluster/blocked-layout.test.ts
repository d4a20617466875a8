// The exact layout's placement (spec/cluster.md, "Storage layout"), measured against its stated
// collision probabilities: for two keys with independent uniform 64-bit hashes, level i
// collides with probability 1/(B·W) (as a row of B·W cells would), and all L levels collide
// together with probability (1/B)·W^−L (same block, then independent offsets) — not the
// 1/(B·W) · 2/W of double hashing inside a block.
import t from 'tap'
import { blockFoldable, blockShape, blockedIndexes } from '../../src/cluster/fleet-hash.js'
import { mulberry32Uint32 } from '../fixtures/mulberry32.js'

t.test('blockShape: W = min(8, cells), B = ceil(cells / W)', async (t) => {
  t.same(blockShape(4096), { blockCells: 8, blocks: 512 })
  t.same(blockShape(40), { blockCells: 8, blocks: 5 })
  t.same(blockShape(5), { blockCells: 5, blocks: 1 })
  t.same(blockShape(1), { blockCells: 1, blocks: 1 })
})

t.test('collision probabilities of the blocked placement', async (t) => {
  const next = mulberry32Uint32(0xc0ffee)
  const L = 3
  const W = 4
  const B = 4
  const PAIRS = 400_000
  const a = new Uint32Array(L + 1)
  const b = new Uint32Array(L + 1)
  const perLevel = new Array<number>(L).fill(0)
  let all = 0
  for (let n = 0; n < PAIRS; n++) {
    blockedIndexes(next(), next(), L, W, B, a)
    blockedIndexes(next(), next(), L, W, B, b)
    let every = a[0] === b[0]
    for (let i = 0; i < L; i++) {
      const hit = a[0] === b[0] && a[1 + i] === b[1 + i]
      if (hit) perLevel[i]++
      every &&= hit
    }
    if (every) all++
  }
  const pLevel = 1 / (B * W)
  for (let i = 0; i < L; i++) {
    const got = perLevel[i] / PAIRS
    t.ok(Math.abs(got - pLevel) < 0.1 * pLevel, `level ${i}: ${got.toFixed(5)} ≈ 1/(B·W) = ${pLevel.toFixed(5)}`)
  }
  const pAll = (1 / B) * W ** -L
  const got = all / PAIRS
  // 400 000 pairs × 1/256 ≈ 1560 expected: 10% is over 3 standard deviations
  t.ok(
    Math.abs(got - pAll) < 0.1 * pAll,
    `all ${L} levels: ${got.toExponential(3)} ≈ (1/B)·W^−L = ${pAll.toExponential(3)}`,
  )
  t.ok(got < 0.5 * (1 / (B * W)) * (2 / W), 'well below double hashing inside a block, (1/(B·W))·2/W')
})

t.test('offsets are in range, blocks too, for any hash words', async (t) => {
  const out = new Uint32Array(6)
  for (const [hi, lo] of [
    [0, 0],
    [-1, -1],
    [0x7fffffff, -0x80000000],
  ]) {
    blockedIndexes(hi, lo, 5, 8, 3, out)
    t.ok(out[0] < 3 && [...out.subarray(1)].every((o) => o < 8), `hash ${hi}/${lo}: block ${out[0]}, offsets in [0, 8)`)
  }
})

// spec/cluster.md "Early growth", _The fold_: a folding twin's slot string is its base's
// repeated B′/B times, so cell (block b′, level i, offset o) of the twin holds the base's cell
// (block b′ mod B, level i, offset o). That reads every key as the base does exactly when its
// block in the twin reduces mod B to its block in the base and its offsets are the same.
t.test("the fold: a key's cells in a folding twin are its base's cells, repeated", async (t) => {
  const L = 4
  const next = mulberry32Uint32(0x5eed)
  // [slot cells of the base, of the twin]: M = 128, 512, 4096 over S = 1 or 16, and 8 → 256
  for (const [m, m2] of [
    [128, 512],
    [8, 256],
    [16, 4096],
    [128, 128],
  ]) {
    const a = blockShape(m)
    const b = blockShape(m2)
    t.ok(
      blockFoldable(m, m2),
      `${m} → ${m2} cells per level per slot folds (W ${a.blockCells} = ${b.blockCells}, B ${a.blocks} | ${b.blocks})`,
    )
    const base = new Uint32Array(L + 1)
    const twin = new Uint32Array(L + 1)
    let same = 0
    const KEYS = 20_000
    for (let k = 0; k < KEYS; k++) {
      const hi = next() | 0
      const lo = next() | 0
      blockedIndexes(hi, lo, L, a.blockCells, a.blocks, base)
      blockedIndexes(hi, lo, L, b.blockCells, b.blocks, twin)
      // the byte offset of each of its cells in the twin's string, reduced to the base's string
      // (the repetition's period, B·L·W·16 bytes), is its cell's offset in the base's string
      let ok = true
      for (let i = 0; i < L; i++) {
        const inTwin = ((twin[0] * L + i) * b.blockCells + twin[1 + i]) * 16
        const inBase = ((base[0] * L + i) * a.blockCells + base[1 + i]) * 16
        ok &&= inTwin % (a.blocks * L * a.blockCells * 16) === inBase
      }
      if (ok) same++
    }
    t.equal(same, KEYS, `every one of ${KEYS} random keys reads in the twin the base's cells`)
  }
  // not foldable: W < 8 grows with M (offsets mod W change), B not a divisor (S = 3)
  for (const [m, m2, why] of [
    [4, 16, 'W 4 → 8'],
    [43, 171, 'S = 3: 128 and 512 cells, B 6 → 22'],
    [1, 8, 'W 1 → 8'],
  ] as const) {
    t.notOk(blockFoldable(m, m2), `${m} → ${m2} does not fold (${why})`)
    const a = blockShape(m)
    const b = blockShape(m2)
    const base = new Uint32Array(L + 1)
    const twin = new Uint32Array(L + 1)
    let moved = 0
    for (let k = 0; k < 2000; k++) {
      const hi = next() | 0
      const lo = next() | 0
      blockedIndexes(hi, lo, L, a.blockCells, a.blocks, base)
      blockedIndexes(hi, lo, L, b.blockCells, b.blocks, twin)
      const inTwin = (twin[0] * L * b.blockCells + twin[1]) * 16
      const inBase = (base[0] * L * a.blockCells + base[1]) * 16
      if (inTwin % (a.blocks * L * a.blockCells * 16) !== inBase) moved++
    }
    t.ok(moved > 200, `and a repetition would misplace keys there (${moved} of 2000 at level 0)`)
  }
})
