import { HASHER_IDS, SipHasher, type Hasher } from '../hash/hasher.js'
import { generationSeed } from '../sketch/generation-seed.js'
import type { Aggregator, DecayKind, SketchShape } from '../sketch/shape.js'

/**
 * The hasher of generation `generationId` for a fleet sharing `secret`: the same function
 * as `base` (murmur3 or SipHash) under `generationSeed(secret, generationId)` — the seed a
 * Rotator with master seed `secret` gives its generation of that index (spec/rotator.md),
 * so every instance places a key in the same cells of the same generation, and a collision
 * under one generation is independent of the next.
 * @param base the hash function to use (its own seed is ignored)
 * @param secret the fleet's shared 16-byte secret
 * @param generationId floor(serverTimeMs / periodMs) for the oldest live generation, a safe integer ≥ 0
 */
export function generationHasher(base: Hasher, secret: Uint8Array, generationId: number): Hasher {
  return base.withSeed(generationSeed(secret, generationId))
}

/**
 * What the fingerprint covers: what places a key in cells and encodes them, and nothing a
 * rolling deploy may change. The policy figures (rate, burst, cost, maxDebt, thresholds,
 * weights, hence decay rate and the bounds lo/hi) are left out: each instance applies its own
 * to the shared cells. The rotation period is recorded beside the fingerprint instead
 * (spec/cluster.md, "Schedule"), so that a period derived from a changed burst joins the fleet's.
 */
export interface FingerprintInput {
  /** `'exact'` or `'sync'`: the two modes never share cells. */
  mode: 'exact' | 'sync'
  /**
   * The hash function as the fingerprint names it (by hasher id, not by name):
   * `'siphash'`, `'murmur3'` (MurmurHash3_x64_128 h1, hasher id 1) or `'murmur3x86'`
   * (MurmurHash3_x86_128, id 3).
   */
  hasher: string
  /** L, levels. */
  levels: number
  /** M, cells per level. */
  cellsPerLevel: number
  /** S, hash slots the cells are spread over (exact mode; 1 in sync mode). */
  slots: number
  /** Decay kind (`'none'`, `'exponential'`, `'linear'`): what a cell's stored score means over time. */
  decayKind: DecayKind
  /** How levels combine. */
  aggregator: Aggregator
  /** N, live generations: which generation keys hold a key's cells. */
  generations: number
  /**
   * Whether each generation's cells per level is the fleet's recorded shape (a self-sized
   * policy, spec/cluster.md "Shapes"), M then being the largest; the text gains `|sized`.
   * Absent or false leaves the text of a fixed shape unchanged.
   */
  sized?: boolean
}

/**
 * The fingerprint stored beside a policy's cells in Redis: 16 hex digits of SipHash-2-4
 * keyed by the shared secret over the canonical text
 * `grudge-fleet/2|mode|hasher|L|M|S|decayKind|aggregator|N`, plus `|sized` for a self-sized
 * policy (numbers in JavaScript's
 * shortest round-trip form). Keyed, so it reveals nothing of the secret; equal only when the
 * secret and everything that places or encodes a cell are equal. (Version 1 also covered
 * the decay rate, the bounds and the period, so a changed limit split the fleet.)
 */
export function fingerprint(secret: Uint8Array, f: FingerprintInput): string {
  const text = [
    'grudge-fleet/2',
    f.mode,
    f.hasher,
    f.levels,
    f.cellsPerLevel,
    f.slots,
    f.decayKind,
    f.aggregator,
    f.generations,
    ...(f.sized === true ? ['sized'] : []),
  ].join('|')
  return new SipHasher(secret).hash(text).toString(16).padStart(16, '0')
}

/**
 * The hasher field of the fingerprint text, by hasher id: `'murmur3'` for id 1
 * (MurmurHash3_x64_128 h1, the default murmur3 before 0.1.0, which fingerprinted as
 * `'murmur3'`: a node pinned to `new Murmur3Hasher(seed, 'x64_128')` places keys as those
 * nodes do and shares their fleet), `'siphash'` for id 2 and `'murmur3x86'` for id 3 (the
 * current default murmur3). Not the hasher's name: the default is named `'murmur3'` in
 * both releases, and two functions under one name would share Redis cells silently.
 */
export function fleetHasherName(hasher: Pick<Hasher, 'id' | 'name'>): string {
  if (hasher.id === HASHER_IDS.murmur3x64) return 'murmur3'
  if (hasher.id === HASHER_IDS.murmur3) return 'murmur3x86'
  return hasher.name
}

/** The generation id whose seed picks a key's slot: no time-based generation reaches it. */
export const SLOT_SEED_ID = Number.MAX_SAFE_INTEGER

/**
 * The hasher that picks a key's slot among S (spec/cluster.md, "Slots"): the base function
 * under `generationSeed(secret, 2^53 − 1)`, independent of every generation's placement, and
 * the same for all generations, so one request's cells of every generation share a slot.
 */
export function slotHasher(base: Hasher, secret: Uint8Array): Hasher {
  return base.withSeed(generationSeed(secret, SLOT_SEED_ID))
}

/** Fingerprint input of a sketch (used by tests and the store). */
export function sketchFingerprintInput(
  s: Pick<SketchShape, 'hasher' | 'levels' | 'cellsPerLevel' | 'decay' | 'aggregator'>,
  mode: 'exact' | 'sync',
  generations: number,
  slots = 1,
  sized = false,
): FingerprintInput {
  return {
    sized,
    mode,
    hasher: fleetHasherName(s.hasher),
    levels: s.levels,
    cellsPerLevel: s.cellsPerLevel,
    slots,
    decayKind: s.decay.kind,
    aggregator: s.aggregator,
    generations,
  }
}
