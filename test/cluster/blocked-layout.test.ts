// The exact layout's placement (spec/cluster.md, "Storage layout"), measured against its stated
// collision probabilities: for two keys with independent uniform 64-bit hashes, level i
// collides with probability 1/(B·W) (as a row of B·W cells would), and all L levels collide
// together with probability (1/B)·W^−L (same block, then independent offsets) — not the
// 1/(B·W) · 2/W of double hashing inside a block.
import t from 'tap'
import { blockShape, blockedIndexes } from '../../src/cluster/fleet-hash.js'
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
