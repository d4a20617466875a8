import t from 'tap'
import { crc32c } from '../../src/format/crc32c.js'

// Expected values: the CRC-32C check value ("123456789" → 0xE3069283, Castagnoli 1993 /
// the CRC catalogue) and RFC 3720 appendix B.4 (iSCSI), which lists the CRC bytes in
// transmission order (little-endian): "aa 36 91 8a" is 0x8A9136AA.
const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0))

t.test('published CRC-32C vectors', async (t) => {
  t.equal(crc32c(ascii('123456789')), 0xe3069283, 'check value')
  t.equal(crc32c(new Uint8Array(32)), 0x8a9136aa, 'RFC 3720 B.4: 32 bytes of zeros')
  t.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43, 'RFC 3720 B.4: 32 bytes of ones')
  t.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e, 'RFC 3720 B.4: incrementing')
  t.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c, 'RFC 3720 B.4: decrementing')
  t.equal(crc32c(new Uint8Array(0)), 0, 'empty input')
})

t.test('start and end select a sub-range', async (t) => {
  const padded = new Uint8Array([0xaa, 0xbb, ...ascii('123456789'), 0xcc])
  t.equal(crc32c(padded, 2, 11), 0xe3069283)
  t.equal(crc32c(padded, 2, 2), 0, 'an empty range')
  t.not(crc32c(padded), 0xe3069283, 'the whole buffer differs')
})
