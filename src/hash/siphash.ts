/**
 * SipHash-2-4 (Aumasson & Bernstein, "SipHash: a fast short-input PRF", INDOCRYPT 2012;
 * reference: veorq/SipHash `siphash.c`) with a 128-bit key and a 64-bit output, written
 * for the hot path: the four 64-bit state words are carried as (hi, lo) pairs of 32-bit
 * integers in locals, and nothing is allocated per call.
 *
 * Checked against the paper's vector and the reference `vectors.h`, and differentially
 * against the `siphash` package.
 */

/**
 * The last {@link sipHash24Into} output as int32 words `[high, low]` (a typed array, so
 * that writing it allocates nothing).
 */
export const sOut = new Int32Array(2)

/**
 * The 128-bit SipHash key as four int32 words: k0 = (k0Hi, k0Lo), k1 = (k1Hi, k1Lo), each
 * the little-endian u64 reading of key bytes 0..7 and 8..15.
 */
export interface SipKey {
  readonly k0Hi: number
  readonly k0Lo: number
  readonly k1Hi: number
  readonly k1Lo: number
}

/**
 * Build a {@link SipKey} from 16 key bytes (as the reference takes `const uint8_t *k`).
 * @param key exactly 16 bytes
 */
export function sipKey(key: Uint8Array): SipKey {
  const dv = new DataView(key.buffer, key.byteOffset, key.byteLength)
  return {
    k0Lo: dv.getInt32(0, true),
    k0Hi: dv.getInt32(4, true),
    k1Lo: dv.getInt32(8, true),
    k1Hi: dv.getInt32(12, true),
  }
}

/**
 * SipHash-2-4 of `bytes[0..len)` under `key`; the 64-bit output (the reference's 8 output
 * bytes read as a little-endian u64) is written to `sOut` as `[high, low]` int32 words.
 */
export function sipHash24Into(bytes: Uint8Array, len: number, key: SipKey): void {
  sipHash24Of(bytes, len, key)
}

/**
 * {@link sipHash24Into} of the UTF-8 bytes of `s`, read straight from the string when
 * every char is ASCII (below U+0080, where a UTF-8 byte is the char code): no encoding
 * pass and no byte buffer. Writes `sOut` exactly as hashing `utf8(s)` would.
 * @returns `true` when `s` was ASCII and `sOut` holds its hash; `false` (output undefined)
 *   when `s` holds a char ≥ U+0080: the caller then encodes it and hashes the bytes
 */
export function sipHash24AsciiInto(s: string, key: SipKey): boolean {
  return sipHash24Of(s, s.length, key)
}

/** The i-th byte (or char code) of a message given as bytes or as a string. */
function at(src: Uint8Array | string, i: number): number {
  return typeof src === 'string' ? src.charCodeAt(i) : src[i]
}

/**
 * SipHash-2-4 over `src[0..len)`, bytes or the char codes of a string (one body for both,
 * so the rounds are written once; the source test is one predictable branch per 8 bytes).
 * @returns for a string, whether every char was below 0x80; for bytes, `true`
 */
function sipHash24Of(src: Uint8Array | string, len: number, key: SipKey): boolean {
  // v0 = k0 ^ "somepseu", v1 = k1 ^ "dorandom", v2 = k0 ^ "lygenera", v3 = k1 ^ "tedbytes"
  let v0h = key.k0Hi ^ 0x736f6d65
  let v0l = key.k0Lo ^ 0x70736575
  let v1h = key.k1Hi ^ 0x646f7261
  let v1l = key.k1Lo ^ 0x6e646f6d
  let v2h = key.k0Hi ^ 0x6c796765
  let v2l = key.k0Lo ^ 0x6e657261
  let v3h = key.k1Hi ^ 0x74656462
  let v3l = key.k1Lo ^ 0x79746573
  let l: number
  let t: number
  let mh: number
  let ml: number
  let c0: number
  let c1: number
  let c2: number
  let c3: number
  // OR of every char code of a string source: ≥ 0x80 iff some char is not ASCII
  let any = 0
  const end = len - (len & 7)
  let i = 0
  let last = false
  for (;;) {
    if (i < end) {
      if (typeof src === 'string') {
        c0 = src.charCodeAt(i)
        c1 = src.charCodeAt(i + 1)
        c2 = src.charCodeAt(i + 2)
        c3 = src.charCodeAt(i + 3)
        any |= c0 | c1 | c2 | c3
        ml = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
        c0 = src.charCodeAt(i + 4)
        c1 = src.charCodeAt(i + 5)
        c2 = src.charCodeAt(i + 6)
        c3 = src.charCodeAt(i + 7)
        any |= c0 | c1 | c2 | c3
        mh = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
      } else {
        ml = src[i] | (src[i + 1] << 8) | (src[i + 2] << 16) | (src[i + 3] << 24)
        mh = src[i + 4] | (src[i + 5] << 8) | (src[i + 6] << 16) | (src[i + 7] << 24)
      }
      i += 8
    } else {
      // final block: remaining bytes, length in the top byte
      ml = 0
      mh = (len & 0xff) << 24
      switch (len & 7) {
        case 7:
          c0 = at(src, i + 6)
          any |= c0
          mh |= c0 << 16
        // falls through
        case 6:
          c0 = at(src, i + 5)
          any |= c0
          mh |= c0 << 8
        // falls through
        case 5:
          c0 = at(src, i + 4)
          any |= c0
          mh |= c0
        // falls through
        case 4:
          c0 = at(src, i + 3)
          any |= c0
          ml |= c0 << 24
        // falls through
        case 3:
          c0 = at(src, i + 2)
          any |= c0
          ml |= c0 << 16
        // falls through
        case 2:
          c0 = at(src, i + 1)
          any |= c0
          ml |= c0 << 8
        // falls through
        case 1:
          c0 = at(src, i)
          any |= c0
          ml |= c0
      }
      last = true
    }
    v3h ^= mh
    v3l ^= ml
    // SipRound
    l = (v0l + v1l) | 0
    v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0
    v0l = l
    t = (v1h << 13) | (v1l >>> 19)
    v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
    v1h = t ^ v0h
    t = v0h
    v0h = v0l
    v0l = t
    l = (v2l + v3l) | 0
    v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0
    v2l = l
    t = (v3h << 16) | (v3l >>> 16)
    v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
    v3h = t ^ v2h
    l = (v0l + v3l) | 0
    v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0
    v0l = l
    t = (v3h << 21) | (v3l >>> 11)
    v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
    v3h = t ^ v0h
    l = (v2l + v1l) | 0
    v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0
    v2l = l
    t = (v1h << 17) | (v1l >>> 15)
    v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
    v1h = t ^ v2h
    t = v2h
    v2h = v2l
    v2l = t
    // SipRound
    l = (v0l + v1l) | 0
    v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0
    v0l = l
    t = (v1h << 13) | (v1l >>> 19)
    v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
    v1h = t ^ v0h
    t = v0h
    v0h = v0l
    v0l = t
    l = (v2l + v3l) | 0
    v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0
    v2l = l
    t = (v3h << 16) | (v3l >>> 16)
    v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
    v3h = t ^ v2h
    l = (v0l + v3l) | 0
    v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0
    v0l = l
    t = (v3h << 21) | (v3l >>> 11)
    v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
    v3h = t ^ v0h
    l = (v2l + v1l) | 0
    v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0
    v2l = l
    t = (v1h << 17) | (v1l >>> 15)
    v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
    v1h = t ^ v2h
    t = v2h
    v2h = v2l
    v2l = t
    v0h ^= mh
    v0l ^= ml
    if (last) break
  }
  v2l ^= 0xff
  // SipRound
  l = (v0l + v1l) | 0
  v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v1h << 13) | (v1l >>> 19)
  v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
  v1h = t ^ v0h
  t = v0h
  v0h = v0l
  v0l = t
  l = (v2l + v3l) | 0
  v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v3h << 16) | (v3l >>> 16)
  v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
  v3h = t ^ v2h
  l = (v0l + v3l) | 0
  v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v3h << 21) | (v3l >>> 11)
  v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
  v3h = t ^ v0h
  l = (v2l + v1l) | 0
  v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v1h << 17) | (v1l >>> 15)
  v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
  v1h = t ^ v2h
  t = v2h
  v2h = v2l
  v2l = t
  // SipRound
  l = (v0l + v1l) | 0
  v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v1h << 13) | (v1l >>> 19)
  v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
  v1h = t ^ v0h
  t = v0h
  v0h = v0l
  v0l = t
  l = (v2l + v3l) | 0
  v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v3h << 16) | (v3l >>> 16)
  v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
  v3h = t ^ v2h
  l = (v0l + v3l) | 0
  v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v3h << 21) | (v3l >>> 11)
  v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
  v3h = t ^ v0h
  l = (v2l + v1l) | 0
  v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v1h << 17) | (v1l >>> 15)
  v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
  v1h = t ^ v2h
  t = v2h
  v2h = v2l
  v2l = t
  // SipRound
  l = (v0l + v1l) | 0
  v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v1h << 13) | (v1l >>> 19)
  v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
  v1h = t ^ v0h
  t = v0h
  v0h = v0l
  v0l = t
  l = (v2l + v3l) | 0
  v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v3h << 16) | (v3l >>> 16)
  v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
  v3h = t ^ v2h
  l = (v0l + v3l) | 0
  v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v3h << 21) | (v3l >>> 11)
  v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
  v3h = t ^ v0h
  l = (v2l + v1l) | 0
  v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v1h << 17) | (v1l >>> 15)
  v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
  v1h = t ^ v2h
  t = v2h
  v2h = v2l
  v2l = t
  // SipRound
  l = (v0l + v1l) | 0
  v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v1h << 13) | (v1l >>> 19)
  v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l
  v1h = t ^ v0h
  t = v0h
  v0h = v0l
  v0l = t
  l = (v2l + v3l) | 0
  v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v3h << 16) | (v3l >>> 16)
  v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l
  v3h = t ^ v2h
  l = (v0l + v3l) | 0
  v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~l)) >>> 31)) | 0
  v0l = l
  t = (v3h << 21) | (v3l >>> 11)
  v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l
  v3h = t ^ v0h
  l = (v2l + v1l) | 0
  v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~l)) >>> 31)) | 0
  v2l = l
  t = (v1h << 17) | (v1l >>> 15)
  v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l
  v1h = t ^ v2h
  t = v2h
  v2h = v2l
  v2l = t
  sOut[0] = v0h ^ v1h ^ v2h ^ v3h
  sOut[1] = v0l ^ v1l ^ v2l ^ v3l
  return typeof src !== 'string' || any < 0x80
}
