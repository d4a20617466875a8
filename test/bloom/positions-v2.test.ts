// The bit positions of frame version 2 (spec/bloom.md §3), checked against the spec's
// definition written out here in exact BigInt arithmetic: the distinct-position stream for
// m ≤ 2^20 and enhanced double hashing in its closed form x_0 + i·y_0 + (i³ − i)/6 (mod m)
// above, which the filter computes incrementally.
import t from 'tap'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'
import { DISTINCT_MAX_BITS, bloomPositionsV2 } from '../../src/bloom/positions.js'
import { mulberry32Uint32 } from '../fixtures/mulberry32.js'

const U32 = 0xffffffffn

function fmix32(h: bigint): bigint {
  h ^= h >> 16n
  h = (h * 0x85ebca6bn) & U32
  h ^= h >> 13n
  h = (h * 0xc2b2ae35n) & U32
  h ^= h >> 16n
  return h
}

/** The spec's positions of version 2, as a list (distinct for m ≤ 2^20). */
function reference(hi: number, lo: number, k: number, m: number): number[] {
  const H = (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)
  const M = BigInt(m)
  if (m <= 2 ** 20) {
    const key = fmix32(BigInt(hi >>> 0))
    const out: number[] = []
    for (let j = 1n; out.length < Math.min(k, m); j++) {
      const word = fmix32(((BigInt(lo >>> 0) + j * 0x9e3779b9n) & U32) ^ key)
      const pos = Number((word * M) >> 32n)
      if (!out.includes(pos)) out.push(pos)
    }
    return out
  }
  const swapped = (BigInt(lo >>> 0) << 32n) | BigInt(hi >>> 0)
  const x0 = (H * M) >> 64n
  const y0 = (swapped * M) >> 64n
  const out: number[] = []
  for (let i = 0n; i < BigInt(k); i++) out.push(Number((x0 + i * y0 + (i * i * i - i) / 6n) % M))
  return out
}

t.test('bloomPositionsV2 equals the definition, on both sides of 2^20 bits', async (t) => {
  const rnd = mulberry32Uint32(7)
  const out = new Float64Array(1024)
  let bad = 0
  let cases = 0
  for (const m of [1, 2, 3, 7, 44, 1000, 9586, DISTINCT_MAX_BITS, DISTINCT_MAX_BITS + 1, 3 * 2 ** 30 + 5, 2 ** 36]) {
    for (const k of [1, 3, 7, 30, 100]) {
      for (let c = 0; c < 30; c++) {
        const hi = c === 0 ? 0 : rnd()
        const lo = c === 0 ? 0 : rnd()
        const got = Array.from(out.subarray(0, bloomPositionsV2(hi, lo, k, m, out)))
        cases++
        if (JSON.stringify(got) !== JSON.stringify(reference(hi, lo, k, m))) bad++
      }
    }
  }
  t.equal(bad, 0, `${cases} cases`)
})

t.test("a filter's bits are exactly the reference positions of its items (every loop)", async (t) => {
  const rnd = mulberry32Uint32(11)
  for (const [bits, hashes] of [
    [44, 30],
    [10, 7],
    [5, 9], // k > m: every bit
    [9586, 7],
    [DISTINCT_MAX_BITS, 20],
    [DISTINCT_MAX_BITS + 1, 20],
    [5_000_011, 13],
  ]) {
    const f = BloomFilter.bySize({ bits, hashes, seed: 1 })
    const want = new Set<number>()
    const items: Array<[number, number]> = []
    for (let i = 0; i < 3; i++) {
      const hi = rnd()
      const lo = rnd()
      items.push([hi, lo])
      const fresh = f.addHashed(hi, lo)
      const pos = reference(hi, lo, hashes, bits)
      t.equal(pos.length, Math.min(hashes, bits <= 2 ** 20 ? bits : hashes))
      const grew = pos.some((p) => !want.has(p))
      for (const p of pos) want.add(p)
      t.equal(fresh, grew, `m ${bits}: add says whether a bit went 0 → 1`)
    }
    t.equal(f.setBitCount, want.size, `m ${bits}: exactly the reference bits are set`)
    for (const p of want) if (!f.isBitSet(p)) t.fail(`m ${bits}: bit ${p} not set`)
    for (const [hi, lo] of items) t.ok(f.mightContainHashed(hi, lo), `m ${bits}: members are found`)
    // a non-member is reported iff all its reference positions are set
    for (let q = 0; q < 200; q++) {
      const hi = rnd()
      const lo = rnd()
      const all = reference(hi, lo, hashes, bits).every((p) => want.has(p))
      if (f.mightContainHashed(hi, lo) !== all) t.fail(`m ${bits}: query ${hi},${lo}`)
    }
  }
})

t.test('small filters: each item sets min(k, m) distinct bits', async (t) => {
  const rnd = mulberry32Uint32(3)
  for (const [bits, hashes] of [
    [44, 30],
    [29, 20],
    [15, 10],
    [8, 8],
  ]) {
    for (let i = 0; i < 50; i++) {
      const f = BloomFilter.bySize({ bits, hashes, seed: 1 })
      f.addHashed(rnd(), rnd())
      if (f.setBitCount !== Math.min(bits, hashes)) t.fail(`m ${bits}, k ${hashes}: ${f.setBitCount} bits`)
    }
  }
  t.pass('one item, k distinct bits')
})
