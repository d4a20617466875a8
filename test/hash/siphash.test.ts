import t from 'tap'
import { sipHash } from '../../src/hash/hasher.js'
// @ts-expect-error no types shipped
import siphashRef from 'siphash'

// Expected values: shared/REFERENCE-VECTORS.md (veorq/SipHash vectors.h; the paper's Appendix A)
const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i)
const K = bytes(16)

t.test('SipHash-2-4 reference vectors', async (t) => {
  const h = sipHash(K)
  t.equal(h.hash(bytes(15)), 0xa129ca6149be45e5n, 'paper Appendix A')
  t.equal(h.hash(bytes(0)), 0x726fdb47dd0e0e31n)
  t.equal(h.hash(bytes(1)), 0x74f839c593dc67fdn)
  t.equal(h.hash(bytes(7)), 0xab0200f58b01d137n)
  t.equal(h.hash(bytes(8)), 0x93f5f5799a932462n)
  t.equal(h.hash(bytes(16)), 0x3f2acc7f57c29bdbn)
  t.equal(h.hash(bytes(63)), 0x958a324ceb064572n)
  t.equal(h.hash('hello'), 0x004fb3985767df81n)
  t.equal(sipHash(new Uint8Array(16)).hash(''), 0x1e924b9d737700d7n)
  const ascii = new Uint8Array(Buffer.from('0123456789ABCDEF'))
  t.equal(sipHash(ascii).hash('a'), 12398370950267227270n)
  t.equal(sipHash(ascii).hash(''), 3627314469837380007n)
})

t.test('differential against the siphash package on random inputs of every length 0..300', async (t) => {
  let state = 0x9e3779b9
  const rnd = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 24
  let mismatches = 0
  let checked = 0
  for (let len = 0; len <= 300; len++) {
    for (let rep = 0; rep < 10; rep++) {
      const key = Uint8Array.from({ length: 16 }, rnd)
      const msg = Uint8Array.from({ length: len }, rnd)
      const words = [0, 4, 8, 12].map((o) => new DataView(key.buffer).getUint32(o, true)) // the package takes four little-endian u32 words
      const ref = siphashRef.hash(words, msg)
      const expected = (BigInt(ref.h >>> 0) << 32n) | BigInt(ref.l >>> 0)
      if (sipHash(key).hash(msg) !== expected) mismatches++
      checked++
    }
  }
  t.equal(mismatches, 0, `${checked} random inputs agree`)
})

t.test('ASCII strings are hashed from their chars exactly as their UTF-8 bytes are', async (t) => {
  let state = 0x2545f491
  const rnd = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) >>> 24
  let mismatches = 0
  let checked = 0
  const expectedOf = (key: Uint8Array, msg: Uint8Array): bigint => {
    const ref = siphashRef.hash(
      [0, 4, 8, 12].map((o) => new DataView(key.buffer).getUint32(o, true)),
      msg,
    )
    return (BigInt(ref.h >>> 0) << 32n) | BigInt(ref.l >>> 0)
  }
  for (let len = 0; len <= 300; len++) {
    for (let rep = 0; rep < 4; rep++) {
      const key = Uint8Array.from({ length: 16 }, rnd)
      const s = String.fromCharCode(...Array.from({ length: len }, () => rnd() & 0x7f))
      const h = sipHash(key)
      if (h.hash(s) !== expectedOf(key, new Uint8Array(Buffer.from(s, 'utf8')))) mismatches++
      checked++
      // one char at or above U+0080 anywhere (a full block or the final one) takes the byte path
      if (len > 0) {
        const at = rnd() % len
        const wide = s.slice(0, at) + String.fromCharCode(0x80 + ((rnd() << 3) % 0x780)) + s.slice(at + 1)
        if (h.hash(wide) !== expectedOf(key, new Uint8Array(Buffer.from(wide, 'utf8')))) mismatches++
      }
    }
  }
  t.equal(mismatches, 0, `${checked} random ASCII strings (and as many with one wide char) agree with the package`)
})
