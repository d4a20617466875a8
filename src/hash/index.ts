export { murmur3, sipHash, Murmur3Hasher, SipHasher, seedBytes, randomSeed, HASHER_IDS } from './hasher.js'
export type { Hasher, HasherName, SeedLike } from './hasher.js'
