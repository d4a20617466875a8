import t from 'tap'
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import { BLOOM_FORMAT_VERSION, BloomFilter } from '../../src/bloom/bloom-filter.js'
import { bloomPositions, bloomPositionsV2 } from '../../src/bloom/positions.js'
import { Murmur3Hasher, murmur3, sipHash } from '../../src/hash/hasher.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import {
  BLOOM_FILTER_ACCURACY_KEYS,
  BLOOM_FILTER_SIZE_KEYS,
  type BloomFilterAccuracyOptions,
  type BloomFilterSizeOptions,
} from '../../src/bloom/bloom-filter.js'
import { typo, unknownOption } from '../unknown-option.js'

/** A copy of `first` with every other filter merged in, in order. */
function mergedAll(first: BloomFilter, ...rest: BloomFilter[]): BloomFilter {
  const out = first.clone()
  for (const f of rest) out.merge(f)
  return out
}

t.test('bySize and byAccuracy are the only ways in: the constructor is private', async (t) => {
  const make = (): void => {
    // @ts-expect-error the constructor is private
    void new BloomFilter({ capacity: 10, errorRate: 0.1 })
  }
  t.type(make, 'function', 'a direct construction does not type-check')
  const viaSize = BloomFilter.bySize({ bits: 9586, hashes: 7, seed: 1 })
  const viaAccuracy = BloomFilter.byAccuracy({ capacity: 1000, errorRate: 0.01, seed: 1 })
  t.same(viaAccuracy.serialize(), viaSize.serialize(), 'byAccuracy is bySize at the optimal geometry')
  t.equal(viaSize.merge(viaAccuracy), undefined, 'merge returns nothing')
})

t.test('construction by accuracy and by size', async (t) => {
  const f = BloomFilter.byAccuracy({ capacity: 1000, errorRate: 0.01, seed: 1 })
  t.equal(f.bitCount, 9586)
  t.equal(f.hashCount, 7)
  t.equal(f.sizeBytes(), Math.ceil(9586 / 32) * 4)
  const g = BloomFilter.bySize({ bits: 77, hashes: 3, seed: 1 })
  t.equal(g.bitCount, 77)
  t.equal(g.hashCount, 3)
  t.equal(g.hasher.name, 'murmur3', 'murmur3 by default')
  const s = BloomFilter.byAccuracy({ capacity: 10, errorRate: 0.1, hasher: sipHash(3) })
  t.equal(s.hasher.name, 'siphash')
  t.same(s.seed, sipHash(3).seed)
  const reseeded = BloomFilter.byAccuracy({ capacity: 10, errorRate: 0.1, hasher: sipHash(3), seed: 4 })
  t.same(reseeded.seed, sipHash(4).seed, 'seed overrides the hasher seed')
})

t.test('invalid options throw a coded error naming the option', async (t) => {
  const rows: Array<[string, () => unknown]> = [
    ['capacity', () => BloomFilter.byAccuracy({ capacity: 0, errorRate: 0.1 })],
    ['capacity', () => BloomFilter.byAccuracy({ capacity: 1.5, errorRate: 0.1 })],
    ['capacity', () => BloomFilter.byAccuracy({ capacity: NaN, errorRate: 0.1 })],
    ['capacity', () => BloomFilter.byAccuracy({ capacity: 1e12, errorRate: 1e-9 })],
    ['errorRate', () => BloomFilter.byAccuracy({ capacity: 10, errorRate: 0 })],
    ['errorRate', () => BloomFilter.byAccuracy({ capacity: 10, errorRate: 1 })],
    ['errorRate', () => BloomFilter.byAccuracy({ capacity: 10, errorRate: NaN })],
    ['bits', () => BloomFilter.bySize({ bits: 0, hashes: 1 })],
    ['bits', () => BloomFilter.bySize({ bits: 2 ** 36 + 1, hashes: 1 })],
    ['bits', () => BloomFilter.bySize({ bits: 10.5, hashes: 1 })],
    ['hashes', () => BloomFilter.bySize({ bits: 10, hashes: 0 })],
    ['hashes', () => BloomFilter.bySize({ bits: 10, hashes: 1025 })],
    ['hasher', () => BloomFilter.bySize({ bits: 10, hashes: 1, hasher: {} as never })],
    ['seed', () => BloomFilter.bySize({ bits: 10, hashes: 1, seed: -1 })],
  ]
  for (const [name, f] of rows) {
    t.throws(f, { code: 'ERR_GRUDGE_OPTION_INVALID', message: new RegExp(`"${name}"|seed`) }, name)
  }
})

t.test('no false negatives, strings hash as their UTF-8 bytes (property)', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.string(), fc.uint8Array({ maxLength: 40 })), { maxLength: 60 }),
      fc.integer({ min: 1, max: 3000 }),
      fc.integer({ min: 1, max: 12 }),
      (items, bits, hashes) => {
        const f = BloomFilter.bySize({ bits, hashes, seed: 11 })
        for (const it of items) f.add(it)
        for (const it of items) {
          if (!f.mightContain(it)) return false
          if (typeof it === 'string' && !f.mightContain(Buffer.from(it, 'utf8'))) return false
        }
        return f.addedCount === items.length
      },
    ),
    { seed: 424242, numRuns: 200 },
  )
  t.pass()
})

t.test('add reports a new item; counts, fill and key errors', async (t) => {
  const f = BloomFilter.bySize({ bits: 1000, hashes: 4, seed: 2 })
  t.equal(f.fillRatio(), 0)
  t.equal(f.estimatedCardinality(), 0)
  t.equal(f.estimatedFalsePositiveRate(), 0)
  t.equal(f.mightContain('x'), false, 'empty filter contains nothing')
  t.equal(f.add('x'), true)
  t.equal(f.add('x'), false, 'a duplicate sets no new bit')
  t.equal(f.addedCount, 2, 'addedCount counts add calls')
  t.ok(f.setBitCount >= 1 && f.setBitCount <= 4)
  t.equal(f.fillRatio(), f.setBitCount / 1000)
  // 4 distinct positions over 1000 bits (version 2): the hypergeometric chance, not (X / m)^4
  const X = f.setBitCount
  t.equal(f.estimatedFalsePositiveRate(), (X / 1000) * ((X - 1) / 999) * ((X - 2) / 998) * ((X - 3) / 997))
  t.throws(() => f.add(42 as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
  t.throws(() => f.mightContain(null as never), { code: 'ERR_GRUDGE_KEY_INVALID' })
  t.throws(() => f.isBitSet(1000), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  const full = BloomFilter.bySize({ bits: 8, hashes: 8, seed: 1 })
  for (let i = 0; i < 200; i++) full.add(`i${i}`)
  t.equal(full.fillRatio(), 1)
  t.equal(full.estimatedCardinality(), Infinity, 'a saturated filter cannot estimate')
  t.equal(full.estimatedFalsePositiveRate(), 1)
})

t.test('accuracy at capacity and at twice capacity (p = 0.01, fixed seed)', async (t) => {
  const n = 20_000
  const f = BloomFilter.byAccuracy({ capacity: n, errorRate: 0.01, seed: 20260101 })
  for (let i = 0; i < n; i++) f.add(`member:${i}`)
  const probes = 100_000
  let fp = 0
  for (let i = 0; i < probes; i++) if (f.mightContain(`outsider:${i}`)) fp++
  const rate = fp / probes
  // σ of the measured rate ≈ sqrt(0.01·0.99/1e5) ≈ 0.00031; the band [0.5p, 1.5p] is ±16σ
  t.ok(rate >= 0.005 && rate <= 0.015, `measured FP at capacity ${rate}`)
  // Swamidass–Baldi estimate at capacity: its relative standard error here is well under 1%
  t.ok(Math.abs(f.estimatedCardinality() / n - 1) < 0.03, `estimated cardinality ${f.estimatedCardinality()}`)
  for (let i = n; i < 2 * n; i++) f.add(`member:${i}`)
  let fp2 = 0
  for (let i = 0; i < probes; i++) if (f.mightContain(`outsider:${i}`)) fp2++
  const measured = fp2 / probes
  const estimated = f.estimatedFalsePositiveRate()
  t.ok(Math.abs(estimated - measured) / measured < 0.25, `at 2× capacity: estimated ${estimated}, measured ${measured}`)
})

t.test('merge: members of both, commutative, associative over every order, refuses mismatches', async (t) => {
  const mk = (seed: number, from: number) => {
    const f = BloomFilter.bySize({ bits: 2000, hashes: 5, seed })
    for (let i = from; i < from + 100; i++) f.add(`k${i}`)
    return f
  }
  const a = mk(7, 0)
  const b = mk(7, 100)
  const c = mk(7, 200)
  const u = mergedAll(a, b)
  for (let i = 0; i < 200; i++) if (!t.ok(u.mightContain(`k${i}`))) t.bailout()
  t.equal(u.addedCount, 200)
  t.same(u.serialize(), mergedAll(b, a).serialize(), 'a∪b = b∪a')
  const orders = [
    [a, b, c],
    [a, c, b],
    [b, a, c],
    [b, c, a],
    [c, a, b],
    [c, b, a],
  ]
  const results = orders.map(([x, y, z]) => Buffer.from(mergedAll(x, y, z).serialize()).toString('hex'))
  t.equal(new Set(results).size, 1, 'every order gives the same frame')
  const again = mergedAll(a, a.clone())
  t.same(
    readFrame(again.serialize(), FAMILY.bloom, BLOOM_FORMAT_VERSION).payload,
    readFrame(a.serialize(), FAMILY.bloom, BLOOM_FORMAT_VERSION).payload,
    'idempotent on the bits',
  )

  t.ok(a.isCompatible(b))
  const other: Array<[string, BloomFilter]> = [
    ['bits', BloomFilter.bySize({ bits: 2001, hashes: 5, seed: 7 })],
    ['hashes', BloomFilter.bySize({ bits: 2000, hashes: 6, seed: 7 })],
    ['seed', BloomFilter.bySize({ bits: 2000, hashes: 5, seed: 8 })],
    ['hasher', BloomFilter.bySize({ bits: 2000, hashes: 5, hasher: sipHash(7) })],
  ]
  for (const [what, o] of other) {
    t.notOk(a.isCompatible(o), what)
    t.throws(() => a.merge(o), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: new RegExp(what) }, what)
  }
  t.throws(() => a.merge(a), { code: 'ERR_GRUDGE_MERGE_SELF' })
  t.throws(() => a.merge({} as never), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE' })
})

t.test('merge laws over random item sets (property)', async (t) => {
  const items = fc.array(fc.string({ maxLength: 12 }), { maxLength: 40 })
  fc.assert(
    fc.property(items, items, items, fc.integer({ min: 1, max: 700 }), (xs, ys, zs, bits) => {
      const mk = (its: string[]) => {
        const f = BloomFilter.bySize({ bits, hashes: 4, seed: 21 })
        for (const it of its) f.add(it)
        return f
      }
      const hex = (f: BloomFilter) => Buffer.from(f.serialize()).toString('hex')
      const ab = mergedAll(mk(xs), mk(ys))
      const commutes = hex(ab) === hex(mergedAll(mk(ys), mk(xs)))
      const associates = hex(mergedAll(mk(xs), mk(ys), mk(zs))) === hex(mergedAll(mk(xs), mergedAll(mk(ys), mk(zs))))
      // the merge holds exactly the bits of a filter that saw both sets
      const direct = mk([...xs, ...ys])
      let sameBits = true
      for (let i = 0; i < bits; i++) if (ab.isBitSet(i) !== direct.isBitSet(i)) sameBits = false
      return (
        commutes &&
        associates &&
        sameBits &&
        ab.setBitCount === direct.setBitCount &&
        [...xs, ...ys].every((v) => ab.mightContain(v))
      )
    }),
    { seed: 5150, numRuns: 150 },
  )
  t.pass()
})

t.test('serialize / deserialize round-trips every bit length exactly', async (t) => {
  for (let bits = 1; bits <= 200; bits++) {
    const f = BloomFilter.bySize({ bits, hashes: 3, seed: bits })
    for (let i = 0; i < (bits % 17) + 1; i++) f.add(`v${i}`)
    const bytes = f.serialize()
    const g = BloomFilter.deserialize(bytes)
    const same =
      g.bitCount === bits &&
      g.hashCount === 3 &&
      g.addedCount === f.addedCount &&
      g.setBitCount === f.setBitCount &&
      Buffer.from(g.serialize()).equals(Buffer.from(bytes))
    if (!same) t.fail(`bits = ${bits}`)
    for (let i = 0; i < bits; i++) if (g.isBitSet(i) !== f.isBitSet(i)) t.fail(`bits = ${bits}, bit ${i}`)
  }
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 100_000 }),
      fc.integer({ min: 1, max: 20 }),
      fc.array(fc.string(), { maxLength: 50 }),
      (bits, hashes, items) => {
        const f = BloomFilter.bySize({ bits, hashes, hasher: sipHash(bits) })
        for (const it of items) f.add(it)
        const g = BloomFilter.deserialize(f.serialize())
        return (
          g.hasher.name === 'siphash' &&
          items.every((it) => g.mightContain(it)) &&
          Buffer.from(g.serialize()).equals(Buffer.from(f.serialize()))
        )
      },
    ),
    { seed: 99, numRuns: 100 },
  )
  t.pass()
})

t.test('frame layout: params and bit order as drawn in spec/bloom.md', async (t) => {
  const f = BloomFilter.bySize({ bits: 13, hashes: 2, seed: '000102030405060708090a0b0c0d0e0f' })
  f.add('a')
  f.add('b')
  const bytes = f.serialize()
  const frame = readFrame(bytes, FAMILY.bloom, BLOOM_FORMAT_VERSION)
  t.equal(bytes[4], 3, 'family 3')
  t.equal(bytes[5], 2, 'version 2')
  t.same(
    [...frame.seed],
    Array.from({ length: 16 }, (_, i) => i),
    'the seed bytes',
  )
  const dv = new DataView(frame.params.buffer, frame.params.byteOffset, 24)
  t.equal(frame.params.length, 24)
  t.equal(dv.getUint32(0, true) + dv.getUint32(4, true) * 2 ** 32, 13, 'bits u64 at params 0')
  t.equal(dv.getUint32(8, true), 2, 'hashes u32 at params 8')
  t.equal(frame.params[12], 3, 'hasher id 3 = murmur3 at params 12')
  t.equal(dv.getUint32(16, true), 2, 'addedCount u64 at params 16')
  t.equal(frame.payload.length, 2, 'ceil(13 / 8) payload bytes')
  for (let p = 0; p < 13; p++) {
    t.equal(((frame.payload[p >> 3] >> (p & 7)) & 1) === 1, f.isBitSet(p), `bit ${p} at byte ${p >> 3} bit ${p & 7}`)
  }
  t.equal(frame.payload[1] >> 5, 0, 'bits beyond m are 0')
})

t.test('the golden v1 frame stays loadable', async (t) => {
  // test/fixtures/bloom-v1.bin: bySize({ bits: 100, hashes: 3, seed: 1 }) after adding "alpha", "beta", "gamma"
  const bytes = readFileSync(new URL('../fixtures/bloom-v1.bin', import.meta.url))
  const f = BloomFilter.deserialize(bytes)
  t.equal(f.bitCount, 100)
  t.equal(f.hashCount, 3)
  t.equal(f.addedCount, 3)
  for (const k of ['alpha', 'beta', 'gamma']) t.ok(f.mightContain(k), k)
  t.same(f.seed, murmur3(1).seed)
  t.equal(f.hasher.id, 1, 'written before 0.1.0 with murmur3x64 (id 1), read with it')
  t.equal(f.hasher.name, 'murmur3x64')
  t.equal(f.positionScheme, 1, 'a version-1 frame keeps the positions of version 1')
  // the set bits are exactly version 1's positions (64-bit Kirsch–Mitzenmacher) of the three items
  const want = new Set<number>()
  const out = new Float64Array(3)
  for (const k of ['alpha', 'beta', 'gamma']) {
    const h = new Murmur3Hasher(1, 'x64_128').hash(k)
    bloomPositions(Number(h >> 32n) | 0, Number(h & 0xffffffffn) | 0, 3, 100, out)
    for (const p of out) want.add(p)
  }
  for (let p = 0; p < 100; p++) t.equal(f.isBitSet(p), want.has(p), `bit ${p}`)
  t.same(Buffer.from(f.serialize()), bytes, 'it is written back as the same version-1 bytes')
  f.add('delta')
  t.equal(f.serialize()[5], 1, 'still version 1 after more inserts (a checkpoint keeps its positions)')
  t.ok(f.mightContain('delta'))
  const fresh = BloomFilter.bySize({ bits: 100, hashes: 3, hasher: new Murmur3Hasher(1, 'x64_128') })
  t.equal(fresh.positionScheme, 2, 'a new filter uses the positions of version 2')
  t.equal(fresh.isCompatible(f), false, 'filters of different position versions never merge')
  t.throws(() => fresh.merge(f), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE' })
})

t.test('the golden v2 frame stays loadable, its bits the positions of version 2', async (t) => {
  // test/fixtures/bloom-v2.bin (test/fixtures/make-golden-bloom.ts): bySize({ bits: 100, hashes: 3 })
  // under murmur3 (id 3) seed 1 after adding "alpha", "beta", "gamma"
  const bytes = readFileSync(new URL('../fixtures/bloom-v2.bin', import.meta.url))
  t.equal(bytes[5], 2, 'frame version 2')
  const f = BloomFilter.deserialize(bytes)
  t.equal(f.positionScheme, 2)
  t.equal(f.bitCount, 100)
  t.equal(f.hashCount, 3)
  t.equal(f.addedCount, 3)
  t.equal(f.hasher.id, 3)
  t.same(f.seed, murmur3(1).seed)
  const want = new Set<number>()
  const out = new Float64Array(3)
  for (const k of ['alpha', 'beta', 'gamma']) {
    const h = murmur3(1).hash(k)
    t.equal(bloomPositionsV2(Number(h >> 32n) | 0, Number(h & 0xffffffffn) | 0, 3, 100, out), 3)
    t.equal(new Set(out).size, 3, `${k}: three distinct positions`)
    for (const p of out) want.add(p)
  }
  for (let p = 0; p < 100; p++) t.equal(f.isBitSet(p), want.has(p), `bit ${p}`)
  const g = BloomFilter.bySize({ bits: 100, hashes: 3, hasher: murmur3(1) })
  for (const k of ['alpha', 'beta', 'gamma']) g.add(k)
  t.same(Buffer.from(g.serialize()), bytes, 'this release writes the same bytes')
})

t.test('truncated and corrupted frames are refused with a coded error', async (t) => {
  const f = BloomFilter.bySize({ bits: 61, hashes: 3, seed: 3 })
  f.add('q')
  const bytes = f.serialize()
  for (let len = 0; len < bytes.length; len++) {
    if (!t.throws(() => BloomFilter.deserialize(bytes.subarray(0, len)), { code: 'ERR_GRUDGE_FORMAT_TRUNCATED' })) {
      t.bailout(`len ${len}`)
    }
  }
  let refused = 0
  for (let i = 0; i < bytes.length * 8; i++) {
    const c = new Uint8Array(bytes)
    c[i >> 3] ^= 1 << (i & 7)
    try {
      BloomFilter.deserialize(c)
    } catch (err) {
      if (/^ERR_GRUDGE_FORMAT_/.test((err as { code: string }).code)) refused++
    }
  }
  t.equal(refused, bytes.length * 8, 'every single-bit flip is refused')
  t.throws(() => BloomFilter.deserialize(new Uint8Array([...bytes, 0])), { code: 'ERR_GRUDGE_FORMAT_INVALID' })
  t.throws(() => BloomFilter.deserialize('x' as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })

  // frames with a valid checksum but invalid fields
  const good = readFrame(bytes, FAMILY.bloom, BLOOM_FORMAT_VERSION)
  const remake = (
    edit: (p: Uint8Array, payload: Uint8Array) => void,
    over: Partial<{ family: number; version: number; flags: number }> = {},
  ) => {
    const params = new Uint8Array(good.params)
    const payload = new Uint8Array(good.payload)
    edit(params, payload)
    return writeFrame({ family: FAMILY.bloom, version: 2, flags: 0, seed: good.seed, params, payload, ...over })
  }
  const rows: Array<[string, Uint8Array, string]> = [
    ['bits 0', remake((p) => p.fill(0, 0, 8)), 'ERR_GRUDGE_FORMAT_INVALID'],
    [
      'bits 2^37',
      remake((p) => {
        p.fill(0, 0, 8)
        p[4] = 32
      }),
      'ERR_GRUDGE_FORMAT_INVALID',
    ],
    ['hashes 0', remake((p) => p.fill(0, 8, 12)), 'ERR_GRUDGE_FORMAT_INVALID'],
    [
      'unknown hasher',
      remake((p) => {
        p[12] = 9
      }),
      'ERR_GRUDGE_FORMAT_INVALID',
    ],
    [
      'reserved',
      remake((p) => {
        p[14] = 1
      }),
      'ERR_GRUDGE_FORMAT_INVALID',
    ],
    [
      'bit beyond m',
      remake((_p, pl) => {
        pl[7] |= 0x80
      }),
      'ERR_GRUDGE_FORMAT_INVALID',
    ],
    [
      'payload length',
      remake((p) => {
        p[0] = 70
      }),
      'ERR_GRUDGE_FORMAT_INVALID',
    ],
    ['flags', remake(() => {}, { flags: 1 }), 'ERR_GRUDGE_FORMAT_INVALID'],
    ['family', remake(() => {}, { family: FAMILY.sketch }), 'ERR_GRUDGE_FORMAT_FAMILY'],
    ['version', remake(() => {}, { version: 3 }), 'ERR_GRUDGE_FORMAT_VERSION'],
  ]
  for (const [what, frame, code] of rows) t.throws(() => BloomFilter.deserialize(frame), { code }, what)
})

t.test('both constructions refuse an unknown option, naming the closest one; every option passes', async (t) => {
  t.throws(
    () => BloomFilter.byAccuracy(typo<BloomFilterAccuracyOptions>({ capacity: 100, errorRate: 0.01, errorrate: 0.1 })),
    unknownOption('errorrate', 'errorRate'),
  )
  t.throws(
    () => BloomFilter.byAccuracy(typo<BloomFilterAccuracyOptions>({ capacity: 100, errorRate: 0.01, sed: 1 })),
    unknownOption('sed', 'seed'),
  )
  t.throws(
    () => BloomFilter.bySize(typo<BloomFilterSizeOptions>({ bits: 64, hashs: 3 })),
    unknownOption('hashs', 'hashes'),
  )
  const byAccuracy: Required<BloomFilterAccuracyOptions> = {
    capacity: 100,
    errorRate: 0.01,
    hasher: sipHash(),
    seed: 3,
  }
  t.same(Object.keys(byAccuracy).sort(), [...BLOOM_FILTER_ACCURACY_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => BloomFilter.byAccuracy(byAccuracy))
  const bySize: Required<BloomFilterSizeOptions> = { bits: 64, hashes: 3, hasher: murmur3(), seed: 3 }
  t.same(Object.keys(bySize).sort(), [...BLOOM_FILTER_SIZE_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => BloomFilter.bySize(bySize))
})

t.test('estimatedFalsePositiveRate of a small filter: the hypergeometric chance, as measured', async (t) => {
  // one item in 10 bits with 7 distinct positions: a non-member's 7 distinct positions all hit
  // the item's 7 bits with chance 1 / C(10, 7) = 1/120 (by hand); (X / m)^k said 0.7^7 = 0.082
  const f = BloomFilter.bySize({ bits: 10, hashes: 7, seed: 3 })
  f.add('only')
  t.equal(f.setBitCount, 7)
  t.ok(Math.abs(f.estimatedFalsePositiveRate() - 1 / 120) < 1e-15, `${f.estimatedFalsePositiveRate()}`)
  const probes = 240_000
  let fp = 0
  for (let i = 0; i < probes; i++) if (f.mightContain(`other:${i}`)) fp++
  // 2,000 expected: 3σ is about 7 %
  t.ok(Math.abs(fp / probes / (1 / 120) - 1) < 0.1, `measured ${fp / probes} against 1/120`)
})
