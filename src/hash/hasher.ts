import { randomBytes } from 'node:crypto'
import { GrudgeError, describeValue, invalidOption } from '../errors.js'
import { keyBytes, keyLength, keyView } from './key-bytes.js'
import {
  fmix32,
  m86Out,
  mOut,
  murmur3x64_128Into,
  murmur3x86_128AsciiInto,
  murmur3x86_128Into,
  murmur3x86_32,
} from './murmur3.js'
import { sOut, sipHash24AsciiInto, sipHash24Into, sipKey, type SipKey } from './siphash.js'

/**
 * A seed: 16 bytes, or a number / bigint (its low 128 bits, little-endian), or a 32-digit
 * hex string. murmur3 uses the first 4 bytes (a little-endian u32, the reference's 32-bit
 * seed); SipHash uses all 16 as its key. Every serialized frame stores the 16 bytes.
 */
export type SeedLike = Uint8Array | number | bigint | string

/**
 * Stable numeric ids of the 64-bit hash functions, stored in binary frames:
 * 3 = `'murmur3'` (the default: the first 8 bytes of MurmurHash3_x86_128), 2 = `'siphash'`
 * (SipHash-2-4), 1 = `'murmur3x64'` (h1 of MurmurHash3_x64_128: the default of frames
 * written before 0.1.0, still read, and built by `new Murmur3Hasher(seed, 'x64_128')`).
 * @internal
 */
export const HASHER_IDS = { murmur3x64: 1, siphash: 2, murmur3: 3 } as const satisfies Record<HasherName, number>
/** Name of a hash function: `'murmur3'`, `'siphash'` or `'murmur3x64'`. */
export type HasherName = 'murmur3' | 'siphash' | 'murmur3x64'

/**
 * Whether `id` is one of the frame's hasher ids (1, 2 or 3).
 * @internal
 */
export function isHasherId(id: number): boolean {
  return id === HASHER_IDS.murmur3 || id === HASHER_IDS.siphash || id === HASHER_IDS.murmur3x64
}

/**
 * Normalize a {@link SeedLike} to 16 bytes.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a negative, non-integer or
 * over-wide number, a bad hex string, or a byte array not of length 16
 */
export function seedBytes(seed: SeedLike, option = 'seed'): Uint8Array {
  const out = new Uint8Array(16)
  if (seed instanceof Uint8Array) {
    if (seed.length !== 16) badSeed(option, seed)
    out.set(seed)
    return out
  }
  if (typeof seed === 'string') {
    if (!/^[0-9a-fA-F]{32}$/.test(seed)) badSeed(option, seed)
    for (let i = 0; i < 16; i++) out[i] = parseInt(seed.slice(i * 2, i * 2 + 2), 16)
    return out
  }
  let v: bigint
  if (typeof seed === 'number') {
    if (!Number.isSafeInteger(seed) || seed < 0) badSeed(option, seed)
    v = BigInt(seed)
  } else if (typeof seed === 'bigint') {
    if (seed < 0n || seed >= 1n << 128n) badSeed(option, seed)
    v = seed
  } else {
    badSeed(option, seed)
  }
  for (let i = 0; i < 16; i++) {
    out[i] = Number(v & 0xffn)
    v >>= 8n
  }
  return out
}

// a seed keys the hash (SipHash's secret): the message gives its kind and length, never its value
function badSeed(option: string, value: unknown): never {
  invalidOption(option, '16 bytes, a non-negative safe integer, a bigint below 2^128 or 32 hex digits', value, {
    secret: true,
  })
}

/** 16 random bytes from `node:crypto`, the default seed of every structure. */
export function randomSeed(): Uint8Array {
  return new Uint8Array(randomBytes(16))
}

/**
 * A seeded 64-bit hash over key bytes. The hot paths are {@link Hasher.hashKey} (a key as
 * given) and {@link Hasher.hashInto} (bytes), which write the two 32-bit halves to
 * `hashHi` / `hashLo` and allocate nothing; `hash` is the convenient (allocating) form for
 * users and tests.
 */
export interface Hasher {
  /** `'murmur3'`, `'siphash'` or `'murmur3x64'`. */
  readonly name: HasherName
  /** The numeric id stored in frames (the frame's hasher ids: 3 = murmur3, 2 = siphash, 1 = murmur3x64). */
  readonly id: number
  /** The 16 seed bytes (a copy of what was passed in; treat it as read-only: it is what frames store). */
  readonly seed: Uint8Array
  /** The same function under another seed. */
  withSeed(seed: SeedLike): Hasher
  /**
   * The 64-bit hash of `bytes[0..len)` into {@link Hasher.hashHi} (high 32 bits, int32)
   * and {@link Hasher.hashLo} (low 32 bits, int32). No allocation.
   */
  hashInto(bytes: Uint8Array, len: number): void
  /**
   * The 64-bit hash of `key` (a string as its UTF-8 bytes, or bytes as they are) into
   * {@link Hasher.hashHi} / {@link Hasher.hashLo}: the same result as encoding the key and
   * calling {@link Hasher.hashInto}, by the cheapest path (murmur3 reads an ASCII string
   * without encoding it). No allocation.
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` for a key of another type
   */
  hashKey(key: string | Uint8Array): void
  /** High word of the last {@link Hasher.hashInto} result. */
  hashHi: number
  /** Low word of the last {@link Hasher.hashInto} result. */
  hashLo: number
  /** The 64-bit hash of `key` (a string as UTF-8, or bytes) as an unsigned bigint. */
  hash(key: string | Uint8Array): bigint
}

/** Which MurmurHash3 gives a {@link Murmur3Hasher} its 64-bit hash. */
export type Murmur3Variant = 'x86_128' | 'x64_128'

/**
 * MurmurHash3 hasher (Austin Appleby; reference: aappleby/smhasher `MurmurHash3.cpp`),
 * seeded with the seed's first 4 bytes read as a little-endian u32 (the reference's
 * 32-bit seed).
 *
 * - `hash(key)` / `hashInto` / `hashKey` give the 64-bit hash the structures use:
 *   - variant `'x86_128'` (the default, name `'murmur3'`, frame id 3): **the first 8
 *     output bytes of MurmurHash3_x86_128** read as a little-endian u64, i.e. its h2
 *     word as the high 32 bits and its h1 word as the low 32 bits. All 32-bit arithmetic,
 *     about 5× cheaper in JavaScript than x64_128, and ASCII strings are hashed without
 *     being encoded;
 *   - variant `'x64_128'` (name `'murmur3x64'`, frame id 1): **h1 of
 *     MurmurHash3_x64_128**, the first little-endian u64 of its 16 output bytes. Kept so
 *     that frames written with it keep their meaning.
 * - `hash32(key)` gives **MurmurHash3_x86_32** with the same seed (unsigned).
 * - `hash128(key)` gives both words `[h1, h2]` of MurmurHash3_x64_128 (either variant).
 *
 * Fast and well distributed but not a PRF: use {@link sipHash} when keys are chosen by
 * an attacker (IPs, headers), so nobody can aim keys at one cell.
 */
export class Murmur3Hasher implements Hasher {
  /** `'murmur3'` (variant x86_128) or `'murmur3x64'` (variant x64_128). */
  readonly name: 'murmur3' | 'murmur3x64'
  /** 3 (variant x86_128) or 1 (variant x64_128). */
  readonly id: number
  /** Which MurmurHash3 gives the 64-bit hash. */
  readonly variant: Murmur3Variant
  readonly seed: Uint8Array
  /** The reference's 32-bit seed: seed bytes 0..3 read little-endian. */
  readonly seed32: number
  hashHi = 0
  hashLo = 0
  /** Whether the variant is x86_128 (read on the hot path). */
  private readonly x86: boolean
  /**
   * A hasher keyed by `seed`; {@link murmur3} and {@link sipHash} are the usual way in.
   * @param seed the seed as 16 bytes, or a number / bigint / string expanded to 16 bytes by
   *   {@link seedBytes}
   * @param variant `'x86_128'` (default) or `'x64_128'` (frames of id 1)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a seed {@link seedBytes} rejects
   *   or an unknown variant
   */
  constructor(seed: SeedLike, variant: Murmur3Variant = 'x86_128') {
    if (variant !== 'x86_128' && variant !== 'x64_128') {
      throw new GrudgeError(
        'ERR_GRUDGE_OPTION_INVALID',
        `option "variant": expected 'x86_128' or 'x64_128', received ${describeValue(variant)}`,
      )
    }
    this.seed = seedBytes(seed)
    this.seed32 = (this.seed[0] | (this.seed[1] << 8) | (this.seed[2] << 16) | (this.seed[3] << 24)) >>> 0
    this.variant = variant
    this.x86 = variant === 'x86_128'
    this.name = this.x86 ? 'murmur3' : 'murmur3x64'
    this.id = this.x86 ? HASHER_IDS.murmur3 : HASHER_IDS.murmur3x64
  }
  withSeed(seed: SeedLike): Murmur3Hasher {
    return new Murmur3Hasher(seed, this.variant)
  }
  hashInto(bytes: Uint8Array, len: number): void {
    if (this.x86) {
      murmur3x86_128Into(bytes, len, this.seed32)
      this.hashHi = m86Out[1]
      this.hashLo = m86Out[0]
    } else {
      murmur3x64_128Into(bytes, len, this.seed32)
      this.hashHi = mOut[0]
      this.hashLo = mOut[1]
    }
  }
  hashKey(key: string | Uint8Array): void {
    if (this.x86 && typeof key === 'string' && murmur3x86_128AsciiInto(key, this.seed32)) {
      this.hashHi = m86Out[1]
      this.hashLo = m86Out[0]
      return
    }
    this.hashKeyBytes(key)
  }
  /**
   * {@link Murmur3Hasher.hashKey} of a key the ASCII path did not take (bytes, a string with
   * a char ≥ U+0080, or the x64_128 variant): encoded, then hashed. Kept out of `hashKey` so
   * that the string fast path stays small enough for V8 to inline into the sketch's
   * `locate`, and `locate` into the operation (node --trace-turbo-inlining).
   */
  private hashKeyBytes(key: string | Uint8Array): void {
    keyBytes(key)
    this.hashInto(keyView, keyLength)
  }
  hash(key: string | Uint8Array): bigint {
    this.hashKey(key)
    return (BigInt(this.hashHi >>> 0) << 32n) | BigInt(this.hashLo >>> 0)
  }
  /** MurmurHash3_x86_32 of `key` (UTF-8 for strings), unsigned 32-bit. */
  hash32(key: string | Uint8Array): number {
    keyBytes(key)
    return murmur3x86_32(keyView, keyLength, this.seed32)
  }
  /** MurmurHash3_x64_128 of `key` as its two u64 words `[h1, h2]`. */
  hash128(key: string | Uint8Array): [bigint, bigint] {
    keyBytes(key)
    murmur3x64_128Into(keyView, keyLength, this.seed32)
    return [
      (BigInt(mOut[0] >>> 0) << 32n) | BigInt(mOut[1] >>> 0),
      (BigInt(mOut[2] >>> 0) << 32n) | BigInt(mOut[3] >>> 0),
    ]
  }
}

/**
 * SipHash-2-4 hasher (Aumasson & Bernstein 2012): a keyed PRF with the 16 seed bytes as
 * its 128-bit key. `hash(key)` is the reference's 64-bit output (its 8 output bytes read
 * as a little-endian u64). Use it for attacker-chosen keys; keep the seed secret.
 */
export class SipHasher implements Hasher {
  readonly name = 'siphash' as const
  readonly id = HASHER_IDS.siphash
  readonly seed: Uint8Array
  private readonly key: SipKey
  hashHi = 0
  hashLo = 0
  /**
   * A hasher keyed by `seed`; {@link murmur3} and {@link sipHash} are the usual way in.
   * @param seed the seed as 16 bytes, or a number / bigint / string expanded to 16 bytes by
   *   {@link seedBytes}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a seed {@link seedBytes} rejects
   */
  constructor(seed: SeedLike) {
    this.seed = seedBytes(seed)
    this.key = sipKey(this.seed)
  }
  withSeed(seed: SeedLike): SipHasher {
    return new SipHasher(seed)
  }
  hashInto(bytes: Uint8Array, len: number): void {
    sipHash24Into(bytes, len, this.key)
    this.hashHi = sOut[0]
    this.hashLo = sOut[1]
  }
  hashKey(key: string | Uint8Array): void {
    if (typeof key !== 'string' || !sipHash24AsciiInto(key, this.key)) this.hashKeyBytes(key)
    this.hashHi = sOut[0]
    this.hashLo = sOut[1]
  }
  /**
   * SipHash of the encoded key into `sOut`, for a key the ASCII path did not take (bytes, or
   * a string with a char ≥ U+0080): out of `hashKey`, so that the encoder is not inlined
   * into every caller's hot path (see {@link Murmur3Hasher}'s twin).
   */
  private hashKeyBytes(key: string | Uint8Array): void {
    keyBytes(key)
    sipHash24Into(keyView, keyLength, this.key)
  }
  hash(key: string | Uint8Array): bigint {
    this.hashKey(key)
    return (BigInt(this.hashHi >>> 0) << 32n) | BigInt(this.hashLo >>> 0)
  }
}

/**
 * The default MurmurHash3 hasher: variant x86_128, frame id 3 (see {@link Murmur3Hasher}).
 * @param seed optional; random 16 bytes from `node:crypto` when absent
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a bad seed
 */
export function murmur3(seed?: SeedLike): Murmur3Hasher {
  return new Murmur3Hasher(seed ?? randomSeed())
}

/**
 * A SipHash-2-4 hasher (see {@link SipHasher}).
 * @param seed optional 128-bit key; random 16 bytes from `node:crypto` when absent
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a bad seed
 */
export function sipHash(seed?: SeedLike): SipHasher {
  return new SipHasher(seed ?? randomSeed())
}

/**
 * The hasher a structure uses, from its `hasher` and `seed` options: the one home of that
 * rule for every structure (Sketch, Rotator, Bloom filters, HyperLogLog, Count-Min).
 * - no `hasher`: murmur3 (x86_128, id 3) under `seed`, or under a random 16-byte seed;
 * - a `hasher`: a private copy of it, re-seeded by `seed` when both are given. The copy
 *   matters: a hasher writes its last output on itself (`hashHi`/`hashLo`), so two structures
 *   must never share one instance.
 * @param hasher a {@link Murmur3Hasher} or {@link SipHasher}, or undefined
 * @param seed 16 bytes, a number, a bigint or 32 hex digits, or undefined
 * @param option the option's name in the error message (default `"hasher"`)
 * @returns a hasher owned by the caller
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for anything else as hasher, or a bad seed
 * @internal
 */
export function resolveHasher(hasher: unknown, seed: SeedLike | undefined, option = 'hasher'): Hasher {
  if (hasher === undefined) return new Murmur3Hasher(seed ?? randomSeed())
  if (hasher instanceof GenerationHasher) return hasher.withSeed(seed ?? hasher.seed)
  if (!(hasher instanceof Murmur3Hasher) && !(hasher instanceof SipHasher)) {
    invalidOption(option, 'murmur3() or sipHash()', hasher)
  }
  return hasher.withSeed(seed ?? hasher.seed)
}

/**
 * The hasher for a frame's stored id and seed.
 * @throws {GrudgeError} `ERR_GRUDGE_FORMAT_INVALID` for an unknown id
 * @internal
 */
export function hasherFromId(id: number, seed: Uint8Array): Hasher {
  if (id === HASHER_IDS.murmur3) return new Murmur3Hasher(seed)
  if (id === HASHER_IDS.murmur3x64) return new Murmur3Hasher(seed, 'x64_128')
  if (id === HASHER_IDS.siphash) return new SipHasher(seed)
  throw new GrudgeError(
    'ERR_GRUDGE_FORMAT_INVALID',
    `hasher id: expected 1 (murmur3x64), 2 (siphash) or 3 (murmur3), received ${id}`,
  )
}

/**
 * One keyed 128-bit hash of a key, shared by the generations of one Rotator (or one fleet
 * policy): the base function under the placement seed, hashed once per decision and mixed
 * per generation by {@link GenerationHasher}. The 128 bits are MurmurHash3_x86_128's four
 * words (murmur3), MurmurHash3_x64_128's (murmur3x64), or SipHash-2-4's 64 bits and two zero
 * words (siphash). The last string key and its words are kept, so the second and later
 * generations of one decision read them instead of hashing again (strings are immutable, so
 * the cache is exact; byte keys are hashed every time, since a caller may reuse a buffer).
 * spec/rotator.md §1 "Placement".
 * @internal
 */
export class KeyHash {
  /** Word 0 of the last key's 128-bit hash (int32). */
  w0 = 0
  /** Word 1 (int32). */
  w1 = 0
  /** Word 2 (int32; 0 for SipHash). */
  w2 = 0
  /** Word 3 (int32; 0 for SipHash). */
  w3 = 0
  /** The key of w0..w3 when it was a string, else undefined. */
  private last: string | undefined = undefined
  /** 0: x86_128, 1: x64_128, 2: SipHash. */
  private readonly kind: number
  /**
   * @param base the key hash function under the placement seed (owned by this object)
   * @param master the 16-byte master seed the placement seed and the generation seeds derive from
   */
  constructor(
    readonly base: Hasher,
    readonly master: Uint8Array,
  ) {
    this.kind = base.id === HASHER_IDS.murmur3 ? 0 : base.id === HASHER_IDS.murmur3x64 ? 1 : 2
  }

  /** Hash `key` into w0..w3 unless it is the string hashed last. */
  load(key: string | Uint8Array): void {
    if (key === this.last) return
    this.base.hashKey(key)
    this.take()
    this.last = typeof key === 'string' ? key : undefined
  }

  /** Hash `bytes[0..len)` into w0..w3 (never cached). */
  loadBytes(bytes: Uint8Array, len: number): void {
    this.base.hashInto(bytes, len)
    this.take()
    this.last = undefined
  }

  private take(): void {
    const k = this.kind
    if (k === 0) {
      this.w0 = m86Out[0]
      this.w1 = m86Out[1]
      this.w2 = m86Out[2]
      this.w3 = m86Out[3]
    } else if (k === 1) {
      this.w0 = mOut[1]
      this.w1 = mOut[0]
      this.w2 = mOut[3]
      this.w3 = mOut[2]
    } else {
      this.w0 = sOut[1]
      this.w1 = sOut[0]
      this.w2 = 0
      this.w3 = 0
    }
  }
}

/**
 * The hasher of one generation under the keyed-mix placement: the shared {@link KeyHash}
 * of the key (one hash call per decision, whatever the number of generations), XORed with
 * the generation's 128-bit key (its 16 seed bytes, little-endian words) and mixed by
 * MurmurHash3_x86_128's finalization (the four cross-adds, fmix32 on each word, the four
 * cross-adds again: a bijection on 128 bits in which every output word depends on every
 * input word). hashLo / hashHi are words 0 and 1 of the result. Generations draw their keys
 * independently (from crypto, or SipHash of the master), so for two keys whose 128-bit
 * hashes differ, where they land in one generation says nothing about where they land in
 * another (spec/rotator.md §1 "Placement"; measured in test/hash/generation-hasher.test.ts).
 * `name` and `id` are the base function's: frames record the placement in their own flag.
 * @internal
 */
export class GenerationHasher implements Hasher {
  readonly name: HasherName
  readonly id: number
  readonly seed: Uint8Array
  hashHi = 0
  hashLo = 0
  private readonly k0: number
  private readonly k1: number
  private readonly k2: number
  private readonly k3: number
  /**
   * @param keys the shared key hash of the rotator or fleet policy
   * @param seed the generation's 16-byte key
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a bad seed
   */
  constructor(
    readonly keys: KeyHash,
    seed: SeedLike,
  ) {
    this.seed = seedBytes(seed)
    this.name = keys.base.name
    this.id = keys.base.id
    const b = this.seed
    const w = (i: number): number => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24)
    this.k0 = w(0)
    this.k1 = w(4)
    this.k2 = w(8)
    this.k3 = w(12)
  }
  /** Another generation of the same key hash. */
  withSeed(seed: SeedLike): GenerationHasher {
    return new GenerationHasher(this.keys, seed)
  }
  hashInto(bytes: Uint8Array, len: number): void {
    this.keys.loadBytes(bytes, len)
    this.mix()
  }
  hashKey(key: string | Uint8Array): void {
    this.keys.load(key)
    this.mix()
  }
  hash(key: string | Uint8Array): bigint {
    this.hashKey(key)
    return (BigInt(this.hashHi >>> 0) << 32n) | BigInt(this.hashLo >>> 0)
  }
  /** The generation's mix of the shared words into hashHi / hashLo. */
  private mix(): void {
    const k = this.keys
    let a = k.w0 ^ this.k0
    let b = k.w1 ^ this.k1
    let c = k.w2 ^ this.k2
    let d = k.w3 ^ this.k3
    a = (a + b + c + d) | 0
    b = (b + a) | 0
    c = (c + a) | 0
    d = (d + a) | 0
    a = fmix32(a)
    b = fmix32(b)
    c = fmix32(c)
    d = fmix32(d)
    a = (a + b + c + d) | 0
    b = (b + a) | 0
    this.hashLo = a
    this.hashHi = b
  }
}

/**
 * The shared key hash behind a hasher of the keyed-mix placement, or undefined for a
 * hasher that hashes the key itself (the placement of frames written before it).
 * @internal
 */
export function keyHashOf(hasher: Hasher): KeyHash | undefined {
  return hasher instanceof GenerationHasher ? hasher.keys : undefined
}
