// Public exports of src/bloom: what a user constructs, calls or catches. Names are
// Bloom-specific where a generic one could collide in the root barrel.
export { bloomOptimalBits, bloomOptimalHashes, bloomFalsePositiveRate } from './sizing.js'
export { BloomFilter, BLOOM_FORMAT_VERSION } from './bloom-filter.js'
export type { BloomFilterAccuracyOptions, BloomFilterSizeOptions, BloomHashOptions } from './bloom-filter.js'
export { DEFAULT_PERSIST_POLICY } from './persist.js'
export type { PersistPolicy, PersistOptions } from './persist.js'
export { ManagedBloomFilter } from './managed.js'
export type { ManagedBloomFilterOptions } from './managed.js'
export { ShardedBloomFilter } from './sharded.js'
export type { ShardedBloomFilterOptions } from './sharded.js'
export { BloomFilterRegistry, bloomRegistry } from './registry.js'
export type { BloomFilterRegistryOptions, RegisterBloomOptions, PersistentBloomFilter } from './registry.js'
