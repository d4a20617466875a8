import { SipHasher, type Hasher } from '../hash/hasher.js'
import { DECAY_IDS } from '../sketch/decay.js'
import { AGGREGATOR_IDS, type Sketch } from '../sketch/sketch.js'

const genBytes = new Uint8Array(17)
const genView = new DataView(genBytes.buffer)

/**
 * The hasher of generation `generationId` for a fleet sharing `secret`: the same function
 * as `base` (murmur3 or SipHash) under a seed derived from the shared secret, so every
 * instance places a key in the same cells of the same generation, and a collision under
 * one generation is independent of the next (as the in-process Rotator's fresh seeds).
 *
 * Derivation: with SipHash-2-4 keyed by the 16 secret bytes, seed bytes 0..7 are the
 * 64-bit output (little-endian) over `"grudge:g" ‖ id as int64 LE ‖ 0x00` and bytes 8..15
 * over the same with a final 0x01 (spec/cluster.md).
 * @param base the hash function to use (its own seed is ignored)
 * @param secret the fleet's shared 16-byte secret
 * @param generationId floor(serverTimeMs / periodMs), a safe integer
 */
export function generationHasher(base: Hasher, secret: Uint8Array, generationId: number): Hasher {
  const prf = new SipHasher(secret)
  const seed = new Uint8Array(16)
  for (let half = 0; half < 2; half++) {
    genBytes.set([0x67, 0x72, 0x75, 0x64, 0x67, 0x65, 0x3a, 0x67]) // "grudge:g"
    genView.setBigInt64(8, BigInt(generationId), true)
    genBytes[16] = half
    const h = prf.hash(genBytes)
    for (let b = 0; b < 8; b++) seed[half * 8 + b] = Number((h >> BigInt(8 * b)) & 0xffn)
  }
  return base.withSeed(seed)
}

/** What the fingerprint covers: everything that decides which cells a key uses and what they mean. */
export interface FingerprintInput {
  mode: 'exact' | 'sync'
  hasher: string
  levels: number
  cellsPerLevel: number
  decayKind: keyof typeof DECAY_IDS
  decayRatePerSecond: number
  lo: number
  hi: number
  aggregator: keyof typeof AGGREGATOR_IDS
  generations: number
  periodMs: number
}

/**
 * The fingerprint stored beside a policy's cells in Redis: 16 hex digits of SipHash-2-4
 * keyed by the shared secret over the canonical text
 * `grudge-fleet/1|mode|hasher|L|M|decayKind:rate|lo|hi|aggregator|N|periodMs` (numbers in
 * JavaScript's shortest round-trip form). Keyed, so it reveals nothing of the secret;
 * equal only when the secret and everything that places or reads a cell are equal.
 */
export function fingerprint(secret: Uint8Array, f: FingerprintInput): string {
  const text = [
    'grudge-fleet/1',
    f.mode,
    f.hasher,
    f.levels,
    f.cellsPerLevel,
    `${f.decayKind}:${f.decayRatePerSecond}`,
    f.lo,
    f.hi,
    f.aggregator,
    f.generations,
    f.periodMs,
  ].join('|')
  return new SipHasher(secret).hash(text).toString(16).padStart(16, '0')
}

/** Fingerprint input of a sketch (used by tests and the store). */
export function sketchFingerprintInput(
  s: Pick<Sketch, 'hasher' | 'levels' | 'cellsPerLevel' | 'decay' | 'lo' | 'hi' | 'aggregator'>,
  mode: 'exact' | 'sync',
  generations: number,
  periodMs: number,
): FingerprintInput {
  return {
    mode,
    hasher: s.hasher.name,
    levels: s.levels,
    cellsPerLevel: s.cellsPerLevel,
    decayKind: s.decay.kind,
    decayRatePerSecond: s.decay.ratePerSecond,
    lo: s.lo,
    hi: s.hi,
    aggregator: s.aggregator,
    generations,
    periodMs,
  }
}
