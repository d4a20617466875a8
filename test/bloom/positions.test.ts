import t from 'tap'
import { bloomPositions, bloomPositionsV2, mulHi, MAX_BITS } from '../../src/bloom/positions.js'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'
import { mulberry32Uint32 } from '../fixtures/mulberry32.js'

// Reference: the spec's definition in exact integer arithmetic (BigInt):
// H = hi·2^32 + lo, B = (lo | 1)·2^32 + (hi | 1), x_i = (H + i·B) mod 2^64, pos_i = floor(x_i · m / 2^64)
function reference(hi: number, lo: number, k: number, m: number): number[] {
  const M64 = (1n << 64n) - 1n
  const H = (BigInt(hi >>> 0) << 32n) | BigInt(lo >>> 0)
  const B = (BigInt((lo | 1) >>> 0) << 32n) | BigInt((hi | 1) >>> 0)
  const out: number[] = []
  for (let i = 0n; i < BigInt(k); i++) out.push(Number((((H + i * B) & M64) * BigInt(m)) >> 64n))
  return out
}

t.test('positions equal the exact integer definition for sizes around 2^31, 2^32 and up to 2^36', async (t) => {
  const rnd = mulberry32Uint32(42)
  const sizes = [
    1,
    2,
    3,
    31,
    9586,
    2 ** 31 - 1,
    2 ** 31,
    2 ** 31 + 1,
    2 ** 32 - 1,
    2 ** 32,
    2 ** 32 + 3,
    3 * 2 ** 31,
    2 ** 33 + 7,
    2 ** 36 - 1,
    MAX_BITS,
  ]
  const out = new Float64Array(16)
  let mismatches = 0
  for (const m of sizes) {
    const cases: Array<[number, number]> = [
      [0, 0],
      [0xffffffff, 0xffffffff],
      [0x80000000, 0],
      [0, 0x80000000],
    ]
    for (let j = 0; j < 300; j++) cases.push([rnd(), rnd()])
    for (const [hi, lo] of cases) {
      bloomPositions(hi | 0, lo | 0, 16, m, out)
      const ref = reference(hi, lo, 16, m)
      for (let i = 0; i < 16; i++) {
        if (out[i] !== ref[i] || !(out[i] >= 0 && out[i] < m)) mismatches++
      }
    }
  }
  t.equal(mismatches, 0)
  t.equal(mulHi(0xffffffff, 0xffffffff, MAX_BITS), MAX_BITS - 1, 'largest x maps to the last bit')
})

t.test('above 2^32 bits every region is reached (no 32-bit index truncation)', async (t) => {
  const rnd = mulberry32Uint32(7)
  const out = new Float64Array(8)
  const m = 3 * 2 ** 31 // 1.5 × 2^32
  const n = 40_000
  let high = 0
  for (let j = 0; j < n; j++) {
    bloomPositions(rnd(), rnd(), 8, m, out)
    for (let i = 0; i < 8; i++) if (out[i] >= 2 ** 32) high++
  }
  // expected fraction 1/3; binomial σ over 320 000 draws ≈ 0.00083 → ±6σ ≈ 0.005
  const frac = high / (n * 8)
  t.ok(Math.abs(frac - 1 / 3) < 0.005, `fraction above 2^32: ${frac}`)
  // eight equal slices of 2^33 + 7 bits each get 1/8
  const m2 = 2 ** 33 + 7
  const slices = new Array(8).fill(0)
  for (let j = 0; j < n; j++) {
    bloomPositions(rnd(), rnd(), 8, m2, out)
    for (let i = 0; i < 8; i++) slices[Math.floor((out[i] * 8) / m2)]++
  }
  // each slice: p = 1/8, σ ≈ sqrt(320000·1/8·7/8) ≈ 187 → ±6σ ≈ 1120 around 40 000
  for (const c of slices) t.ok(Math.abs(c - 40_000) < 1120, `slice count ${c}`)
})

t.test('no modulo bias where 32-bit "h mod m" doubles the low third', async (t) => {
  // m = 0.75 · 2^32: h mod m maps [0, 2^30) twice, giving it mass 1/2 instead of 1/3
  const m = 3 * 2 ** 30
  const rnd = mulberry32Uint32(9)
  const out = new Float64Array(4)
  let low = 0
  const n = 50_000
  for (let j = 0; j < n; j++) {
    bloomPositions(rnd(), rnd(), 4, m, out)
    for (let i = 0; i < 4; i++) if (out[i] < 2 ** 30) low++
  }
  const frac = low / (n * 4)
  // σ ≈ sqrt(200000·(1/3)(2/3)) / 200000 ≈ 0.00105 → ±6σ
  t.ok(Math.abs(frac - 1 / 3) < 0.0064, `fraction in the low third: ${frac}`)
})

t.test('a real filter of 2^32 + 2^29 + 5 bits sets bits above 2^32 and not their 32-bit aliases', async (t) => {
  // 576 MiB of virtual memory, touched only where bits are set
  const bits = 2 ** 32 + 2 ** 29 + 5
  let f: BloomFilter
  try {
    f = BloomFilter.bySize({ bits, hashes: 3, seed: 5 })
  } catch (err) {
    t.comment(`skipped: cannot allocate 576 MiB here: ${(err as Error).message}`)
    return
  }
  t.equal(f.sizeBytes(), Math.ceil(bits / 32) * 4)
  const out = new Float64Array(3)
  let above = 0
  let unset = 0
  let aliasSet = 0
  for (let i = 0; i < 2000; i++) {
    const key = `member-${i}`
    f.add(key)
    const h = f.hasher.hash(key)
    bloomPositionsV2(Number(h >> 32n) | 0, Number(h & 0xffffffffn) | 0, 3, bits, out)
    for (let j = 0; j < 3; j++) {
      if (!f.isBitSet(out[j])) unset++
      if (out[j] >= 2 ** 32) {
        above++
        // the alias a truncating (>>> 0) index would have used; with ≤ 6000 bits set among
        // ~2^32 the chance that it is set by another member is ~1.4e-6 per check
        if (f.isBitSet(out[j] - 2 ** 32)) aliasSet++
      }
    }
  }
  t.equal(unset, 0, 'every computed position is set')
  t.equal(aliasSet, 0, 'no alias below 2^32 is set')
  // expected 6000 · 2^29 / bits ≈ 667
  t.ok(above > 500, `positions above 2^32: ${above}`)
  let lost = 0
  for (let i = 0; i < 2000; i++) if (!f.mightContain(`member-${i}`)) lost++
  t.equal(lost, 0, 'no member lost')
  t.ok(f.setBitCount <= 6000 && f.setBitCount > 5990, `bits set ${f.setBitCount}`)
})
