import t from 'tap'
import { Murmur3Hasher, murmur3 } from '../../src/hash/hasher.js'
import { m86Out, murmur3x86_128AsciiInto, murmur3x86_128Into } from '../../src/hash/murmur3.js'
// @ts-expect-error no types shipped
import MurmurHashRef from 'murmurhash3js-revisited'

// Expected values: shared/REFERENCE-VECTORS.md (aappleby/smhasher reference C, git t0095, karanlyons)
const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i)
const hex = (s: string) => Uint8Array.from(s.match(/../g)!.map((b) => parseInt(b, 16)))

t.test('MurmurHash3_x86_32 reference vectors', async (t) => {
  const rows: Array<[string | Uint8Array, number, number]> = [
    ['', 0, 0x00000000],
    ['', 1, 0x514e28b7],
    ['', 0xffffffff, 0x81f16f39],
    [hex('00'), 0, 0x514e28b7],
    [hex('00000000'), 0, 0x2362f9de],
    [hex('ffffffff'), 0, 0x76293b50],
    ['a', 0, 0x3c2569b2],
    ['a', 1, 1485495528],
    ['abc', 0, 0xb3dd93fa],
    ['abcd', 0, 0x43ed676a],
    ['foo', 0, 4138058784],
    ['hello', 0, 0x248bfa47],
    ['Hello world!', 0, 0x627b0c2c],
    ['The quick brown fox jumps over the lazy dog', 0, 0x2e4ff723],
    ['The quick brown fox jumps over the lazy dog', 0x9747b28c, 0x2fa826cd],
    ['My hovercraft is full of eels.', 0, 2953494853],
    ['My hovercraft is full of eels.', 25, 2520298415],
    ['I will not buy this record, it is scratched.', 0, 2832214938],
    ['My 🚀 is full of 🦎.', 0, 1818098979],
    ['吉 星 高 照', 0, 3435142074],
    ['Җ', 1, 2673312764],
    ['é', 0, 0x10110787],
    [hex('99aabbccddeeff'), 0, 0xa183ccfd],
    [bytes(2), 0, 0x70e1a2c0],
    [bytes(3), 0, 0x51d4d0d7],
    [bytes(4), 0, 0xf4c0ec39],
    [bytes(5), 0, 0xcca4dccb],
    [bytes(8), 0, 0xd161d673],
    [bytes(9), 0, 0xe7e27a50],
    [bytes(12), 0, 0x064ea88f],
    [bytes(13), 0, 0x60f00008],
    [bytes(15), 0, 0x5bd6952d],
    [bytes(16), 0, 0x191573dd],
    [bytes(17), 0, 0xcbe58dc6],
    [bytes(31), 0, 0x64426ad6],
    [bytes(32), 0, 0xcac37638],
    [bytes(33), 0, 0x5460867a],
    ['a'.repeat(300), 0, 0x430c10f3],
  ]
  for (const [input, seed, expected] of rows) {
    t.equal(
      murmur3(seed).hash32(input),
      expected,
      `${typeof input === 'string' ? JSON.stringify(input.slice(0, 20)) : `bytes(${input.length})`} seed ${seed}`,
    )
  }
})

t.test('MurmurHash3_x64_128 reference vectors', async (t) => {
  const rows: Array<[string | Uint8Array, number, string, string]> = [
    ['', 0, '0000000000000000', '0000000000000000'],
    ['', 1, '4610abe56eff5cb5', '51622daa78f83583'],
    [hex('00'), 0, '4610abe56eff5cb5', '51622daa78f83583'],
    ['a', 0, '85555565f6597889', 'e6b53a48510e895a'],
    ['hell', 0, '629942693e10f867', '92db0b82baeb5347'],
    ['hello', 1, 'a78ddff5adae8d10', '128900ef20900135'],
    ['hello ', 2, '8a486b23f422e826', 'f962a2c58947765f'],
    ['hello w', 3, '2ea59f466f6bed8c', 'c610990acc428a17'],
    ['hello wo', 4, '79f6305a386c572c', '46305aed3483b94e'],
    ['hello wor', 5, 'c2219d213ec1f1b5', 'a1d8e2e0a52785bd'],
    ['The quick brown fox jumps over the lazy dog', 0, 'e34bbc7bbc071b6c', '7a433ca9c49a9347'],
    ['The quick brown fox jumps over the lazy cog', 0, '658ca970ff85269a', '43fee3eaa68e5c3e'],
    ['The quick brown fox jumps over the lazy dog', 0x9747b28c, '738a7f3bd2633121', 'f94573727ec016e5'],
    ['The quick brown fox jumps over the lazy cog', 0x9747b28c, 'b8cd57b070826194', '556f455b5873f83c'],
    ["I will not buy this tobacconist's, it is scratched.", 0, 'd30654abbd8227e3', '67d73523f0079673'],
    ['Hello world', 0, 'bd656d29d21ac009', '4ab5b5cd54eb2cb3'],
    ['hash', 0, '4ab2e1e022f63e2e', '9add75dfcea2dede'],
    [hex('00000000'), 0, 'cfa0f7ddd84c76bc', '589623161cf526f1'],
    [hex('ffffffff'), 0, '43da45eb34664641', 'c715574845878f6c'],
    [bytes(2), 0, '7cb3f5c58dab264c', 'f03c01326ec2e044'],
    [bytes(3), 0, 'b872a12fef53e6be', 'fb6255c252b396b6'],
    [bytes(4), 0, 'e1c594ae0ddfaf10', 'd3d605bd13c2fde2'],
    [bytes(5), 0, '41ee8cd4a6f94036', 'f8d0155e630c23f6'],
    [bytes(8), 0, '47a7e1bdd68e2fc8', '60e6ee02ec31dcc7'],
    [bytes(9), 0, 'fbb4cb0f6e812d32', '78de751d0200ffb9'],
    [bytes(12), 0, 'b35da7e69212a5ca', '8075f146ecf75346'],
    [bytes(13), 0, '4b52d9f2c55f41c2', '84ff869eafa6d8fc'],
    [bytes(15), 0, '47231598fd4925e9', 'cd846dee88c67de9'],
    [bytes(16), 0, '444924b591903f30', 'ab906456762fe845'],
    [bytes(17), 0, '5c76f40f9fe7c20e', 'c15f026b9edaa824'],
    [bytes(31), 0, '053dd3e1a32cd094', '9ee59aefb4005490'],
    [bytes(32), 0, 'c66d9022b62f500f', '1c050a6e34c31151'],
    [bytes(33), 0, '7d41281bfaba4612', '55ac8073a7d6a30b'],
    ['a'.repeat(300), 0, '2a9d9b8627c2b244', 'd4bb386d7824206f'],
  ]
  for (const [input, seed, h1, h2] of rows) {
    const [a, b] = murmur3(seed).hash128(input)
    const label = typeof input === 'string' ? JSON.stringify(input.slice(0, 20)) : `bytes(${input.length})`
    t.equal(a.toString(16).padStart(16, '0'), h1, `${label} seed ${seed} h1`)
    t.equal(b.toString(16).padStart(16, '0'), h2, `${label} seed ${seed} h2`)
    t.equal(new Murmur3Hasher(seed, 'x64_128').hash(input), a, `${label}: hash() of variant x64_128 is h1`)
  }
})

// SMHasher KeysetTest.cpp VerificationTest, ported: covers every length 0..255 and every tail path.
function verification(fn: (key: Uint8Array, seed: number) => Uint8Array, outBytes: number): number {
  const buf = new Uint8Array(256 * outBytes)
  for (let i = 0; i < 256; i++) buf.set(fn(bytes(i), 256 - i), i * outBytes)
  const fin = fn(buf, 0)
  return (fin[0] | (fin[1] << 8) | (fin[2] << 16) | (fin[3] << 24)) >>> 0
}

t.test('SMHasher verification values', async (t) => {
  const x86 = (key: Uint8Array, seed: number) => {
    const v = murmur3(seed).hash32(key)
    return Uint8Array.of(v & 255, (v >>> 8) & 255, (v >>> 16) & 255, v >>> 24)
  }
  const x64 = (key: Uint8Array, seed: number) => {
    const [h1, h2] = murmur3(seed).hash128(key)
    const out = new Uint8Array(16)
    const dv = new DataView(out.buffer)
    dv.setBigUint64(0, h1, true)
    dv.setBigUint64(8, h2, true)
    return out
  }
  t.equal(verification(x86, 4), 0xb0f57ee3, 'Murmur3A')
  t.equal(verification(x64, 16), 0x6384ba69, 'Murmur3F')
})

t.test('differential against murmurhash3js-revisited on random inputs of every length 0..300', async (t) => {
  let state = 0x12345678
  const rnd = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 24
  let mismatches = 0
  let checked = 0
  for (let len = 0; len <= 300; len++) {
    for (let rep = 0; rep < 12; rep++) {
      const key = Uint8Array.from({ length: len }, rnd)
      const seed = (rnd() << 24) | (rnd() << 8) | rnd()
      const h = murmur3(seed >>> 0)
      if (h.hash32(key) !== MurmurHashRef.x86.hash32(key, seed >>> 0)) mismatches++
      const [a, b] = h.hash128(key)
      const ours = a.toString(16).padStart(16, '0') + b.toString(16).padStart(16, '0')
      if (ours !== MurmurHashRef.x64.hash128(key, seed >>> 0)) mismatches++
      checked++
    }
  }
  t.equal(mismatches, 0, `${checked} random inputs agree`)
})

t.test('strings hash as their UTF-8 bytes, lone surrogates as EF BF BD', async (t) => {
  const h = murmur3(7)
  for (const s of ['', 'abc', 'é', '🚀', 'a\ud800b', '\udfff', 'x'.repeat(63) + '🦎', 'y'.repeat(200) + '\ud83d']) {
    t.equal(h.hash32(s), h.hash32(new Uint8Array(Buffer.from(s, 'utf8'))), JSON.stringify(s.slice(0, 8)))
    t.equal(h.hash(s), h.hash(new Uint8Array(Buffer.from(s, 'utf8'))))
  }
  t.equal(h.hash32('\ud800'), h.hash32('\ufffd'), 'lone surrogates collide with U+FFFD, as Buffer.from does')
})

t.test('MurmurHash3_x86_128 (the 64-bit hash of murmur3): SMHasher Murmur3C and the package', async (t) => {
  const x86_128 = (key: Uint8Array, seed: number) => {
    murmur3x86_128Into(key, key.length, seed)
    return new Uint8Array(m86Out.slice().buffer) // four little-endian words h1..h4
  }
  t.equal(verification(x86_128, 16), 0xb3ece62a, 'Murmur3C verification value')
  let mismatches = 0
  let seedState = 12345
  for (let len = 0; len <= 300; len++) {
    for (let r = 0; r < 10; r++) {
      const key = Uint8Array.from(
        { length: len },
        () => (seedState = (Math.imul(seedState, 1103515245) + 12345) | 0) >>> 24,
      )
      const seed = (seedState = (Math.imul(seedState, 1103515245) + 12345) | 0) >>> 0
      murmur3x86_128Into(key, len, seed)
      const ours = [...m86Out].map((w) => (w >>> 0).toString(16).padStart(8, '0')).join('')
      if (ours !== MurmurHashRef.x86.hash128(key, seed)) mismatches++
    }
  }
  t.equal(mismatches, 0, '3010 random inputs of every length 0..300 agree with murmurhash3js-revisited')
})

/** H of murmur3(seed): output bytes 0..7 of x86_128 read little-endian, from the package's hex (h1 h2 h3 h4). */
function refH(hex: string): bigint {
  return BigInt('0x' + hex.slice(8, 16) + hex.slice(0, 8))
}

t.test('murmur3(seed).hash is output bytes 0..7 of MurmurHash3_x86_128, little-endian', async (t) => {
  let state = 0x2468ace0
  const rnd = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 24
  let mismatches = 0
  let checked = 0
  for (let len = 0; len <= 300; len++) {
    for (let rep = 0; rep < 4; rep++) {
      const key = Uint8Array.from({ length: len }, rnd)
      const seed = ((rnd() << 24) | (rnd() << 8) | rnd()) >>> 0
      if (murmur3(seed).hash(key) !== refH(MurmurHashRef.x86.hash128(key, seed))) mismatches++
      checked++
    }
  }
  t.equal(mismatches, 0, `${checked} random byte keys agree with murmurhash3js-revisited x86.hash128`)
  // a worked example: "hell", seed 0 (spec/hashing.md)
  const hex = MurmurHashRef.x86.hash128(new Uint8Array(Buffer.from('hell')), 0)
  t.equal(murmur3(0).hash('hell'), refH(hex))
})

t.test('ASCII strings are hashed from their chars exactly as their UTF-8 bytes are', async (t) => {
  let state = 0x13579bdf
  const rnd = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 25 // 0..127
  let mismatches = 0
  let refused = 0
  let checked = 0
  for (let len = 0; len <= 300; len++) {
    for (let rep = 0; rep < 4; rep++) {
      const codes = Array.from({ length: len }, rnd)
      const s = String.fromCharCode(...codes)
      const seed = ((rnd() << 24) | (rnd() << 12) | rnd()) >>> 0
      if (!murmur3x86_128AsciiInto(s, seed)) refused++
      const ours = [...m86Out].map((w) => (w >>> 0).toString(16).padStart(8, '0')).join('')
      if (ours !== MurmurHashRef.x86.hash128(new Uint8Array(Buffer.from(s, 'utf8')), seed)) mismatches++
      checked++
      // one non-ASCII char anywhere (first, middle, last, in a block or in the tail) sends it to the byte path
      if (len > 0) {
        const at = rnd() % len
        const wide = s.slice(0, at) + String.fromCharCode(0x80 + (rnd() % 0x700)) + s.slice(at + 1)
        t.equal(murmur3x86_128AsciiInto(wide, seed), false)
        if (
          murmur3(seed).hash(wide) !== refH(MurmurHashRef.x86.hash128(new Uint8Array(Buffer.from(wide, 'utf8')), seed))
        )
          mismatches++
      }
    }
  }
  t.equal(refused, 0, 'no ASCII string is refused')
  t.equal(mismatches, 0, `${checked} random ASCII strings (and as many with one wide char) agree with the package`)
  for (const s of ['\x7f'.repeat(16), '\x80', 'é', 'a'.repeat(15) + '\u0100', '🚀'.repeat(9)])
    t.equal(
      murmur3(5).hash(s),
      refH(MurmurHashRef.x86.hash128(new Uint8Array(Buffer.from(s, 'utf8')), 5)),
      JSON.stringify(s.slice(0, 4)),
    )
})
