/**
 * grudge: rate limiting and abuse scoring over unbounded key spaces in constant memory.
 * The core entry point (`grudge`); test utilities are in `grudge/testing`, adapters in
 * `grudge/fastify` and `grudge/express`.
 *
 * This is the one list of the public API, name by name: what a user constructs, calls or
 * catches (CONTRIBUTING.md, "How an export earns its place"). Nothing else is re-exported.
 * @packageDocumentation
 */
export { ERROR_CODES, GrudgeError, GrudgeRangeError, GrudgeTypeError } from './errors.js'
export type { GrudgeErrorCode, CodedError } from './errors.js'
export { systemClock, systemTicker } from './clock.js'
export type { Clock, Ticker, TickerHandle } from './clock.js'

// Hashers and seeds
export { murmur3, sipHash, Murmur3Hasher, SipHasher, seedBytes, randomSeed } from './hash/hasher.js'
export type { Hasher, HasherName, Murmur3Variant, SeedLike } from './hash/hasher.js'

// Sketch, Rotator, decay and their sizing
export { Sketch } from './sketch/sketch.js'
export type { SketchDetail } from './sketch/sketch.js'
export type {
  SketchOptions,
  SketchShape,
  Aggregator,
  Decay,
  DecayKind,
  DeserializeOptions,
  RotatorOptions,
  RotatorDeserializeOptions,
} from './sketch/shape.js'
export { exponential, linear, none, halfLife, applyDecay } from './sketch/decay.js'
export {
  sketchFalsePositiveRate,
  sketchSuggestLevels,
  abuseFalseBlockRate,
  fairnessFalseThrottleRate,
  debtMeterCellsForLoad,
  scoreCellsForLoad,
} from './sketch/sizing.js'
export type { SketchSize, DebtMeterLoad, ScoreLoad, CellsForLoadOptions } from './sketch/sizing.js'
export { suggestPeriodMs } from './sketch/rotator-period.js'
export { Rotator } from './sketch/rotator.js'
export type { RotatorSizing, GenerationLoad, SizingLimitEvent, EarlyGeneration } from './sketch/rotator-sizing.js'
export { SketchDelta } from './sketch/sketch-delta.js'
export { RotatorDelta } from './sketch/rotator-delta.js'
export { SKETCH_FORMAT_VERSION } from './sketch/sketch-codec.js'
export { ROTATOR_FORMAT_VERSION } from './sketch/rotator-codec.js'

// Bloom filters, checkpoints, shards and the registry
export { bloomOptimalBits, bloomOptimalHashes, bloomFalsePositiveRate } from './bloom/sizing.js'
export { BloomFilter, BLOOM_FORMAT_VERSION } from './bloom/bloom-filter.js'
export type { BloomFilterAccuracyOptions, BloomFilterSizeOptions, BloomHashOptions } from './bloom/bloom-filter.js'
export { DEFAULT_PERSIST_POLICY } from './bloom/persist.js'
export type { PersistPolicy, PersistOptions } from './bloom/persist.js'
export { ManagedBloomFilter } from './bloom/managed.js'
export type { ManagedBloomFilterOptions } from './bloom/managed.js'
export { ShardedBloomFilter } from './bloom/sharded.js'
export type { ShardedBloomFilterOptions } from './bloom/sharded.js'
export { BloomFilterRegistry, bloomRegistry } from './bloom/registry.js'
export type { BloomFilterRegistryOptions, RegisterBloomOptions, PersistentBloomFilter } from './bloom/registry.js'

// Windows over mergeable sketches: HyperLogLog, Count-Min
export type { Mergeable, MergeableFamily } from './window/mergeable.js'
export { HyperLogLog, hyperLogLogStandardError, HLL_MIN_PRECISION, HLL_MAX_PRECISION } from './window/hyperloglog.js'
export type {
  HyperLogLogSizeOptions,
  HyperLogLogAccuracyOptions,
  HyperLogLogHashOptions,
} from './window/hyperloglog.js'
export { CountMinSketch, countMinWidth, countMinDepth, CMS_MAX_COUNT } from './window/count-min.js'
export type { CountMinSizeOptions, CountMinAccuracyOptions, CountMinCommonOptions } from './window/count-min.js'
export { Window, WINDOW_MAX_KEEP } from './window/window.js'
export type { WindowOptions, WindowDeserializeOptions, WindowSlot, WindowItem, RollEvent } from './window/window.js'

// Policies, the Limiter and stores
export { localStore } from './limit/store.js'
export type { GenerationShapes, ScoreStore, StoreResult, StoreSpec, StoreFactory } from './limit/store.js'
export type { Decision, PolicyName } from './limit/decision.js'
export { DebtMeter } from './limit/debt-meter.js'
export type { DebtMeterOptions, DebtVerdict } from './limit/debt-meter.js'
export { windowRate } from './limit/window-rate.js'
export type { WindowRate, FastifyRateLimitWindow, ExpressRateLimitWindow } from './limit/window-rate.js'
export { FeedbackScore } from './limit/feedback-score.js'
export type { FeedbackScoreOptions, FairnessVerdict } from './limit/feedback-score.js'
export { AbuseScore, DEFAULT_ABUSE_WEIGHTS } from './limit/abuse-score.js'
export type { AbuseScoreOptions, AbuseVerdict, AbuseWeights } from './limit/abuse-score.js'
export { BloomGate } from './limit/bloom-gate.js'
export type { BloomLookup, BloomGateOptions } from './limit/bloom-gate.js'
export { Limiter } from './limit/limiter.js'
export type { LimiterOptions, Outcome } from './limit/limiter.js'
export { MAX_TIERS } from './limit/tiers.js'
export type { TierOptions, TieredDebtMeterOptions } from './limit/tiers.js'
export type { KeyState, LimitState, ForgiveOptions } from './limit/key-state.js'
export { Telemetry } from './limit/telemetry.js'
export type {
  GenerationStats,
  LimiterStats,
  MemoryStats,
  PolicyCounts,
  PolicyModelStats,
  StoreMemory,
  TelemetryOptions,
} from './limit/telemetry.js'
export type { PolicySketchOptions, ResolvedSketchOptions } from './limit/options.js'

// Client keys and rate-limit response fields
export { normalizeIp, keyPart, joinKeyParts } from './http/client-key.js'
export type { KeyRequest, KeyPartName, ClientKeyOptions, KeySpec } from './http/client-key.js'
export { rateLimitHeaders, fieldSource } from './http/headers.js'
export type { HeaderOptions, FieldSource, FieldOwner, FieldMeter } from './http/headers.js'
export { denialStatus } from './http/status.js'
export type { FairnessStatus } from './http/status.js'

// Limits shared across a fleet through Redis
export { redisStore } from './cluster/redis-store.js'
export type { RedisScoreStore, RedisStoreFactory } from './cluster/redis-store.js'
export type { RedisStoreOptions, OnStoreError } from './cluster/options.js'
export type { RedisLike } from './cluster/client.js'
export type { RedisStoreEvent } from './cluster/connection.js'
