/**
 * MurmurHash3 (Austin Appleby, public domain; reference: aappleby/smhasher
 * `src/MurmurHash3.cpp`), over bytes, written for the hot path: 32-bit integer math with
 * `Math.imul` and `>>> 0`, no allocation. 64-bit lanes of x64_128 are carried as (hi, lo)
 * pairs of 32-bit words.
 *
 * Checked against the reference vectors (`shared/REFERENCE-VECTORS.md`, SMHasher's
 * verification values) and, differentially, against the `murmurhash3js-revisited` package.
 */

/**
 * The last {@link murmur3x64_128Into} result as int32 words: `[h1 high, h1 low, h2 high,
 * h2 low]` (a typed array, so that writing it allocates nothing).
 */
export const mOut = new Int32Array(4)

/**
 * MurmurHash3_x86_32 of `bytes[0..len)` with a 32-bit seed.
 * @returns the unsigned 32-bit hash, equal to the reference `MurmurHash3_x86_32` output
 */
export function murmur3x86_32(bytes: Uint8Array, len: number, seed: number): number {
  let h = seed | 0
  const nblocks = len & ~3
  let i = 0
  for (; i < nblocks; i += 4) {
    let k = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)
    k = Math.imul(k, 0xcc9e2d51)
    k = (k << 15) | (k >>> 17)
    k = Math.imul(k, 0x1b873593)
    h ^= k
    h = (h << 13) | (h >>> 19)
    h = (Math.imul(h, 5) + 0xe6546b64) | 0
  }
  let k = 0
  switch (len & 3) {
    case 3:
      k ^= bytes[i + 2] << 16
    // falls through
    case 2:
      k ^= bytes[i + 1] << 8
    // falls through
    case 1:
      k ^= bytes[i]
      k = Math.imul(k, 0xcc9e2d51)
      k = (k << 15) | (k >>> 17)
      k = Math.imul(k, 0x1b873593)
      h ^= k
  }
  h ^= len
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

// Scratch result of mul64: a typed array, not module-level lets, because a store of a
// non-Smi int32 into a module variable boxes it (a heap number per store).
const M64 = new Int32Array(2)

/** (aHi,aLo) × (bHi,bLo) mod 2^64 into M64 = [hi, lo]. */
function mul64(aHi: number, aLo: number, bHi: number, bLo: number): void {
  const a0 = aLo & 0xffff
  const a1 = aLo >>> 16
  const b0 = bLo & 0xffff
  const b1 = bLo >>> 16
  const p00 = a0 * b0
  const p01 = a0 * b1
  const p10 = a1 * b0
  const p11 = a1 * b1
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff)
  M64[1] = (mid << 16) | (p00 & 0xffff)
  const carry = p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)
  M64[0] = (carry + Math.imul(aHi, bLo) + Math.imul(aLo, bHi)) | 0
}

/** fmix64 of (hi, lo) into M64. */
function fmix64(hi: number, lo: number): void {
  lo ^= hi >>> 1
  mul64(hi, lo, 0xff51afd7 | 0, 0xed558ccd | 0)
  hi = M64[0]
  lo = M64[1] ^ (hi >>> 1)
  mul64(hi, lo, 0xc4ceb9fe | 0, 0x1a85ec53 | 0)
  hi = M64[0]
  M64[1] ^= hi >>> 1
}

const C1_HI = 0x87c37b91 | 0
const C1_LO = 0x114253d5 | 0
const C2_HI = 0x4cf5ad43 | 0
const C2_LO = 0x2745937f | 0

/** Little-endian u32 at `i` (as int32). */
function le32(b: Uint8Array, i: number): number {
  return b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)
}

/**
 * MurmurHash3_x64_128 of `bytes[0..len)` with a 32-bit seed (zero-extended, as the
 * reference). Writes h1 to `mOut[0..1]` (high, low) and h2 to
 * `mOut[2..3]` as 32-bit words (read them with `>>> 0` for unsigned values). h1 and h2
 * are the two u64 words of the reference output; its raw bytes are h1 then h2, each
 * little-endian.
 */
export function murmur3x64_128Into(bytes: Uint8Array, len: number, seed: number): void {
  let h1Hi = 0
  let h1Lo = seed | 0
  let h2Hi = 0
  let h2Lo = seed | 0
  const nblocks = len - (len & 15)
  let i = 0
  let kHi: number
  let kLo: number
  let t: number
  let sum: number
  for (; i < nblocks; i += 16) {
    // k1 = block[0]
    kLo = le32(bytes, i)
    kHi = le32(bytes, i + 4)
    mul64(kHi, kLo, C1_HI, C1_LO)
    // rotl 31
    kHi = (M64[0] << 31) | (M64[1] >>> 1)
    kLo = (M64[1] << 31) | (M64[0] >>> 1)
    mul64(kHi, kLo, C2_HI, C2_LO)
    h1Hi ^= M64[0]
    h1Lo ^= M64[1]
    // h1 = rotl(h1, 27)
    t = (h1Hi << 27) | (h1Lo >>> 5)
    h1Lo = (h1Lo << 27) | (h1Hi >>> 5)
    h1Hi = t
    // h1 += h2
    sum = (h1Lo + h2Lo) | 0
    h1Hi = (h1Hi + h2Hi + (((h1Lo & h2Lo) | ((h1Lo | h2Lo) & ~sum)) >>> 31)) | 0
    h1Lo = sum
    // h1 = h1 * 5 + 0x52dce729
    mul64(h1Hi, h1Lo, 0, 5)
    sum = (M64[1] + 0x52dce729) | 0
    h1Hi = (M64[0] + (sum >>> 0 < 0x52dce729 ? 1 : 0)) | 0
    h1Lo = sum

    // k2 = block[1]
    kLo = le32(bytes, i + 8)
    kHi = le32(bytes, i + 12)
    mul64(kHi, kLo, C2_HI, C2_LO)
    // rotl 33 = swap, then rotl 1
    kHi = (M64[1] << 1) | (M64[0] >>> 31)
    kLo = (M64[0] << 1) | (M64[1] >>> 31)
    mul64(kHi, kLo, C1_HI, C1_LO)
    h2Hi ^= M64[0]
    h2Lo ^= M64[1]
    // h2 = rotl(h2, 31)
    t = (h2Hi << 31) | (h2Lo >>> 1)
    h2Lo = (h2Lo << 31) | (h2Hi >>> 1)
    h2Hi = t
    // h2 += h1
    sum = (h2Lo + h1Lo) | 0
    h2Hi = (h2Hi + h1Hi + (((h2Lo & h1Lo) | ((h2Lo | h1Lo) & ~sum)) >>> 31)) | 0
    h2Lo = sum
    // h2 = h2 * 5 + 0x38495ab5
    mul64(h2Hi, h2Lo, 0, 5)
    sum = (M64[1] + 0x38495ab5) | 0
    h2Hi = (M64[0] + (sum >>> 0 < 0x38495ab5 ? 1 : 0)) | 0
    h2Lo = sum
  }

  const rem = len & 15
  if (rem > 8) {
    kHi = 0
    kLo = 0
    switch (rem) {
      case 15:
        kHi ^= bytes[i + 14] << 16
      // falls through
      case 14:
        kHi ^= bytes[i + 13] << 8
      // falls through
      case 13:
        kHi ^= bytes[i + 12]
      // falls through
      case 12:
        kLo ^= bytes[i + 11] << 24
      // falls through
      case 11:
        kLo ^= bytes[i + 10] << 16
      // falls through
      case 10:
        kLo ^= bytes[i + 9] << 8
      // falls through
      case 9:
        kLo ^= bytes[i + 8]
    }
    mul64(kHi, kLo, C2_HI, C2_LO)
    kHi = (M64[1] << 1) | (M64[0] >>> 31)
    kLo = (M64[0] << 1) | (M64[1] >>> 31)
    mul64(kHi, kLo, C1_HI, C1_LO)
    h2Hi ^= M64[0]
    h2Lo ^= M64[1]
  }
  if (rem > 0) {
    kHi = 0
    kLo = 0
    switch (rem > 8 ? 8 : rem) {
      case 8:
        kHi ^= bytes[i + 7] << 24
      // falls through
      case 7:
        kHi ^= bytes[i + 6] << 16
      // falls through
      case 6:
        kHi ^= bytes[i + 5] << 8
      // falls through
      case 5:
        kHi ^= bytes[i + 4]
      // falls through
      case 4:
        kLo ^= bytes[i + 3] << 24
      // falls through
      case 3:
        kLo ^= bytes[i + 2] << 16
      // falls through
      case 2:
        kLo ^= bytes[i + 1] << 8
      // falls through
      case 1:
        kLo ^= bytes[i]
    }
    mul64(kHi, kLo, C1_HI, C1_LO)
    kHi = (M64[0] << 31) | (M64[1] >>> 1)
    kLo = (M64[1] << 31) | (M64[0] >>> 1)
    mul64(kHi, kLo, C2_HI, C2_LO)
    h1Hi ^= M64[0]
    h1Lo ^= M64[1]
  }

  // finalization (len < 2^32 so the high word of len is 0)
  h1Lo ^= len
  h2Lo ^= len
  sum = (h1Lo + h2Lo) | 0
  h1Hi = (h1Hi + h2Hi + (((h1Lo & h2Lo) | ((h1Lo | h2Lo) & ~sum)) >>> 31)) | 0
  h1Lo = sum
  sum = (h2Lo + h1Lo) | 0
  h2Hi = (h2Hi + h1Hi + (((h2Lo & h1Lo) | ((h2Lo | h1Lo) & ~sum)) >>> 31)) | 0
  h2Lo = sum
  fmix64(h1Hi, h1Lo)
  h1Hi = M64[0]
  h1Lo = M64[1]
  fmix64(h2Hi, h2Lo)
  h2Hi = M64[0]
  h2Lo = M64[1]
  sum = (h1Lo + h2Lo) | 0
  h1Hi = (h1Hi + h2Hi + (((h1Lo & h2Lo) | ((h1Lo | h2Lo) & ~sum)) >>> 31)) | 0
  h1Lo = sum
  sum = (h2Lo + h1Lo) | 0
  h2Hi = (h2Hi + h1Hi + (((h2Lo & h1Lo) | ((h2Lo | h1Lo) & ~sum)) >>> 31)) | 0
  h2Lo = sum
  mOut[0] = h1Hi
  mOut[1] = h1Lo
  mOut[2] = h2Hi
  mOut[3] = h2Lo
}

/**
 * The last {@link murmur3x86_128Into} result as int32 words `[h1, h2, h3, h4]`; the
 * reference's 16 output bytes are these four words, each little-endian.
 */
export const m86Out = new Int32Array(4)

/**
 * MurmurHash3_x86_128 of `bytes[0..len)` with a 32-bit seed (reference:
 * aappleby/smhasher `MurmurHash3_x86_128`), into {@link m86Out}. All 32-bit arithmetic
 * (`Math.imul`), so several times cheaper in JavaScript than x64_128, whose 64-bit
 * multiplies must be emulated. Its output bytes 0..7 (`m86Out[1]` high, `m86Out[0]` low)
 * are the 64-bit hash of the default murmur3 (hasher id 3, spec/hashing.md). Checked
 * against SMHasher's verification value and the `murmurhash3js-revisited` package.
 */
export function murmur3x86_128Into(bytes: Uint8Array, len: number, seed: number): void {
  let h1 = seed | 0
  let h2 = h1
  let h3 = h1
  let h4 = h1
  const nblocks = len - (len & 15)
  let i = 0
  let k1: number
  let k2: number
  let k3: number
  let k4: number
  for (; i < nblocks; i += 16) {
    k1 = le32(bytes, i)
    k2 = le32(bytes, i + 4)
    k3 = le32(bytes, i + 8)
    k4 = le32(bytes, i + 12)
    k1 = Math.imul(k1, 0x239b961b)
    k1 = (k1 << 15) | (k1 >>> 17)
    h1 ^= Math.imul(k1, 0xab0e9789 | 0)
    h1 = (h1 << 19) | (h1 >>> 13)
    h1 = (h1 + h2) | 0
    h1 = (Math.imul(h1, 5) + 0x561ccd1b) | 0
    k2 = Math.imul(k2, 0xab0e9789 | 0)
    k2 = (k2 << 16) | (k2 >>> 16)
    h2 ^= Math.imul(k2, 0x38b34ae5)
    h2 = (h2 << 17) | (h2 >>> 15)
    h2 = (h2 + h3) | 0
    h2 = (Math.imul(h2, 5) + 0x0bcaa747) | 0
    k3 = Math.imul(k3, 0x38b34ae5)
    k3 = (k3 << 17) | (k3 >>> 15)
    h3 ^= Math.imul(k3, 0xa1e38b93 | 0)
    h3 = (h3 << 15) | (h3 >>> 17)
    h3 = (h3 + h4) | 0
    h3 = (Math.imul(h3, 5) + (0x96cd1c35 | 0)) | 0
    k4 = Math.imul(k4, 0xa1e38b93 | 0)
    k4 = (k4 << 18) | (k4 >>> 14)
    h4 ^= Math.imul(k4, 0x239b961b)
    h4 = (h4 << 13) | (h4 >>> 19)
    h4 = (h4 + h1) | 0
    h4 = (Math.imul(h4, 5) + 0x32ac3b17) | 0
  }
  const rem = len & 15
  k1 = 0
  k2 = 0
  k3 = 0
  k4 = 0
  switch (rem) {
    case 15:
      k4 ^= bytes[i + 14] << 16
    // falls through
    case 14:
      k4 ^= bytes[i + 13] << 8
    // falls through
    case 13:
      k4 ^= bytes[i + 12]
      k4 = Math.imul(k4, 0xa1e38b93 | 0)
      k4 = (k4 << 18) | (k4 >>> 14)
      h4 ^= Math.imul(k4, 0x239b961b)
    // falls through
    case 12:
      k3 ^= bytes[i + 11] << 24
    // falls through
    case 11:
      k3 ^= bytes[i + 10] << 16
    // falls through
    case 10:
      k3 ^= bytes[i + 9] << 8
    // falls through
    case 9:
      k3 ^= bytes[i + 8]
      k3 = Math.imul(k3, 0x38b34ae5)
      k3 = (k3 << 17) | (k3 >>> 15)
      h3 ^= Math.imul(k3, 0xa1e38b93 | 0)
    // falls through
    case 8:
      k2 ^= bytes[i + 7] << 24
    // falls through
    case 7:
      k2 ^= bytes[i + 6] << 16
    // falls through
    case 6:
      k2 ^= bytes[i + 5] << 8
    // falls through
    case 5:
      k2 ^= bytes[i + 4]
      k2 = Math.imul(k2, 0xab0e9789 | 0)
      k2 = (k2 << 16) | (k2 >>> 16)
      h2 ^= Math.imul(k2, 0x38b34ae5)
    // falls through
    case 4:
      k1 ^= bytes[i + 3] << 24
    // falls through
    case 3:
      k1 ^= bytes[i + 2] << 16
    // falls through
    case 2:
      k1 ^= bytes[i + 1] << 8
    // falls through
    case 1:
      k1 ^= bytes[i]
      k1 = Math.imul(k1, 0x239b961b)
      k1 = (k1 << 15) | (k1 >>> 17)
      h1 ^= Math.imul(k1, 0xab0e9789 | 0)
  }
  h1 ^= len
  h2 ^= len
  h3 ^= len
  h4 ^= len
  h1 = (h1 + h2 + h3 + h4) | 0
  h2 = (h2 + h1) | 0
  h3 = (h3 + h1) | 0
  h4 = (h4 + h1) | 0
  h1 = fmix32(h1)
  h2 = fmix32(h2)
  h3 = fmix32(h3)
  h4 = fmix32(h4)
  h1 = (h1 + h2 + h3 + h4) | 0
  m86Out[0] = h1
  m86Out[1] = h2 + h1
  m86Out[2] = h3 + h1
  m86Out[3] = h4 + h1
}

/**
 * MurmurHash3's 32-bit finalizer (fmix32): a bijection on 32-bit words with full avalanche.
 * @internal
 */
export function fmix32(h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b | 0)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35 | 0)
  return h ^ (h >>> 16)
}

/**
 * {@link murmur3x86_128Into} of the UTF-8 bytes of `s`, read straight from the string
 * when every char is ASCII (below U+0080, where a UTF-8 byte is the char code), so that
 * no encoding pass and no byte buffer are needed: the hot path of string keys. Writes
 * {@link m86Out} exactly as `murmur3x86_128Into(utf8(s), utf8(s).length, seed)` would.
 *
 * Its rounds repeat {@link murmur3x86_128Into}'s on purpose: one body for bytes and strings
 * (as SipHash has) measured 4–18% slower on 8- to 40-char string keys (same-process A/B,
 * Node 20), and this is the hot path of every structure.
 * @returns `true` when `s` was ASCII and {@link m86Out} holds its hash; `false` (output
 *   undefined) when `s` holds a char ≥ U+0080: the caller then encodes it as UTF-8 and
 *   hashes the bytes
 */
export function murmur3x86_128AsciiInto(s: string, seed: number): boolean {
  const len = s.length
  let h1 = seed | 0
  let h2 = h1
  let h3 = h1
  let h4 = h1
  const nblocks = len - (len & 15)
  let i = 0
  let k1: number
  let k2: number
  let k3: number
  let k4: number
  let c0: number
  let c1: number
  let c2: number
  let c3: number
  // OR of every char code: ≥ 0x80 iff some char is not ASCII
  let any = 0
  for (; i < nblocks; i += 16) {
    c0 = s.charCodeAt(i)
    c1 = s.charCodeAt(i + 1)
    c2 = s.charCodeAt(i + 2)
    c3 = s.charCodeAt(i + 3)
    any |= c0 | c1 | c2 | c3
    k1 = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
    c0 = s.charCodeAt(i + 4)
    c1 = s.charCodeAt(i + 5)
    c2 = s.charCodeAt(i + 6)
    c3 = s.charCodeAt(i + 7)
    any |= c0 | c1 | c2 | c3
    k2 = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
    c0 = s.charCodeAt(i + 8)
    c1 = s.charCodeAt(i + 9)
    c2 = s.charCodeAt(i + 10)
    c3 = s.charCodeAt(i + 11)
    any |= c0 | c1 | c2 | c3
    k3 = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
    c0 = s.charCodeAt(i + 12)
    c1 = s.charCodeAt(i + 13)
    c2 = s.charCodeAt(i + 14)
    c3 = s.charCodeAt(i + 15)
    any |= c0 | c1 | c2 | c3
    k4 = c0 | (c1 << 8) | (c2 << 16) | (c3 << 24)
    k1 = Math.imul(k1, 0x239b961b)
    k1 = (k1 << 15) | (k1 >>> 17)
    h1 ^= Math.imul(k1, 0xab0e9789 | 0)
    h1 = (h1 << 19) | (h1 >>> 13)
    h1 = (h1 + h2) | 0
    h1 = (Math.imul(h1, 5) + 0x561ccd1b) | 0
    k2 = Math.imul(k2, 0xab0e9789 | 0)
    k2 = (k2 << 16) | (k2 >>> 16)
    h2 ^= Math.imul(k2, 0x38b34ae5)
    h2 = (h2 << 17) | (h2 >>> 15)
    h2 = (h2 + h3) | 0
    h2 = (Math.imul(h2, 5) + 0x0bcaa747) | 0
    k3 = Math.imul(k3, 0x38b34ae5)
    k3 = (k3 << 17) | (k3 >>> 15)
    h3 ^= Math.imul(k3, 0xa1e38b93 | 0)
    h3 = (h3 << 15) | (h3 >>> 17)
    h3 = (h3 + h4) | 0
    h3 = (Math.imul(h3, 5) + (0x96cd1c35 | 0)) | 0
    k4 = Math.imul(k4, 0xa1e38b93 | 0)
    k4 = (k4 << 18) | (k4 >>> 14)
    h4 ^= Math.imul(k4, 0x239b961b)
    h4 = (h4 << 13) | (h4 >>> 19)
    h4 = (h4 + h1) | 0
    h4 = (Math.imul(h4, 5) + 0x32ac3b17) | 0
  }
  // tail: the remaining 0..15 chars, as the reference's switch reads the last bytes (one
  // jump, no per-char branches); each lane that holds at least one byte is mixed in
  k1 = 0
  k2 = 0
  k3 = 0
  k4 = 0
  let c: number
  switch (len & 15) {
    case 15:
      c = s.charCodeAt(i + 14)
      any |= c
      k4 ^= c << 16
    // falls through
    case 14:
      c = s.charCodeAt(i + 13)
      any |= c
      k4 ^= c << 8
    // falls through
    case 13:
      c = s.charCodeAt(i + 12)
      any |= c
      k4 ^= c
      k4 = Math.imul(k4, 0xa1e38b93 | 0)
      k4 = (k4 << 18) | (k4 >>> 14)
      h4 ^= Math.imul(k4, 0x239b961b)
    // falls through
    case 12:
      c = s.charCodeAt(i + 11)
      any |= c
      k3 ^= c << 24
    // falls through
    case 11:
      c = s.charCodeAt(i + 10)
      any |= c
      k3 ^= c << 16
    // falls through
    case 10:
      c = s.charCodeAt(i + 9)
      any |= c
      k3 ^= c << 8
    // falls through
    case 9:
      c = s.charCodeAt(i + 8)
      any |= c
      k3 ^= c
      k3 = Math.imul(k3, 0x38b34ae5)
      k3 = (k3 << 17) | (k3 >>> 15)
      h3 ^= Math.imul(k3, 0xa1e38b93 | 0)
    // falls through
    case 8:
      c = s.charCodeAt(i + 7)
      any |= c
      k2 ^= c << 24
    // falls through
    case 7:
      c = s.charCodeAt(i + 6)
      any |= c
      k2 ^= c << 16
    // falls through
    case 6:
      c = s.charCodeAt(i + 5)
      any |= c
      k2 ^= c << 8
    // falls through
    case 5:
      c = s.charCodeAt(i + 4)
      any |= c
      k2 ^= c
      k2 = Math.imul(k2, 0xab0e9789 | 0)
      k2 = (k2 << 16) | (k2 >>> 16)
      h2 ^= Math.imul(k2, 0x38b34ae5)
    // falls through
    case 4:
      c = s.charCodeAt(i + 3)
      any |= c
      k1 ^= c << 24
    // falls through
    case 3:
      c = s.charCodeAt(i + 2)
      any |= c
      k1 ^= c << 16
    // falls through
    case 2:
      c = s.charCodeAt(i + 1)
      any |= c
      k1 ^= c << 8
    // falls through
    case 1:
      c = s.charCodeAt(i)
      any |= c
      k1 ^= c
      k1 = Math.imul(k1, 0x239b961b)
      k1 = (k1 << 15) | (k1 >>> 17)
      h1 ^= Math.imul(k1, 0xab0e9789 | 0)
  }
  if (any >= 0x80) return false
  h1 ^= len
  h2 ^= len
  h3 ^= len
  h4 ^= len
  h1 = (h1 + h2 + h3 + h4) | 0
  h2 = (h2 + h1) | 0
  h3 = (h3 + h1) | 0
  h4 = (h4 + h1) | 0
  h1 = fmix32(h1)
  h2 = fmix32(h2)
  h3 = fmix32(h3)
  h4 = fmix32(h4)
  h1 = (h1 + h2 + h3 + h4) | 0
  m86Out[0] = h1
  m86Out[1] = h2 + h1
  m86Out[2] = h3 + h1
  m86Out[3] = h4 + h1
  return true
}
