import { GenerationHasher, HASHER_IDS, SipHasher, type Hasher, type KeyHash } from '../hash/hasher.js'
import { generationSeed, keyHashFor } from '../sketch/generation-seed.js'
import type { Aggregator, DecayKind, SketchShape } from '../sketch/shape.js'

/**
 * The hasher of generation `generationId` for a fleet sharing `secret`: the keyed-mix
 * placement of a Rotator with master seed `secret` (spec/rotator.md §1 "Placement"): one
 * key hash under `keyHashFor(base, secret)`, mixed by the generation key
 * `generationSeed(secret, generationId)`. Every instance places a key in the same cells of
 * the same generation, a collision under one generation is independent of the next, and
 * the key is hashed once for all the generations of one request when they share `keys`.
 * @param base the hash function to use (its own seed is ignored)
 * @param secret the fleet's shared 16-byte secret
 * @param generationId floor(serverTimeMs / periodMs) for the oldest live generation, a safe integer ≥ 0
 * @param keys the policy's shared key hash (default: a new one for `base` and `secret`)
 */
export function generationHasher(
  base: Hasher,
  secret: Uint8Array,
  generationId: number,
  keys: KeyHash = keyHashFor(base, secret),
): Hasher {
  return new GenerationHasher(keys, generationSeed(secret, generationId))
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
}

/**
 * The fingerprint stored beside a policy's cells in Redis: 16 hex digits of SipHash-2-4
 * keyed by the shared secret over the canonical text
 * `grudge-fleet/3|mode|hasher|L|M|S|decayKind|aggregator|N` (numbers in JavaScript's
 * shortest round-trip form). Keyed, so it reveals nothing of the secret; equal only when the
 * secret and everything that places or encodes a cell are equal. (Version 1 also covered
 * the decay rate, the bounds and the period, so a changed limit split the fleet; version 2
 * named the placement in which each generation hashed the key under its own seed, so an
 * instance of the keyed-mix placement never shares cells with one of version 2.)
 */
export function fingerprint(secret: Uint8Array, f: FingerprintInput): string {
  const text = [
    FLEET_FINGERPRINT_VERSION,
    f.mode,
    f.hasher,
    f.levels,
    f.cellsPerLevel,
    f.slots,
    f.decayKind,
    f.aggregator,
    f.generations,
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

/**
 * The first field of the fingerprint text: names the placement (3: the keyed-mix placement
 * of one key hash per request).
 * @internal
 */
export const FLEET_FINGERPRINT_VERSION = 'grudge-fleet/3'

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
): FingerprintInput {
  return {
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
