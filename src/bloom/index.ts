// Public exports of src/bloom: Bloom filters, checkpoints, shards and the registry.
export { optimalSize, optimalHashCount, bloomFalsePositiveRate } from './sizing.js'
export { bloomPositions, MAX_BITS } from './positions.js'
export { BloomFilter, BLOOM_FORMAT_VERSION } from './bloom-filter.js'
export type { BloomFilterConfig, BloomFilterSize, BloomHashOptions } from './bloom-filter.js'
