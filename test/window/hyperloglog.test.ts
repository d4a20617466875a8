import t from 'tap'
import { HyperLogLog, hyperLogLogStandardError } from '../../src/window/hyperloglog.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { murmur3, sipHash } from '../../src/hash/hasher.js'
import { FAMILY, HEADER_BYTES, readFrame, writeFrame } from '../../src/format/frame.js'
import {
  HYPERLOGLOG_ACCURACY_KEYS,
  HYPERLOGLOG_SIZE_KEYS,
  type HyperLogLogAccuracyOptions,
  type HyperLogLogSizeOptions,
} from '../../src/window/hyperloglog.js'
import { typo, unknownOption } from '../unknown-option.js'

/** The registers of a sketch, read from its frame (params are 4 bytes). */
function registers(h: HyperLogLog): Uint8Array {
  return h.serialize().subarray(HEADER_BYTES + 4, HEADER_BYTES + 4 + h.registerCount)
}

/** Rebuild a HyperLogLog frame with changed params/payload (valid checksum). */
function reframe(h: HyperLogLog, edit: (params: Uint8Array, payload: Uint8Array) => void): Uint8Array {
  const f = readFrame(h.serialize(), FAMILY.hyperloglog, 1)
  const params = f.params.slice()
  const payload = f.payload.slice()
  edit(params, payload)
  return writeFrame({ ...f, params, payload })
}

t.test('bySize and byAccuracy are the only ways in: the constructor is private', async (t) => {
  const make = (): void => {
    // @ts-expect-error the constructor is private
    void new HyperLogLog({ precision: 4 })
  }
  t.type(make, 'function', 'a direct construction does not type-check')
  t.equal(HyperLogLog.bySize({ precision: 4, seed: 1 }).merge(HyperLogLog.bySize({ precision: 4, seed: 1 })), undefined)
})

t.test('relative standard error is 1.04/√m (Flajolet et al. 2007)', async (t) => {
  t.equal(hyperLogLogStandardError(14), 1.04 / 128)
  t.equal(hyperLogLogStandardError(4), 0.26)
  t.equal(hyperLogLogStandardError(18), 1.04 / 512)
  t.equal(HyperLogLog.bySize({ precision: 10, seed: 1 }).relativeStandardError, 1.04 / 32)
  t.throws(() => hyperLogLogStandardError(3), { code: 'ERR_GRUDGE_OPTION_INVALID' })
})

t.test('precision must be an integer in [4, 18]; memory is 2^p bytes', async (t) => {
  for (const p of [3, 19, 14.5, Number.NaN, '14', -1, 0]) {
    t.throws(
      () => HyperLogLog.bySize({ precision: p as number }),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"precision"/ },
      `precision ${String(p)}`,
    )
  }
  t.equal(HyperLogLog.bySize({ precision: 4, seed: 1 }).sizeBytes(), 16)
  t.equal(HyperLogLog.bySize({ precision: 18, seed: 1 }).sizeBytes(), 262144)
  t.throws(() => HyperLogLog.bySize({ seed: 1 } as never), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"precision"/,
  })
  t.throws(() => HyperLogLog.bySize({ precision: 14, seed: -1 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"seed"/,
  })
  t.throws(() => HyperLogLog.bySize({ precision: 14, hasher: {} as never }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"hasher"/,
  })
  t.throws(() => HyperLogLog.bySize(null as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
})

t.test('an empty sketch estimates exactly 0', async (t) => {
  for (let p = 4; p <= 18; p++) t.equal(HyperLogLog.bySize({ precision: p, seed: p }).estimate(), 0, `p = ${p}`)
  const h = HyperLogLog.bySize({ precision: 8, seed: 1 })
  t.ok(h.isEmpty())
  h.add('x')
  t.notOk(h.isEmpty())
  h.clear()
  t.equal(h.estimate(), 0, 'after clear()')
})

// The register update rule, checked against the definition computed with BigInt: for the
// 64-bit hash x, index = the top p bits, value = 1 + leading zeros of the low q = 64 − p
// bits (q + 1 when they are all zero). Items are also picked so that the q bits left in
// the high word are all zero, where the count must continue into the low word.
t.test('registers count leading zeros over the full 64 − p bits', async (t) => {
  for (const p of [4, 10, 14, 18]) {
    const seed = 1000 + p
    const hasher = murmur3(seed)
    const q = BigInt(64 - p)
    const mask = (1n << q) - 1n
    const items: string[] = []
    for (let i = 0; i < 3000; i++) items.push(`i${i}`)
    if (p === 18) {
      // 1 in 2^14 hashes has its 14 high-word remainder bits all zero
      let found = 0
      for (let i = 0; found < 3 && i < 400_000; i++) {
        if ((hasher.hash(`l${i}`) & mask) >> 32n === 0n) {
          items.push(`l${i}`)
          found++
        }
      }
      t.equal(found, 3, 'found items whose high-word remainder is 0')
    }
    const expected = new Uint8Array(2 ** p)
    const h = HyperLogLog.bySize({ precision: p, seed })
    for (const item of items) {
      const x = hasher.hash(item)
      const idx = Number(x >> q)
      const rest = x & mask
      const value = rest === 0n ? Number(q) + 1 : Number(q) - rest.toString(2).length + 1
      if (value > expected[idx]) expected[idx] = value
      h.add(item)
    }
    t.same(registers(h), expected, `p = ${p}: registers match the BigInt definition`)
    if (p === 18)
      t.ok(registers(h).reduce((a, b) => Math.max(a, b), 0) > 32 - p, 'some register counted into the low word')
  }
})

t.test('strings hash as their UTF-8 bytes; other item types are rejected', async (t) => {
  const a = HyperLogLog.bySize({ precision: 10, seed: 7 })
  const b = HyperLogLog.bySize({ precision: 10, seed: 7 })
  a.add('héllo 🚀')
  b.add(new TextEncoder().encode('héllo 🚀'))
  t.same(registers(a), registers(b))
  t.throws(() => a.add(42 as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
  t.throws(() => a.add(undefined as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
})

t.test('adding the same item again changes nothing', async (t) => {
  const h = HyperLogLog.bySize({ precision: 12, seed: 3 })
  for (let i = 0; i < 500; i++) h.add(`k${i}`)
  const before = registers(h).slice()
  for (let r = 0; r < 3; r++) for (let i = 0; i < 500; i++) h.add(`k${i}`)
  t.same(registers(h), before)
})

// Accuracy at p = 14 (m = 16384, σ = 1.04/√m = 0.8125 %), 5 fixed seeds. For each true
// cardinality n the mean relative error over the seeds must lie within 3 standard errors
// of the mean, 3·σ/√5 ≈ 1.09 %, and each single estimate within 4σ = 3.25 %. 40,000 ≈ 2.5·m
// is where classic HyperLogLog switches from linear counting and is most biased. Items
// are 8 distinct bytes per (seed, i), so no allocation per add.
t.test('accuracy at p = 14 from 0 to 10^6 (Ertl improved estimator, no bias bump)', async (t) => {
  const checkpoints = [0, 1, 10, 100, 1_000, 10_000, 40_000, 100_000, 1_000_000]
  const seeds = [11, 23, 37, 41, 59]
  const sigma = 1.04 / Math.sqrt(2 ** 14)
  const errors = checkpoints.map(() => [] as number[])
  const buf = new Uint8Array(8)
  const dv = new DataView(buf.buffer)
  for (const seed of seeds) {
    const h = HyperLogLog.bySize({ precision: 14, seed })
    let n = 0
    checkpoints.forEach((target, j) => {
      for (; n < target; n++) {
        dv.setUint32(0, n)
        dv.setUint32(4, seed)
        h.add(buf)
      }
      const e = h.estimate()
      if (target === 0) t.equal(e, 0, `seed ${seed}: n = 0 estimates exactly 0`)
      else {
        errors[j].push((e - target) / target)
        t.ok(
          Math.abs(e - target) / target <= 4 * sigma,
          `seed ${seed}: n = ${target}, estimate ${e.toFixed(1)} within 4σ`,
        )
      }
    })
  }
  checkpoints.forEach((target, j) => {
    if (target === 0) return
    const mean = errors[j].reduce((a, b) => a + b, 0) / seeds.length
    t.ok(
      Math.abs(mean) <= (3 * sigma) / Math.sqrt(seeds.length),
      `n = ${target}: mean relative error ${(mean * 100).toFixed(3)} % within 3σ/√${seeds.length} = ${((300 * sigma) / Math.sqrt(seeds.length)).toFixed(3)} %`,
    )
  })
})

t.test('small cardinalities are nearly exact at every precision', async (t) => {
  // with n ≪ m, collisions are rare and the estimator reduces to linear counting
  for (const p of [8, 12, 14, 18]) {
    const h = HyperLogLog.bySize({ precision: p, seed: 5 })
    h.add('only')
    t.ok(Math.abs(h.estimate() - 1) < 0.02, `p = ${p}: one item estimates ${h.estimate()}`)
  }
})

t.test('merge is the register-wise maximum: the union of the streams', async (t) => {
  const a = HyperLogLog.bySize({ precision: 12, seed: 9 })
  const b = HyperLogLog.bySize({ precision: 12, seed: 9 })
  const all = HyperLogLog.bySize({ precision: 12, seed: 9 })
  for (let i = 0; i < 3000; i++) {
    ;(i % 3 === 0 ? a : b).add(`u${i}`)
    if (i >= 1000 && i < 2000) a.add(`u${i}`) // overlap
    all.add(`u${i}`)
  }
  a.merge(b)
  t.same(registers(a), registers(all))
  t.equal(a.estimate(), all.estimate())
})

t.test('merging incompatible sketches throws naming what differs', async (t) => {
  const base = HyperLogLog.bySize({ precision: 12, seed: 1 })
  t.throws(() => base.merge(HyperLogLog.bySize({ precision: 11, seed: 1 })), {
    code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
    message: /precision differs: expected 12, received 11/,
  })
  t.throws(() => base.merge(HyperLogLog.bySize({ precision: 12, seed: 2 })), {
    code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
    message: /seed differs/,
  })
  t.throws(() => base.merge(HyperLogLog.bySize({ precision: 12, hasher: sipHash(1) })), {
    code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
    message: /hasher differs: expected "murmur3", received "siphash"/,
  })
  t.throws(() => base.merge(CountMinSketch.bySize({ width: 8, depth: 2, seed: 1 }) as never), {
    code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
    message: /family differs: expected "HyperLogLog", received "CountMinSketch"/,
  })
  t.throws(() => base.merge(base), { code: 'ERR_GRUDGE_MERGE_SELF' })
  t.notOk(base.isCompatible(HyperLogLog.bySize({ precision: 12, seed: 2 })))
  t.ok(base.isCompatible(HyperLogLog.bySize({ precision: 12, seed: 1 })))
  t.ok(base.isCompatible(base.emptyLike()))
  t.notOk(base.isCompatible({}))
})

t.test('serialize / deserialize round trip and frame checks', async (t) => {
  for (const hasher of [murmur3(77), sipHash(78)]) {
    const h = HyperLogLog.bySize({ precision: 10, hasher })
    for (let i = 0; i < 5000; i++) h.add(`s${i}`)
    const bytes = h.serialize()
    t.equal(bytes[4], FAMILY.hyperloglog, 'family id 4')
    t.equal(bytes.length, 36 + 4 + 1024 + 4)
    const back = HyperLogLog.deserialize(bytes)
    t.equal(back.estimate(), h.estimate())
    t.same(back.serialize(), bytes)
    t.equal(back.hasher.name, hasher.name)
    t.ok(back.isCompatible(h))
    back.add('new-item-after-load')
    h.add('new-item-after-load')
    t.same(back.serialize(), h.serialize(), 'the loaded sketch hashes like the original')
  }
  const h = HyperLogLog.bySize({ precision: 8, seed: 1 })
  h.add('a')
  const bytes = h.serialize()
  const flipped = bytes.slice()
  flipped[50] ^= 1
  t.throws(() => HyperLogLog.deserialize(flipped), { code: 'ERR_GRUDGE_FORMAT_CHECKSUM' })
  t.throws(() => HyperLogLog.deserialize(bytes.subarray(0, 20)), { code: 'ERR_GRUDGE_FORMAT_TRUNCATED' })
  t.throws(() => HyperLogLog.deserialize(Uint8Array.of(1, 2, 3)), { code: 'ERR_GRUDGE_FORMAT_TRUNCATED' })
  t.throws(() => HyperLogLog.deserialize(CountMinSketch.bySize({ width: 4, depth: 1, seed: 1 }).serialize()), {
    code: 'ERR_GRUDGE_FORMAT_FAMILY',
  })
  t.throws(() => HyperLogLog.deserialize(reframe(h, (_, p) => (p[3] = 65 - 8 + 1))), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /registers\[3\]/,
  })
  t.doesNotThrow(
    () => HyperLogLog.deserialize(reframe(h, (_, p) => (p[3] = 65 - 8))),
    'q + 1 is the largest register value',
  )
  t.throws(() => HyperLogLog.deserialize(reframe(h, (pa) => (pa[0] = 19))), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /precision/,
  })
  t.throws(() => HyperLogLog.deserialize(reframe(h, (pa) => (pa[1] = 9))), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /hasher/,
  })
  t.throws(() => HyperLogLog.deserialize(reframe(h, (pa) => (pa[2] = 6))), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /registerBits/,
  })
  t.throws(() => HyperLogLog.deserialize(reframe(h, (pa) => (pa[0] = 9))), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /payload/,
  })
})

// With no register at 0 or at q + 1, Ertl's σ and τ terms vanish and the estimator is the
// raw HyperLogLog estimate α∞·m²/Σ 2^−M[j] (Flajolet et al. 2007 with α∞ = 1/(2 ln 2);
// Ertl 2017 §4). Registers are written through a frame.
t.test('without empty or saturated registers the estimate is α∞·m²/Σ2^−M', async (t) => {
  const alpha = 1 / (2 * Math.LN2)
  for (const p of [4, 10, 16]) {
    const h = HyperLogLog.bySize({ precision: p, seed: 1 })
    const m = 2 ** p
    const q = 64 - p
    let state = 12345
    const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0)
    const regs = Uint8Array.from({ length: m }, () => 1 + (next() % 20))
    const loaded = HyperLogLog.deserialize(reframe(h, (_, payload) => payload.set(regs)))
    const raw = (alpha * m * m) / regs.reduce((s, r) => s + 2 ** -r, 0)
    t.ok(Math.abs(loaded.estimate() / raw - 1) < 1e-12, `p = ${p}: ${loaded.estimate()} = ${raw}`)
    // all registers at k: α∞·m·2^k
    const k = 3
    const flat = HyperLogLog.deserialize(reframe(h, (_, payload) => payload.fill(k)))
    t.ok(Math.abs(flat.estimate() / (alpha * m * 2 ** k) - 1) < 1e-12, `p = ${p}: all registers ${k}`)
    // every register saturated (q + 1): the estimate is unbounded
    t.equal(HyperLogLog.deserialize(reframe(h, (_, payload) => payload.fill(q + 1))).estimate(), Infinity)
  }
})

t.test('saturated registers: estimate follows Ertl (2017) eq. 39–41 with τ summed as a series', async (t) => {
  // The estimator written out from the paper, with σ and τ summed term by term with
  // Math.pow (the implementation uses the incremental recurrences instead):
  //   σ(x) = x + Σ_{k≥1} x^(2^k)·2^(k−1),  τ(x) = (1 − x − Σ_{k≥1} (1 − x^(2^−k))²·2^−k) / 3,
  //   E = α∞·m² / (m·σ(C0/m) + Σ_{k=1..q} C_k·2^−k + m·τ(1 − C_{q+1}/m)·2^−q).
  const sigmaRef = (x: number): number => {
    let s = x
    for (let k = 1; k < 64; k++) s += Math.pow(x, 2 ** k) * 2 ** (k - 1)
    return s
  }
  const tauRef = (x: number): number => {
    let s = 1 - x
    for (let k = 1; k < 80; k++) s -= (1 - Math.pow(x, 2 ** -k)) ** 2 * 2 ** -k
    return s / 3
  }
  const p = 4
  const m = 2 ** p
  const q = 64 - p
  const reference = (regs: number[]): number => {
    const c = new Array<number>(q + 2).fill(0)
    for (const r of regs) c[r]++
    let z = m * sigmaRef(c[0] / m) + m * tauRef(1 - c[q + 1] / m) * 2 ** -q
    for (let k = 1; k <= q; k++) z += c[k] * 2 ** -k
    return m ** 2 / (2 * Math.LN2) / z
  }
  const h = HyperLogLog.bySize({ precision: p, seed: 1 })
  const cases: [string, number[]][] = [
    ['12 of 16 registers saturated (q + 1), 4 at q', [...Array<number>(12).fill(q + 1), ...Array<number>(4).fill(q)]],
    ['half saturated, the rest spread', [...Array<number>(8).fill(q + 1), 0, 1, 5, 9, 20, 40, q - 1, q]],
    ['one saturated register among small ones', [q + 1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7]],
  ]
  for (const [name, regs] of cases) {
    const e = HyperLogLog.deserialize(reframe(h, (_, payload) => payload.set(regs))).estimate()
    const want = reference(regs)
    t.ok(Math.abs(e - want) <= 1e-12 * want, `${name}: ${e} ≈ ${want}`)
  }
  // The τ term is what keeps a near-full sketch finite: without it (τ = 0) the first case
  // would read α∞·m² / (4·2^−q), a larger number.
  const near = HyperLogLog.deserialize(reframe(h, (_, payload) => payload.set(cases[0][1]))).estimate()
  t.ok(near < m ** 2 / (2 * Math.LN2) / (4 * 2 ** -q), 'the saturated registers add to z (τ(1/4) > 0)')
  const full = HyperLogLog.deserialize(reframe(h, (_, payload) => payload.fill(q + 1))).estimate()
  t.equal(full, Infinity, 'every register saturated: τ(0) = 0, z = 0, no finite estimate')
})

t.test('byAccuracy picks the smallest precision meeting 1.04/√m, refuses an unreachable target', async (t) => {
  const rows: Array<[number, number]> = [
    [1, 4],
    [0.26, 4],
    [0.2599, 5],
    [0.01, 14],
    [1.04 / 128, 14],
    [0.008, 15],
    [1.04 / 512, 18],
  ]
  for (const [rse, p] of rows) {
    const h = HyperLogLog.byAccuracy({ relativeStandardError: rse, seed: 1 })
    t.equal(h.precision, p, `${rse} → p = ${p}`)
    t.ok(h.relativeStandardError <= rse, 'meets the target')
    if (p > 4) t.ok(hyperLogLogStandardError(p - 1) > rse, 'the precision below does not')
  }
  for (const bad of [0.002, 0, -0.1, Number.NaN, '0.01']) {
    t.throws(
      () => HyperLogLog.byAccuracy({ relativeStandardError: bad as number }),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"relativeStandardError"/ },
      String(bad),
    )
  }
  t.throws(() => HyperLogLog.byAccuracy(null as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.same(
    HyperLogLog.byAccuracy({ relativeStandardError: 0.01, seed: 3 }).serialize(),
    HyperLogLog.bySize({ precision: 14, seed: 3 }).serialize(),
    'the same sketch as by size',
  )
})

t.test('an unknown option throws naming it and the closest option; every option passes', async (t) => {
  t.throws(
    () => HyperLogLog.bySize(typo<HyperLogLogSizeOptions>({ precision: 10, Precision: 10 })),
    unknownOption('Precision', 'precision'),
  )
  t.throws(
    () =>
      HyperLogLog.byAccuracy(
        typo<HyperLogLogAccuracyOptions>({ relativeStandardError: 0.01, relativeStandardErr: 0.01 }),
      ),
    unknownOption('relativeStandardErr', 'relativeStandardError'),
  )
  const all: Required<HyperLogLogSizeOptions> = { precision: 10, seed: 1, hasher: sipHash() }
  t.same(Object.keys(all).sort(), [...HYPERLOGLOG_SIZE_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => HyperLogLog.bySize(all))
  const byAccuracy: Required<HyperLogLogAccuracyOptions> = { relativeStandardError: 0.01, seed: 1, hasher: sipHash() }
  t.same(Object.keys(byAccuracy).sort(), [...HYPERLOGLOG_ACCURACY_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => HyperLogLog.byAccuracy(byAccuracy))
})
