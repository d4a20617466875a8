import t from 'tap'
import fc from 'fast-check'
import { keyBytes, keyLength, keyView } from '../../src/hash/key-bytes.js'

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
    t.throws(() => keyBytes(bad as unknown as string), { name: 'GrudgeTypeError', code: 'ERR_GRUDGE_KEY_INVALID' })
  }
})
