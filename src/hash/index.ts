export { murmur3, sipHash, Murmur3Hasher, SipHasher, seedBytes, randomSeed } from './hasher.js'
export type { Hasher, HasherName, Murmur3Variant, SeedLike } from './hasher.js'
