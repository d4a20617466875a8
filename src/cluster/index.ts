// Public exports of src/cluster: limits shared across a fleet through Redis.
export { redisStore } from './redis-store.js'
export type { RedisScoreStore, RedisStoreFactory } from './redis-store.js'
export type { RedisStoreOptions, OnStoreError } from './options.js'
export type { RedisLike } from './client.js'
export { generationHasher, fingerprint } from './fleet-hash.js'
export type { FingerprintInput } from './fleet-hash.js'
