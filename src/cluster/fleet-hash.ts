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
  /**
   * S, hash slots the cells are spread over. S > 1 also adds `|slot0` to the text: slot 0
   * under the policy's own hash tag (see {@link fingerprint}).
   */
  slots: number
  /** Decay kind (`'none'`, `'exponential'`, `'linear'`): what a cell's stored score means over time. */
  decayKind: DecayKind
  /** How levels combine. */
  aggregator: Aggregator
  /** N, live generations: which generation keys hold a key's cells. */
  generations: number
  /**
   * Exact mode: W, cells per level in one block of the blocked layout (spec/cluster.md,
   * "Storage layout"); absent in sync mode, whose layout is the Sketch's level-major one.
   */
  blockCells?: number
  /**
   * Whether each generation's cells per level is the fleet's recorded shape (a self-sized
   * policy, spec/cluster.md "Shapes"), M then being the largest; the text gains
   * `|sized|early|fold` (its twins fold their base at the switch where the shapes allow), in
   * exact mode then `|foldsteps` (the fold made incrementally).
   * Absent or false leaves the text of a fixed shape unchanged.
   */
  sized?: boolean
}

/**
 * The fingerprint stored beside a policy's cells in Redis: 16 hex digits of SipHash-2-4
 * keyed by the shared secret over the canonical text
 * `grudge-fleet/3|mode|hasher|L|M|S|decayKind|aggregator|N`, followed in exact mode by
 * `|W<blockCells>` (the blocked layout), plus `|sized|early` for a self-sized policy (whose instances
 * start twins on a load jump, in both modes, then `|fold`: its twins fold their base at the
 * switch where the shapes allow; in exact mode then `|foldsteps`: the fold made a bounded step
 * per script call), plus `|slot0`
 * when S > 1 (numbers in JavaScript's shortest round-trip form). `slot0` names where slot 0
 * lives: under the policy's own hash tag `{name}`, as the cells of S = 1 (so the two check one
 * record); a node of a snapshot before it put slot 0 under `{name#0}`, and its fingerprint,
 * without the field, is refused on the slots both use instead of splitting slot 0's keys; plus
 * `|log` in sync mode (its change log, spec/cluster.md "The change log": an instance of before
 * pushes without logging, so the two refuse each other). Keyed, so it reveals nothing of the secret; equal only when the
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
    ...(f.blockCells === undefined ? [] : [`W${f.blockCells}`]),
    // early growth (twins, spec/cluster.md "Early growth") is a protocol an instance of before
    // does not follow: it would neither write a twin nor decide on one (sync since 0.2's twins,
    // exact since its sized script took the twins' arguments)
    ...(f.sized === true ? ['sized', 'early'] : []),
    // folding twins (spec/cluster.md "Early growth"): an instance of before writes a twin from its
    // start and decides on it from start + A + D, one of this build neither writes nor reads a
    // folding twin before its switch (start + D) and stops writing the base then
    ...(f.sized === true ? ['fold'] : []),
    // exact mode's incremental fold (spec/cluster.md "Early growth", _The incremental fold_): an
    // instance of before finds a partly folded twin string short and remakes it whole from the
    // base, dropping what was written in its folded part
    ...(f.sized === true && f.blockCells !== undefined ? ['foldsteps'] : []),
    ...(f.slots > 1 ? ['slot0'] : []),
    // sync mode's change log (spec/cluster.md "The change log"): an instance of before pushes
    // without logging, so this build's delta pulls would miss its writes
    ...(f.mode === 'sync' ? ['log'] : []),
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

/**
 * W, cells per level in one block of the exact layout: a key's L cells of a generation lie in
 * one block of L·W cells (L·W·16 bytes: one GETRANGE and one SETRANGE per generation). 8
 * cells (128 bytes per level): a GETRANGE of 512 bytes (L = 4) costs Redis about what two
 * 16-byte ones do, while placement within the block stays independent per level
 * (spec/cluster.md, "Storage layout", for the error bound and the measurement).
 */
export const BLOCK_CELLS = 8

/** The blocked layout of an exact-mode slot: W = min(BLOCK_CELLS, cells) cells per level per block, B = ceil(cells / W) blocks. */
export function blockShape(slotCells: number): { blockCells: number; blocks: number } {
  const blockCells = Math.min(BLOCK_CELLS, slotCells)
  return { blockCells, blocks: Math.ceil(slotCells / blockCells) }
}

/**
 * Whether a generation of `baseSlotCells` cells per level per slot folds into a twin of
 * `twinSlotCells` in the blocked layout (spec/cluster.md "Early growth", _The fold_): the two
 * have the same block width W and the twin's block count is a multiple of the base's. A key's
 * block in the twin, hashHi mod B′, then reduces mod B to its block in the base (B divides B′),
 * and its offsets in a block (mod W) are the same, so the twin's slot string made of the base's
 * repeated B′ / B times reads every key exactly as the base does. True for W = 8 (M / S ≥ 8)
 * when M, M′ and S are powers of two; false for the tiny shapes whose W < 8 grows with M, and
 * for most S that are not powers of two (e.g. S = 3: B = 6 for 128 cells, 22 for 512).
 * @param baseSlotCells ceil(M / S), integer ≥ 1
 * @param twinSlotCells ceil(M′ / S), integer ≥ 1
 */
export function blockFoldable(baseSlotCells: number, twinSlotCells: number): boolean {
  const a = blockShape(baseSlotCells)
  const b = blockShape(twinSlotCells)
  return a.blockCells === b.blockCells && b.blocks % a.blocks === 0
}

/**
 * A key's cells in the blocked layout (spec/cluster.md, "Blocked layout"), from its 64-bit
 * hash under the generation's hasher: `out[0]` = the block b = (hashHi as uint32) mod B, and
 * `out[1 + i]` = level i's offset in the block, `fmix32((hashLo + (i + 1)·0x9e3779b9) mod 2^32)
 * mod W`, with fmix32 MurmurHash3's 32-bit finaliser (a bijection with full avalanche), so the
 * L offsets are drawn independently of each other, not by double hashing (whose levels would
 * all collide together with probability 2/W² within a block). Level i's cell in the sub-sketch
 * is row i, column b·W + out[1 + i].
 * @param hashHi high word of the 64-bit hash (int32 or uint32)
 * @param hashLo low word of the 64-bit hash (int32 or uint32)
 * @param levels L, integer ≥ 1
 * @param blockCells W, integer in [1, 16] (the script receives each offset as one letter)
 * @param blocks B, integer in [1, 2^32]
 * @param out receives the block then the L offsets (length ≥ L + 1)
 */
export function blockedIndexes(
  hashHi: number,
  hashLo: number,
  levels: number,
  blockCells: number,
  blocks: number,
  out: Uint32Array,
): void {
  out[0] = (hashHi >>> 0) % blocks
  for (let i = 0; i < levels; i++) {
    let h = (hashLo + Math.imul(i + 1, 0x9e3779b9)) | 0
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    h = Math.imul(h, 0xc2b2ae35)
    h ^= h >>> 16
    out[1 + i] = (h >>> 0) % blockCells
  }
}

/** Fingerprint input of a sketch (used by tests and the store); `blockCells` names the exact layout's W (exact mode), `sized` a self-sized policy (text gains `|sized|early|fold`, exact mode `|sized|early|fold|foldsteps`). */
export function sketchFingerprintInput(
  s: Pick<SketchShape, 'hasher' | 'levels' | 'cellsPerLevel' | 'decay' | 'aggregator'>,
  mode: 'exact' | 'sync',
  generations: number,
  slots = 1,
  blockCells?: number,
  sized = false,
): FingerprintInput {
  return {
    ...(blockCells === undefined ? {} : { blockCells }),
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
