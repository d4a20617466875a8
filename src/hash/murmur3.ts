/**
 * MurmurHash3 (Austin Appleby, public domain; reference: aappleby/smhasher
 * `src/MurmurHash3.cpp`), over bytes, written for the hot path: 32-bit integer math with
 * `Math.imul` and `>>> 0`, no allocation. 64-bit lanes of x64_128 are carried as (hi, lo)
 * pairs of 32-bit words.
 *
 * Checked against the reference vectors (`shared/REFERENCE-VECTORS.md`, SMHasher's
 * verification values) and, differentially, against the `murmurhash3js-revisited` package.
 */

/** High word of the last 64-bit result written by {@link murmur3x64_128Into}'s h1. */
export let outHi = 0
/** Low word of the last 64-bit result. */
export let outLo = 0
/** High/low words of h2 of the last x64_128 result. */
export let out2Hi = 0
export let out2Lo = 0

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

// Scratch results of mul64 (module-level so that no tuple is allocated).
let mHi = 0
let mLo = 0

/** (aHi,aLo) × (bHi,bLo) mod 2^64 into (mHi, mLo). */
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
  mLo = ((mid << 16) | (p00 & 0xffff)) | 0
  const carry = p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)
  mHi = (carry + Math.imul(aHi, bLo) + Math.imul(aLo, bHi)) | 0
}

// fmix64 on (fHi, fLo)
let fHi = 0
let fLo = 0
function fmix64(): void {
  fLo ^= fHi >>> 1
  mul64(fHi, fLo, 0xff51afd7 | 0, 0xed558ccd | 0)
  fHi = mHi
  fLo = mLo ^ (mHi >>> 1)
  mul64(fHi, fLo, 0xc4ceb9fe | 0, 0x1a85ec53 | 0)
  fHi = mHi
  fLo = mLo ^ (mHi >>> 1)
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
 * reference). Writes h1 to ({@link outHi}, {@link outLo}) and h2 to ({@link out2Hi},
 * {@link out2Lo}) as 32-bit words (read them with `>>> 0` for unsigned values). h1 and h2
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
    kHi = (mHi << 31) | (mLo >>> 1)
    kLo = (mLo << 31) | (mHi >>> 1)
    mul64(kHi, kLo, C2_HI, C2_LO)
    h1Hi ^= mHi
    h1Lo ^= mLo
    // h1 = rotl(h1, 27)
    t = (h1Hi << 27) | (h1Lo >>> 5)
    h1Lo = (h1Lo << 27) | (h1Hi >>> 5)
    h1Hi = t
    // h1 += h2
    sum = (h1Lo >>> 0) + (h2Lo >>> 0)
    h1Hi = (h1Hi + h2Hi + (sum > 0xffffffff ? 1 : 0)) | 0
    h1Lo = sum | 0
    // h1 = h1 * 5 + 0x52dce729
    mul64(h1Hi, h1Lo, 0, 5)
    sum = (mLo >>> 0) + 0x52dce729
    h1Hi = (mHi + (sum > 0xffffffff ? 1 : 0)) | 0
    h1Lo = sum | 0

    // k2 = block[1]
    kLo = le32(bytes, i + 8)
    kHi = le32(bytes, i + 12)
    mul64(kHi, kLo, C2_HI, C2_LO)
    // rotl 33 = swap, then rotl 1
    kHi = (mLo << 1) | (mHi >>> 31)
    kLo = (mHi << 1) | (mLo >>> 31)
    mul64(kHi, kLo, C1_HI, C1_LO)
    h2Hi ^= mHi
    h2Lo ^= mLo
    // h2 = rotl(h2, 31)
    t = (h2Hi << 31) | (h2Lo >>> 1)
    h2Lo = (h2Lo << 31) | (h2Hi >>> 1)
    h2Hi = t
    // h2 += h1
    sum = (h2Lo >>> 0) + (h1Lo >>> 0)
    h2Hi = (h2Hi + h1Hi + (sum > 0xffffffff ? 1 : 0)) | 0
    h2Lo = sum | 0
    // h2 = h2 * 5 + 0x38495ab5
    mul64(h2Hi, h2Lo, 0, 5)
    sum = (mLo >>> 0) + 0x38495ab5
    h2Hi = (mHi + (sum > 0xffffffff ? 1 : 0)) | 0
    h2Lo = sum | 0
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
    kHi = (mLo << 1) | (mHi >>> 31)
    kLo = (mHi << 1) | (mLo >>> 31)
    mul64(kHi, kLo, C1_HI, C1_LO)
    h2Hi ^= mHi
    h2Lo ^= mLo
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
    kHi = (mHi << 31) | (mLo >>> 1)
    kLo = (mLo << 31) | (mHi >>> 1)
    mul64(kHi, kLo, C2_HI, C2_LO)
    h1Hi ^= mHi
    h1Lo ^= mLo
  }

  // finalization (len < 2^32 so the high word of len is 0)
  h1Lo ^= len
  h2Lo ^= len
  sum = (h1Lo >>> 0) + (h2Lo >>> 0)
  h1Hi = (h1Hi + h2Hi + (sum > 0xffffffff ? 1 : 0)) | 0
  h1Lo = sum | 0
  sum = (h2Lo >>> 0) + (h1Lo >>> 0)
  h2Hi = (h2Hi + h1Hi + (sum > 0xffffffff ? 1 : 0)) | 0
  h2Lo = sum | 0
  fHi = h1Hi
  fLo = h1Lo
  fmix64()
  h1Hi = fHi
  h1Lo = fLo
  fHi = h2Hi
  fLo = h2Lo
  fmix64()
  h2Hi = fHi
  h2Lo = fLo
  sum = (h1Lo >>> 0) + (h2Lo >>> 0)
  h1Hi = (h1Hi + h2Hi + (sum > 0xffffffff ? 1 : 0)) | 0
  h1Lo = sum | 0
  sum = (h2Lo >>> 0) + (h1Lo >>> 0)
  h2Hi = (h2Hi + h1Hi + (sum > 0xffffffff ? 1 : 0)) | 0
  h2Lo = sum | 0
  outHi = h1Hi
  outLo = h1Lo
  out2Hi = h2Hi
  out2Lo = h2Lo
}
