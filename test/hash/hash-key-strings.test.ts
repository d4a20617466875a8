import t, { type Test } from 'tap'
import { Murmur3Hasher, murmur3, sipHash, type Hasher } from '../../src/hash/hasher.js'
// @ts-expect-error no types shipped
import MurmurHashRef from 'murmurhash3js-revisited'
// @ts-expect-error no types shipped
import siphashRef from 'siphash'

// hashKey(string) reads ASCII strings from their chars and encodes any other string as
// UTF-8 first. Every string below is checked, for the three hashers, against the reference
// packages run on Buffer.from(s, 'utf8'): the edges of that split (U+0080..U+00FF, one byte
// in V8's string but two in UTF-8; lone surrogates; a wide char only in the tail; V8's
// cons and sliced strings; 64 KiB keys) and every length around the 8- and 16-byte blocks.

const SEED = Uint8Array.from({ length: 16 }, (_, i) => (i * 37 + 11) & 0xff)
const seed32 = (SEED[0] | (SEED[1] << 8) | (SEED[2] << 16) | (SEED[3] << 24)) >>> 0
const sipKeyWords = [0, 4, 8, 12].map((o) => new DataView(SEED.buffer).getUint32(o, true))

const refs: Array<{ name: string; hasher: Hasher; ref: (b: Uint8Array) => bigint }> = [
  {
    name: 'murmur3 (x86_128 bytes 0..7)',
    hasher: murmur3(SEED),
    ref: (b) => {
      const hex: string = MurmurHashRef.x86.hash128(b, seed32)
      return BigInt('0x' + hex.slice(8, 16) + hex.slice(0, 8))
    },
  },
  {
    name: 'murmur3x64 (x64_128 h1)',
    hasher: new Murmur3Hasher(SEED, 'x64_128'),
    ref: (b) => BigInt('0x' + (MurmurHashRef.x64.hash128(b, seed32) as string).slice(0, 16)),
  },
  {
    name: 'siphash',
    hasher: sipHash(SEED),
    ref: (b) => {
      const r = siphashRef.hash(sipKeyWords, b) as { h: number; l: number }
      return (BigInt(r.h >>> 0) << 32n) | BigInt(r.l >>> 0)
    },
  },
]

function check(t: Test, cases: Array<[string, string]>): void {
  for (const { name, hasher, ref } of refs) {
    let mismatches = 0
    const failed: string[] = []
    for (const [label, s] of cases) {
      const expected = ref(new Uint8Array(Buffer.from(s, 'utf8')))
      hasher.hashKey(s)
      const viaKey = (BigInt(hasher.hashHi >>> 0) << 32n) | BigInt(hasher.hashLo >>> 0)
      if (viaKey !== expected || hasher.hash(s) !== expected) {
        mismatches++
        if (failed.length < 5) failed.push(label)
      }
    }
    t.equal(mismatches, 0, `${name}: ${cases.length} strings agree with the package ${failed.join(', ')}`)
  }
}

const ALPHA = 'abcdefghijklmnopqrstuvwxyz0123456789-_.:/'
const ascii = (len: number) => Array.from({ length: len }, (_, i) => ALPHA[(i * 7 + len) % ALPHA.length]).join('')

t.test('every length 0..300, ASCII and with one wide char first, last or in the middle', async (t) => {
  const cases: Array<[string, string]> = []
  for (let len = 0; len <= 300; len++) {
    const a = ascii(len)
    cases.push([`ascii ${len}`, a])
    if (len === 0) continue
    for (const wide of [0x80, 0xe9, 0xff, 0x100, 0x7ff, 0x800, 0xfffd, 0xffff]) {
      for (const at of new Set([0, len >> 1, len - 1])) {
        cases.push([
          `U+${wide.toString(16)} at ${at} of ${len}`,
          a.slice(0, at) + String.fromCharCode(wide) + a.slice(at + 1),
        ])
      }
    }
  }
  check(t, cases)
})

t.test('U+0080..U+00FF in one-byte (latin1) strings: two UTF-8 bytes each', async (t) => {
  const cases: Array<[string, string]> = []
  for (let c = 0x80; c <= 0xff; c++) {
    for (const len of [1, 7, 8, 15, 16, 17, 33]) {
      const s = Buffer.from(ascii(len - 1) + String.fromCharCode(c), 'latin1').toString('latin1')
      cases.push([`latin1 ${c.toString(16)} len ${len}`, s])
    }
  }
  check(t, cases)
})

t.test('surrogates: pairs, lone highs and lows (as U+FFFD), in blocks and tails', async (t) => {
  const cases: Array<[string, string]> = []
  for (const len of [0, 1, 6, 7, 8, 14, 15, 16, 17, 64, 65]) {
    const a = ascii(len)
    cases.push([`pair after ${len}`, a + '\ud83d\ude80'])
    cases.push([`pair before ${len}`, '\ud83d\ude80' + a])
    cases.push([`lone high at end ${len}`, a + '\ud83d'])
    cases.push([`lone low at end ${len}`, a + '\ude80'])
    cases.push([`reversed pair ${len}`, a + '\ude80\ud83d' + a])
  }
  check(t, cases)
})

t.test('cons, sliced and long strings', async (t) => {
  const cases: Array<[string, string]> = []
  for (const len of [1, 15, 16, 17, 100, 1000]) {
    const a = ascii(len)
    const half = a.length >> 1
    cases.push([`cons ${len}`, a.slice(0, half) + a.slice(half)])
    cases.push([`cons with é ${len}`, a.slice(0, half) + 'é' + a.slice(half)])
    const big = 'Q' + a + a + a
    cases.push([`sliced ${len}`, big.slice(1 + len, 1 + 2 * len)])
  }
  const long = 'k'.repeat(65_536)
  cases.push(['64 KiB ASCII', long])
  cases.push(['64 KiB sliced', (long + 'xyz').slice(3)])
  cases.push(['64 KiB, é at the end', long + 'é'])
  cases.push(['64 KiB, é at the start', 'é' + long])
  cases.push(['64 KiB of é', 'é'.repeat(65_536)])
  check(t, cases)
})
