export { murmur3, sipHash, Murmur3Hasher, SipHasher, seedBytes, randomSeed, HASHER_IDS, isHasherId } from './hasher.js'
export type { Hasher, HasherName, Murmur3Variant, SeedLike } from './hasher.js'
