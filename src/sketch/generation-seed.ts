import { SipHasher } from '../hash/hasher.js'

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
