import t from 'tap'
import fc from 'fast-check'
import { keyBytes, keyLength, keyView } from '../../src/hash/key-bytes.js'
import { murmur3, sipHash } from '../../src/hash/hasher.js'

t.test('keyBytes is Buffer.from(key, "utf8") for any string, lone surrogates included', async (t) => {
  const unit = fc.oneof(
    fc.integer({ min: 0, max: 0x7f }),
    fc.integer({ min: 0x80, max: 0x7ff }),
    fc.integer({ min: 0x800, max: 0xffff }), // includes lone surrogates D800–DFFF
  )
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 200 }), (units) => {
      const s = String.fromCharCode(...units)
      keyBytes(s)
      return Buffer.from(keyView.subarray(0, keyLength)).equals(Buffer.from(s, 'utf8'))
    }),
    { seed: 11, numRuns: 3000 },
  )
  for (const s of ['\ud800', '\udfff', '\ufffd']) {
    keyBytes(s)
    t.same([...keyView.subarray(0, keyLength)], [0xef, 0xbf, 0xbd], `${JSON.stringify(s)} → EF BF BD`)
  }
  keyBytes('🦎')
  t.same([...keyView.subarray(0, keyLength)], [0xf0, 0x9f, 0xa6, 0x8e], 'a surrogate pair is one 4-byte sequence')
  t.pass('3000 random strings agree with Buffer.from')
})

t.test('bytes are used as they are; other key types throw ERR_GRUDGE_KEY_INVALID', async (t) => {
  const b = Uint8Array.of(1, 2, 3)
  keyBytes(b)
  t.equal(keyView, b)
  t.equal(keyLength, 3)
  for (const bad of [1, null, undefined, {}, ['a']]) {
    t.throws(() => keyBytes(bad as string), { name: 'GrudgeTypeError', code: 'ERR_GRUDGE_KEY_INVALID' })
  }
})

t.test('hashers read only bytes[0..len): the scratch buffer is longer than the key', async (t) => {
  // Typed arrays read undefined past their end and keep stale bytes past a shorter key:
  // a hash that read beyond len would change with whatever the previous key left there.
  for (const h of [murmur3(5), sipHash(5)]) {
    for (const len of [0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 33]) {
      const exact = Uint8Array.from({ length: len }, (_, i) => (i * 37 + 11) & 0xff)
      const padded = new Uint8Array(len + 40).fill(0xee)
      padded.set(exact)
      h.hashInto(exact, len)
      const a = [h.hashHi, h.hashLo]
      h.hashInto(padded, len)
      t.same([h.hashHi, h.hashLo], a, `${h.name}, ${len} bytes`)
    }
    keyBytes('a much longer key that leaves bytes behind in the scratch buffer')
    const long = h.hash('ab')
    t.equal(long, h.hash(Uint8Array.of(0x61, 0x62)), `${h.name}: a short key after a long one`)
  }
})
