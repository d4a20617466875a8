import { KeyHash, SipHasher, type Hasher } from '../hash/hasher.js'

/**
 * The seed of generation index `g` under master seed `master`: SipHash-2-4 keyed by the
 * master over the 9 bytes u64le(g) ‖ 0x00, then over u64le(g) ‖ 0x01, the two 64-bit
 * outputs written little-endian (16 bytes). Replicas (and the Redis store's nodes) that
 * share a master seed derive the same seed for the same generation index, so their
 * generations merge and exchange deltas (`spec/rotator.md`).
 * @param master 16 bytes
 * @param g generation index, a safe integer ≥ 0
 * @internal
 */
export function generationSeed(master: Uint8Array, g: number): Uint8Array {
  const sip = new SipHasher(master)
  const msg = new Uint8Array(9)
  let v = BigInt(g)
  for (let i = 0; i < 8; i++) {
    msg[i] = Number(v & 0xffn)
    v >>= 8n
  }
  const out = new Uint8Array(16)
  for (let half = 0; half < 2; half++) {
    msg[8] = half
    let h = sip.hash(msg)
    for (let i = 0; i < 8; i++) {
      out[half * 8 + i] = Number(h & 0xffn)
      h >>= 8n
    }
  }
  return out
}

/**
 * The generation index whose derived seed keys the shared key hash of the keyed-mix
 * placement (spec/rotator.md §1 "Placement"): 2^53 − 2, beside the fleet's slot seed
 * (2^53 − 1); no rotation count or time-based generation id comes near it.
 * @internal
 */
export const KEY_HASH_SEED_ID = Number.MAX_SAFE_INTEGER - 1

/**
 * The shared key hash of a rotator or fleet policy with master seed `master`: `base`'s
 * function under `generationSeed(master, 2^53 − 2)`. Its generation of index g is
 * `new GenerationHasher(keys, generationSeed(master, g))`.
 * @param base the hash function (its own seed is ignored)
 * @param master 16 bytes
 * @internal
 */
export function keyHashFor(base: Hasher, master: Uint8Array): KeyHash {
  return new KeyHash(base.withSeed(generationSeed(master, KEY_HASH_SEED_ID)), master)
}
