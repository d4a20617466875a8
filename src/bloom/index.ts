// Public exports of src/bloom: Bloom filters, checkpoints, shards and the registry.
// Names are Bloom-specific where a generic one could collide in the root barrel.
export { optimalSize, optimalHashCount, bloomFalsePositiveRate } from './sizing.js'
export { bloomPositions, MAX_BITS as MAX_BLOOM_BITS } from './positions.js'
export { BloomFilter, BLOOM_FORMAT_VERSION } from './bloom-filter.js'
export type { BloomFilterConfig, BloomFilterSize, BloomHashOptions, BloomFrameHeader } from './bloom-filter.js'
export { DEFAULT_PERSIST_POLICY } from './persist.js'
export type { PersistPolicy, PersistOptions } from './persist.js'
export { ManagedBloomFilter } from './managed.js'
export type { ManagedBloomFilterConfig } from './managed.js'
export {
  ShardedBloomFilter,
  shardOf as bloomShardOf,
  MANIFEST_FILE as BLOOM_MANIFEST_FILE,
  MANIFEST_FORMAT_VERSION as BLOOM_MANIFEST_FORMAT_VERSION,
} from './sharded.js'
export type { ShardedBloomFilterConfig } from './sharded.js'
export { BloomFilterRegistry, bloomRegistry, checkBloomName } from './registry.js'
export type { BloomFilterRegistryOptions, RegisterBloomOptions, PersistentBloomFilter } from './registry.js'
