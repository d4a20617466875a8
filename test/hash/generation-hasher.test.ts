import t from 'tap'
import { GenerationHasher } from '../../src/hash/hasher.js'
import { kmIndexes } from '../../src/hash/indexes.js'
import { generationSeed, keyHashFor } from '../../src/sketch/generation-seed.js'
import { murmur3 } from '../../src/hash/hasher.js'

// Two keys that share a cell in generation A must share one in generation B with the
// chance 1/M of independent placements (spec/rotator.md, "Placement"). Counted over all
// pairs colliding in A, checked against 1/M with a 5σ binomial bound.
t.test('a collision in one generation does not predict one in the next (per level, ≈ 1/M)', async (t) => {
  const master = new Uint8Array(16).fill(7)
  const keys = keyHashFor(murmur3(0), master)
  const a = new GenerationHasher(keys, generationSeed(master, 0))
  const b = new GenerationHasher(keys, generationSeed(master, 1))
  const M = 64
  const L = 3
  const N = 4000
  const ia: Uint32Array[] = []
  const ib: Uint32Array[] = []
  for (let i = 0; i < N; i++) {
    const k = `10.0.${i >> 8}.${i & 255}`
    const x = new Uint32Array(L)
    const y = new Uint32Array(L)
    a.hashKey(k)
    kmIndexes(a.hashHi, a.hashLo, L, M, x)
    b.hashKey(k)
    kmIndexes(b.hashHi, b.hashLo, L, M, y)
    ia.push(x)
    ib.push(y)
  }
  for (let level = 0; level < L; level++) {
    let n = 0
    let both = 0
    for (let i = 0; i < N; i++)
      for (let j = i + 1; j < N; j++) {
        if (ia[i][level] !== ia[j][level]) continue
        n++
        if (ib[i][level] === ib[j][level]) both++
      }
    const p = 1 / M
    const sigma = Math.sqrt(n * p * (1 - p))
    t.ok(
      Math.abs(both - n * p) <= 5 * sigma,
      `level ${level}: ${both} of ${n} A-collisions collide in B (expected ${(n * p).toFixed(0)} ± ${(5 * sigma).toFixed(0)})`,
    )
  }
})

t.test('a step ≡ 0 (mod M) is replaced by 1: no key gets one column at every level', async (t) => {
  const out = new Uint32Array(4)
  kmIndexes(9, 5, 4, 3, out) // h2 = 9 | 1 = 9 ≡ 0 (mod 3)
  t.same([...out], [2, 0, 1, 2], 'columns h1 + i mod 3')
})
