import t from 'tap'
import {
  HASHER_IDS,
  Murmur3Hasher,
  SipHasher,
  hasherFromId,
  murmur3,
  randomSeed,
  seedBytes,
  sipHash,
} from '../../src/hash/hasher.js'
import { kmIndexes, modByReciprocal } from '../../src/hash/indexes.js'

t.test('seedBytes expands every SeedLike to 16 little-endian bytes', async (t) => {
  const le = (...b: number[]) => [...b, ...new Array<number>(16 - b.length).fill(0)]
  t.same([...seedBytes(0)], le())
  t.same([...seedBytes(0x0102)], le(0x02, 0x01), 'a number, little-endian')
  t.same([...seedBytes(0x0102n)], le(0x02, 0x01), 'a bigint, little-endian')
  t.same([...seedBytes((1n << 128n) - 1n)], new Array<number>(16).fill(0xff), 'the widest bigint')
  t.same([...seedBytes('000102030405060708090a0b0c0d0e0F')], [...Array(16).keys()], '32 hex digits, in order')
  const bytes = Uint8Array.from({ length: 16 }, (_, i) => i)
  const copy = seedBytes(bytes)
  t.same([...copy], [...bytes])
  bytes[0] = 99
  t.equal(copy[0], 0, 'bytes are copied')
})

t.test('seedBytes refuses bad seeds naming the option', async (t) => {
  for (const bad of [-1, 1.5, 2 ** 53, -1n, 1n << 128n, 'abc', 'zz'.repeat(16), new Uint8Array(15), {}, null])
    t.throws(() => seedBytes(bad as never, 'sketch.seed'), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /^option "sketch\.seed": expected 16 bytes/,
    })
})

t.test('hashInto over bytes gives the same 64 bits as hash() over the key', async (t) => {
  const keys = ['', 'a', '203.0.113.7', 'é∑ 🙂', 'k'.repeat(65), 'ü'.repeat(200)]
  for (const h of [murmur3(7), sipHash(7), new Murmur3Hasher(7, 'x64_128')]) {
    for (const key of keys) {
      const bytes = new TextEncoder().encode(key)
      const padded = new Uint8Array(bytes.length + 3)
      padded.set(bytes)
      h.hashInto(padded, bytes.length)
      const words = (BigInt(h.hashHi >>> 0) << 32n) | BigInt(h.hashLo >>> 0)
      t.equal(words, h.hash(key), `${h.name}: ${JSON.stringify(key.slice(0, 8))} as UTF-8`)
      t.equal(h.hash(bytes), h.hash(key), `${h.name}: bytes and string agree`)
      h.hashKey(key)
      t.equal((BigInt(h.hashHi >>> 0) << 32n) | BigInt(h.hashLo >>> 0), words, `${h.name}: hashKey agrees`)
    }
  }
})

t.test('keys that are neither strings nor bytes are refused', async (t) => {
  for (const h of [murmur3(1), sipHash(1)])
    for (const bad of [42, null, undefined, {}, [1, 2]]) {
      t.throws(() => h.hash(bad as never), { name: 'GrudgeTypeError', code: 'ERR_GRUDGE_KEY_INVALID' })
      t.throws(() => h.hashKey(bad as never), { name: 'GrudgeTypeError', code: 'ERR_GRUDGE_KEY_INVALID' })
    }
})

t.test('seeds: withSeed, ids, frames and random defaults', async (t) => {
  const m = murmur3(1)
  const m2 = m.withSeed(2)
  t.ok(m2 instanceof Murmur3Hasher)
  t.not(m2.hash('x'), m.hash('x'), 'another seed, another hash')
  t.equal(m2.hash('x'), murmur3(2).hash('x'))
  const s = sipHash(1)
  t.ok(s.withSeed(2) instanceof SipHasher)
  t.equal(s.withSeed(2).hash('x'), sipHash(2).hash('x'))
  t.equal(m.id, 3)
  t.equal(m.id, HASHER_IDS.murmur3)
  t.equal(s.id, 2)
  t.equal(s.id, HASHER_IDS.siphash)
  const legacy = new Murmur3Hasher(1, 'x64_128')
  t.equal(legacy.id, 1)
  t.equal(legacy.name, 'murmur3x64')
  t.equal(legacy.withSeed(2).variant, 'x64_128', 'withSeed keeps the variant')
  t.not(legacy.hash('x'), m.hash('x'), 'the two variants are different functions')
  t.equal(hasherFromId(3, m.seed).hash('x'), m.hash('x'), 'id 3 + stored seed rebuilds the murmur3 hasher')
  t.equal(hasherFromId(1, m.seed).hash('x'), legacy.hash('x'), 'id 1 + stored seed rebuilds the x64_128 hasher')
  t.equal(hasherFromId(2, s.seed).hash('x'), s.hash('x'), 'id 2 + stored seed rebuilds the SipHash hasher')
  for (const bad of [0, 4, 255]) t.throws(() => hasherFromId(bad, m.seed), { code: 'ERR_GRUDGE_FORMAT_INVALID' })
  t.throws(() => new Murmur3Hasher(1, 'x86_32' as never), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /variant/ })
  t.equal(randomSeed().length, 16)
  t.not(Buffer.from(randomSeed()).toString('hex'), Buffer.from(randomSeed()).toString('hex'), 'random seeds differ')
  t.not(murmur3().hash('x'), murmur3().hash('x'), 'default seeds are random')
})

t.test('kmIndexes is (h1 + i·h2) mod M with h1 = low word, h2 = high word | 1', async (t) => {
  // Values worked from the formula in Kirsch & Mitzenmacher (ESA 2006), by hand.
  const out = new Uint32Array(4)
  kmIndexes(0, 5, 4, 10, out)
  t.same([...out], [5, 6, 7, 8], 'h2 = 0 | 1 = 1')
  kmIndexes(6, 1, 4, 8, out)
  t.same([...out], [1, 0, 7, 6], 'h2 = 6 | 1 = 7: 1, 8, 15, 22 mod 8')
  kmIndexes(-1, -1, 4, 1000, out)
  // h1 = h2 = 4294967295; i·h2 exact in float64: 4294967295·k mod 1000 for k = 1..4
  t.same([...out], [295, 590, 885, 180], 'exact above 2^32 (int32 inputs read as unsigned)')
  kmIndexes(0x12345678, 0x9abcdef0, 3, 1, out)
  t.same([...out.subarray(0, 3)], [0, 0, 0], 'M = 1')
})

t.test('modByReciprocal is x mod m for every uint32 x and modulus up to 2^32', async (t) => {
  const moduli = [1, 2, 3, 7, 1000, 1024, 100_000, 65_537, 999_983, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32]
  let state = 0x8badf00d
  const rnd = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0)
  let mismatches = 0
  let checked = 0
  for (const m of moduli) {
    const invM = 1 / m
    const xs = [0, 1, m - 1, m, m + 1, 2 ** 32 - 1, 2 ** 32 - 2, 2 ** 31, 2 ** 31 - 1]
    for (let k = 1; k < 40; k++) {
      const near = Math.floor((2 ** 32 - 1) / m) // the largest quotient: its multiples sit at the rounding edges
      for (const q of [k, near - k, Math.floor(near / k)]) if (q >= 0) xs.push(q * m - 1, q * m, q * m + 1)
    }
    for (let i = 0; i < 2000; i++) xs.push(rnd())
    for (const x of xs) {
      if (x < 0 || x > 2 ** 32 - 1) continue
      // the reference: BigInt remainder
      if (BigInt(modByReciprocal(x, m, invM)) !== BigInt(x) % BigInt(m)) mismatches++
      checked++
    }
  }
  t.equal(mismatches, 0, `${checked} (x, m) pairs agree with BigInt %`)
})
