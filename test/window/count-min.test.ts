import t from 'tap'
import fc from 'fast-check'
import { CountMinSketch, CMS_MAX_COUNT, countMinDepth, countMinWidth } from '../../src/window/count-min.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { murmur3, sipHash } from '../../src/hash/hasher.js'
import { kmIndexes } from '../../src/hash/indexes.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import {
  COUNT_MIN_ACCURACY_KEYS,
  COUNT_MIN_SIZE_KEYS,
  type CountMinAccuracyOptions,
  type CountMinSizeOptions,
} from '../../src/window/count-min.js'
import { typo, unknownOption } from '../unknown-option.js'

/** Rebuild a Count-Min frame with edits (valid checksum). */
function reframe(
  c: CountMinSketch,
  edit: (f: { flags: number; params: Uint8Array; payload: Uint8Array }) => void,
): Uint8Array {
  const f = readFrame(c.serialize(), FAMILY.countMin, 1)
  const parts = { ...f, params: f.params.slice(), payload: f.payload.slice() }
  edit(parts)
  return writeFrame(parts)
}

t.test('bySize and byAccuracy are the only ways in: the constructor is private', async (t) => {
  const make = (): void => {
    // @ts-expect-error the constructor is private
    void new CountMinSketch({ width: 4, depth: 1 })
  }
  t.type(make, 'function', 'a direct construction does not type-check')
  t.same(
    CountMinSketch.byAccuracy({ epsilon: 0.001, delta: 0.001, seed: 1 }).serialize(),
    CountMinSketch.bySize({ width: 2719, depth: 7, seed: 1 }).serialize(),
    'byAccuracy is bySize at ceil(e/ε) × ceil(ln(1/δ))',
  )
  t.throws(() => CountMinSketch.byAccuracy({ epsilon: 1e-8, delta: 1e-9 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"epsilon".*2\^28/,
  })
})

t.test('sizing by accuracy: w = ceil(e/ε), d = ceil(ln(1/δ)) (Cormode & Muthukrishnan 2005)', async (t) => {
  // ε = δ = 0.001 → 2719 × 7 (the value; a known bug elsewhere builds 1 row)
  const c = CountMinSketch.byAccuracy({ epsilon: 0.001, delta: 0.001, seed: 1 })
  t.equal(c.width, 2719)
  t.equal(c.depth, 7)
  t.equal(c.sizeBytes(), 2719 * 7 * 4)
  t.equal(countMinWidth(0.01), 272) // e/0.01 = 271.83
  t.equal(countMinWidth(0.1), 28) // 27.18
  t.equal(countMinDepth(0.01), 5) // ln 100 = 4.61
  t.equal(countMinDepth(0.05), 3) // ln 20 = 3.00
  t.equal(countMinDepth(0.5), 1) // ln 2 = 0.69
  for (const bad of [0, 1, -0.1, Number.NaN, '0.1']) {
    t.throws(() => countMinWidth(bad as number), { code: 'ERR_GRUDGE_SIZING_INVALID' })
    t.throws(() => countMinDepth(bad as number), { code: 'ERR_GRUDGE_SIZING_INVALID' })
    t.throws(() => CountMinSketch.byAccuracy({ epsilon: bad as number, delta: 0.01 }), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /"epsilon"/,
    })
    t.throws(() => CountMinSketch.byAccuracy({ epsilon: 0.01, delta: bad as number }), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /"delta"/,
    })
  }
})

t.test('construction by size checks every option', async (t) => {
  const rows: Array<[object, RegExp]> = [
    [{ width: 0, depth: 3 }, /"width"/],
    [{ width: 1.5, depth: 3 }, /"width"/],
    [{ depth: 3 }, /"width"/],
    [{ width: 2 ** 28 + 1, depth: 1 }, /"width"/],
    [{ width: 10, depth: 0 }, /"depth"/],
    [{ width: 10, depth: 65 }, /"depth"/],
    [{ width: 10, depth: '3' }, /"depth"/],
    [{ width: 2 ** 24, depth: 17 }, /"width"/],
    [{ width: 10, depth: 3, conservative: 'yes' }, /"conservative"/],
    [{ width: 10, depth: 3, seed: 'zz' }, /"seed"/],
    [{ width: 10, depth: 3, hasher: 5 }, /"hasher"/],
  ]
  for (const [opts, re] of rows) {
    t.throws(
      () => CountMinSketch.bySize(opts as never),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: re },
      JSON.stringify(opts),
    )
  }
  t.throws(() => CountMinSketch.bySize(undefined as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
})

t.test('exactness: width 2048, depth 5 over a,a,a,b,b,c gives a=3, b=2, c=1, d=0', async (t) => {
  for (const conservative of [false, true]) {
    for (const seed of [1, 2, 3, 0xdeadbeef]) {
      const c = CountMinSketch.bySize({ width: 2048, depth: 5, seed, conservative })
      for (const x of ['a', 'a', 'a', 'b', 'b', 'c']) c.add(x)
      const got = ['a', 'b', 'c', 'd'].map((x) => c.estimate(x))
      t.same(got, [3, 2, 1, 0], `seed ${seed}, conservative ${conservative}`)
      t.equal(c.totalCount, 6)
    }
  }
})

t.test('add(item, count): count is a non-negative integer, else a coded error and nothing changes', async (t) => {
  const c = CountMinSketch.bySize({ width: 64, depth: 3, seed: 4 })
  c.add('x', 5)
  c.add('x', 0)
  t.equal(c.estimate('x'), 5)
  t.equal(c.totalCount, 5)
  const rows: Array<[unknown, string]> = [
    [-1, 'ERR_GRUDGE_OPTION_INVALID'],
    [1.5, 'ERR_GRUDGE_OPTION_INVALID'],
    [2 ** 53, 'ERR_GRUDGE_OPTION_INVALID'],
    ['1', 'ERR_GRUDGE_OPTION_INVALID'],
    [null, 'ERR_GRUDGE_OPTION_INVALID'],
    [Number.NaN, 'ERR_GRUDGE_VALUE_NOT_FINITE'],
    [Infinity, 'ERR_GRUDGE_VALUE_NOT_FINITE'],
    [-Infinity, 'ERR_GRUDGE_VALUE_NOT_FINITE'],
  ]
  for (const [count, code] of rows) {
    t.throws(() => c.add('x', count as number), { code, message: /count: expected/ }, `count ${String(count)}`)
  }
  t.throws(() => c.add(7 as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
  t.equal(c.estimate('x'), 5, 'unchanged')
  t.equal(c.totalCount, 5, 'unchanged')
})

t.test('estimates never fall below the true count (property)', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.string({ maxLength: 4 }), fc.nat(1000)), { maxLength: 200 }),
      fc.integer({ min: 1, max: 40 }),
      fc.integer({ min: 1, max: 5 }),
      fc.boolean(),
      (ops, width, depth, conservative) => {
        const c = CountMinSketch.bySize({ width, depth, seed: 99, conservative })
        const truth = new Map<string, number>()
        let total = 0
        for (const [k, n] of ops) {
          c.add(k, n)
          truth.set(k, (truth.get(k) ?? 0) + n)
          total += n
        }
        if (c.totalCount !== total) return false
        for (const [k, n] of truth) {
          const e = c.estimate(k)
          if (e < n || e > total) return false
        }
        return true
      },
    ),
    { seed: 20260101, numRuns: 300 },
  )
  t.pass('estimate ≥ truth and ≤ total for every item')
})

// With w = ceil(e/ε) and d = ceil(ln 1/δ), P(estimate − true > ε·N) ≤ δ per item. Here
// ε = 0.01 (w = 272), δ = 0.05 (d = 3): over 2,000 items of a skewed stream the share
// above the bound must be ≤ δ plus 3 binomial standard deviations (√(δ(1−δ)/2000) ≈ 0.5 %).
t.test('the ε·N error bound holds for all but about a δ share of items', async (t) => {
  for (const seed of [1, 2, 3]) {
    const c = CountMinSketch.byAccuracy({ epsilon: 0.01, delta: 0.05, seed })
    const truth: number[] = []
    let total = 0
    for (let i = 0; i < 2000; i++) {
      const n = 1 + Math.floor(1000 / (i + 1)) // Zipf-like counts
      c.add(`item-${i}`, n)
      truth.push(n)
      total += n
    }
    let over = 0
    for (let i = 0; i < 2000; i++) if (c.estimate(`item-${i}`) - truth[i] > 0.01 * total) over++
    t.ok(over / 2000 <= 0.05 + 3 * Math.sqrt((0.05 * 0.95) / 2000), `seed ${seed}: ${over} of 2000 above ε·N`)
  }
})

t.test('conservative update: never below truth, never above the plain sketch, tighter in a crowd', async (t) => {
  const plain = CountMinSketch.bySize({ width: 50, depth: 4, seed: 8 })
  const cu = CountMinSketch.bySize({ width: 50, depth: 4, seed: 8, conservative: true })
  const truth = new Map<string, number>()
  for (let i = 0; i < 3000; i++) {
    const k = `k${(i * 7919) % 400}`
    plain.add(k)
    cu.add(k)
    truth.set(k, (truth.get(k) ?? 0) + 1)
  }
  let tighter = 0
  for (const [k, n] of truth) {
    const p = plain.estimate(k)
    const q = cu.estimate(k)
    t.ok(q >= n && q <= p, `${k}: ${n} ≤ ${q} ≤ ${p}`)
    if (q < p) tighter++
  }
  t.ok(tighter > 100, `${tighter} of 400 items tighter under conservative update`)
})

t.test('counters saturate at 2^32 − 1 instead of wrapping', async (t) => {
  const c = CountMinSketch.bySize({ width: 16, depth: 2, seed: 1 })
  c.add('x', CMS_MAX_COUNT - 2)
  c.add('x', 5)
  t.equal(c.estimate('x'), CMS_MAX_COUNT)
  t.equal(c.totalCount, CMS_MAX_COUNT + 3, 'the total is exact')
  const cu = CountMinSketch.bySize({ width: 16, depth: 2, seed: 1, conservative: true })
  cu.add('x', CMS_MAX_COUNT)
  cu.add('x', 1)
  t.equal(cu.estimate('x'), CMS_MAX_COUNT)
  const a = CountMinSketch.bySize({ width: 16, depth: 2, seed: 1 })
  const b = CountMinSketch.bySize({ width: 16, depth: 2, seed: 1 })
  a.add('y', CMS_MAX_COUNT - 1)
  b.add('y', CMS_MAX_COUNT - 1)
  a.merge(b)
  t.equal(a.estimate('y'), CMS_MAX_COUNT, 'merge saturates')
  t.equal(a.totalCount, 2 * (CMS_MAX_COUNT - 1))
  const big = CountMinSketch.bySize({ width: 4, depth: 1, seed: 1 })
  for (let i = 0; i < 3; i++) big.add(`z${i}`, Number.MAX_SAFE_INTEGER)
  t.equal(big.totalCount, Number.MAX_SAFE_INTEGER, 'the total saturates at 2^53 − 1')
})

t.test('merge adds counters and totals: same as one sketch over both streams', async (t) => {
  for (const conservative of [false, true]) {
    const a = CountMinSketch.bySize({ width: 100, depth: 4, seed: 5, conservative })
    const b = a.emptyLike()
    const both = a.emptyLike()
    const truth = new Array<number>(150).fill(0)
    for (let i = 0; i < 1000; i++) {
      const k = `m${i % 150}`
      ;(i % 2 ? a : b).add(k, 1 + (i % 3))
      both.add(k, 1 + (i % 3))
      truth[i % 150] += 1 + (i % 3)
    }
    a.merge(b)
    t.equal(a.totalCount, both.totalCount)
    if (!conservative) t.same(a.serialize(), both.serialize(), 'plain: identical counters')
    let under = 0
    for (let i = 0; i < 150; i++) if (a.estimate(`m${i}`) < truth[i]) under++
    t.equal(under, 0, `conservative ${conservative}: no merged estimate below the true count`)
  }
})

t.test('merging incompatible sketches throws naming what differs', async (t) => {
  const base = CountMinSketch.bySize({ width: 100, depth: 4, seed: 5 })
  const rows: Array<[CountMinSketch | HyperLogLog, RegExp]> = [
    [CountMinSketch.bySize({ width: 101, depth: 4, seed: 5 }), /width differs: expected 100, received 101/],
    [CountMinSketch.bySize({ width: 100, depth: 3, seed: 5 }), /depth differs: expected 4, received 3/],
    [CountMinSketch.bySize({ width: 100, depth: 4, seed: 6 }), /seed differs/],
    [
      CountMinSketch.bySize({ width: 100, depth: 4, seed: 5, conservative: true }),
      /conservative differs: expected false, received true/,
    ],
    [
      CountMinSketch.bySize({ width: 100, depth: 4, hasher: sipHash(5) }),
      /hasher differs: expected "murmur3", received "siphash"/,
    ],
    [
      HyperLogLog.bySize({ precision: 4, seed: 5 }),
      /family differs: expected "CountMinSketch", received "HyperLogLog"/,
    ],
  ]
  for (const [other, re] of rows) {
    t.notOk(base.isCompatible(other))
    t.throws(() => base.merge(other as CountMinSketch), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: re })
  }
  t.throws(() => base.merge(base), { code: 'ERR_GRUDGE_MERGE_SELF' })
})

t.test('serialize / deserialize round trip and frame checks', async (t) => {
  const c = CountMinSketch.bySize({ width: 37, depth: 3, seed: 12, conservative: true })
  for (let i = 0; i < 500; i++) c.add(`r${i % 60}`, i % 4)
  const bytes = c.serialize()
  t.equal(bytes[4], FAMILY.countMin, 'family id 5')
  t.equal(bytes.length, 36 + 12 + 8 + 37 * 3 * 4 + 4)
  const back = CountMinSketch.deserialize(bytes)
  t.same(back.serialize(), bytes)
  t.equal(back.totalCount, c.totalCount)
  t.equal(back.conservative, true)
  for (let i = 0; i < 60; i++) t.equal(back.estimate(`r${i}`), c.estimate(`r${i}`))
  t.throws(() => CountMinSketch.deserialize(Uint8Array.of(1, 2, 3)), { code: 'ERR_GRUDGE_FORMAT_TRUNCATED' })
  const flipped = bytes.slice()
  flipped[60] ^= 0x10
  t.throws(() => CountMinSketch.deserialize(flipped), { code: 'ERR_GRUDGE_FORMAT_CHECKSUM' })
  t.throws(() => CountMinSketch.deserialize(HyperLogLog.bySize({ precision: 4, seed: 1 }).serialize()), {
    code: 'ERR_GRUDGE_FORMAT_FAMILY',
  })
  const edits: Array<[string, (f: { flags: number; params: Uint8Array; payload: Uint8Array }) => void, RegExp]> = [
    ['unknown flag', (f) => (f.flags = 2), /flags/],
    ['width 0', (f) => f.params.set([0, 0, 0, 0], 0), /width/],
    ['depth 65', (f) => (f.params[4] = 65), /depth/],
    ['hasher 7', (f) => (f.params[8] = 7), /hasher/],
    ['counter bits 16', (f) => (f.params[9] = 16), /counterBits/],
    ['reserved', (f) => (f.params[10] = 1), /reserved/],
    ['width 38 (payload too short)', (f) => (f.params[0] = 38), /payload/],
    ['a row above the total', (f) => (f.payload[10] = 0xff), /rows\[0\]/],
    ['total above 2^53', (f) => f.payload.set([0, 0, 0, 0, 0, 0, 0x20, 0], 0), /total/],
  ]
  for (const [name, edit, re] of edits) {
    t.throws(
      () => CountMinSketch.deserialize(reframe(c, edit)),
      { code: 'ERR_GRUDGE_FORMAT_INVALID', message: re },
      name,
    )
  }
})

t.test('clear() empties the counters and the total', async (t) => {
  const c = CountMinSketch.bySize({ width: 10, depth: 2, seed: 1 })
  c.add('a', 4)
  c.clear()
  t.equal(c.estimate('a'), 0)
  t.equal(c.totalCount, 0)
})

t.test('an item lands on exactly the kmIndexes counters of its 64-bit hash (spec/window.md §3)', async (t) => {
  for (const [width, depth] of [
    [2719, 7],
    [64, 5],
    [1, 3],
    [4096, 2],
  ] as const) {
    for (const conservative of [false, true]) {
      const c = CountMinSketch.bySize({ width, depth, seed: 31, conservative })
      const item = `probe-${width}`
      c.add(item, 5)
      const v = murmur3(31).hash(item)
      const idx = new Uint32Array(depth)
      kmIndexes(Number(v >> 32n) | 0, Number(v & 0xffffffffn) | 0, depth, width, idx)
      const counters = new DataView(c.serialize().buffer, 36 + 12 + 8)
      const set: number[] = []
      for (let p = 0; p < width * depth; p++) if (counters.getUint32(4 * p, true) !== 0) set.push(p)
      t.same(
        set,
        Array.from(idx, (j, i) => i * width + j),
        `${width} × ${depth}, conservative ${conservative}`,
      )
      t.equal(c.estimate(item), 5)
    }
  }
})

t.test('both constructions refuse an unknown option naming the closest one; every option passes', async (t) => {
  t.throws(
    () => CountMinSketch.bySize(typo<CountMinSizeOptions>({ width: 8, depth: 2, conservativ: true })),
    unknownOption('conservativ', 'conservative'),
  )
  t.throws(
    () => CountMinSketch.byAccuracy(typo<CountMinAccuracyOptions>({ epsilon: 0.1, delta: 0.1, epsilom: 0.1 })),
    unknownOption('epsilom', 'epsilon'),
  )
  const bySize: Required<CountMinSizeOptions> = { width: 8, depth: 2, conservative: true, seed: 1, hasher: murmur3() }
  t.same(Object.keys(bySize).sort(), [...COUNT_MIN_SIZE_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => CountMinSketch.bySize(bySize))
  const byAccuracy: Required<CountMinAccuracyOptions> = {
    epsilon: 0.1,
    delta: 0.1,
    conservative: false,
    seed: 1,
    hasher: sipHash(),
  }
  t.same(Object.keys(byAccuracy).sort(), [...COUNT_MIN_ACCURACY_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => CountMinSketch.byAccuracy(byAccuracy))
})
