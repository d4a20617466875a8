import type { Clock, Ticker } from '../clock.js'
import { GrudgeError, invalidOption } from '../errors.js'
import { seedBytes, type SeedLike } from '../hash/hasher.js'
import { isRedisLike, type RedisLike } from './client.js'
import { checkKnownOptions, optionKeys } from '../options.js'
import type { RedisStoreEvent } from './connection.js'

/** What a store does when Redis does not answer in time (see {@link RedisStoreOptions.onStoreError}). */
export type OnStoreError = 'open' | 'closed' | 'local'

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /**
   * An ioredis client (duck-typed: `evalsha`, `script`, and `evalshaBuffer` for sync mode)
   * or a `redis://` / `rediss://` URL, for which grudge imports `ioredis` lazily and creates
   * a client with `enableOfflineQueue: false`, `maxRetriesPerRequest: 1` (and closes it
   * when every store built from this factory is closed). A client you pass should use
   * `enableOfflineQueue: false` too; otherwise commands issued while disconnected wait in
   * its queue and run late (grudge still answers within `timeoutMs`).
   */
  redis: RedisLike | string | readonly string[]
  /**
   * The number S of Redis Cluster hash slots (hash tags `{<name>}` for slot 0, `{<name>#<s>}` for slot s > 0) a policy's cells are
   * spread over, so a hot policy loads every master. Exact mode: sub-sketches of
   * ceil(cellsPerLevel / S) cells per level, chosen by a keyed hash of the request key; one
   * request touches one slot (one script). Sync mode: slot s holds the cells of index
   * [s·ceil(M / S), (s + 1)·ceil(M / S)) of every level, and each sync runs one script per
   * slot (in parallel); placement is the Sketch's, whatever S. An integer in [1, 1024];
   * default 16 in exact mode, 1 in sync mode. Part of the fingerprint.
   */
  slots?: number
  /**
   * `'exact'` (default): cells live in Redis, one round trip per decision, atomic.
   * `'sync'`: each instance decides on its own cells (zero round trips on the request path)
   * and merges with the fleet every `syncMs`.
   */
  mode?: 'exact' | 'sync'
  /**
   * The fleet's shared secret (16 bytes, 32 hex digits, a non-negative integer or bigint):
   * every instance must use the same, so a key lands in the same cells everywhere. Treat it
   * like a session key (an environment variable, not source code). Required: there is no
   * random default, since a per-instance seed would silently split the fleet.
   */
  seed: SeedLike
  /** Longest wait in ms for Redis on the request path (and for each sync): finite, > 0. Default 50. */
  timeoutMs?: number
  /**
   * When Redis fails or is slower than `timeoutMs`: `'open'` (default) admits and marks the
   * result `failure: 'open'`; `'closed'` denies with `failure: 'closed'`; `'local'` decides on
   * an in-process Rotator of the same shape until Redis answers again. In sync mode the
   * choice applies once the fleet view is stale (no successful sync for 3 × syncMs);
   * until then, and always with `'local'`, the instance keeps deciding on its own cells.
   */
  onStoreError?: OnStoreError
  /** Prefix of every Redis key: non-empty, without `{` or `}`. Default `'grudge'`. */
  prefix?: string
  /** Sync mode: period in ms between merges with the fleet, finite, ≥ 1. Default 100. */
  syncMs?: number
  /**
   * After a failure, requests skip Redis (and follow `onStoreError` at once) for this many
   * ms before one tries again: finite, ≥ 0. Default 250. 0 tries Redis on every request.
   */
  retryMs?: number
  /**
   * Time source in ms. Exact mode: when given, the script uses this time instead of Redis
   * `TIME` (for tests and replays only: a fleet must use server time). Sync mode: the local
   * clock of decay; rotation follows this clock too when given, else server time.
   */
  clock?: Clock
  /** Sync mode: runs the periodic sync (default an unref'd setInterval); tests pass a FakeTicker. */
  ticker?: Ticker
  /** Called with each Redis error that a failure mode absorbed (for logs and metrics). */
  onError?: (err: unknown) => void
  /**
   * Called once per transition, for logs: `'down'` (Redis failed; `onStoreError` decides, with
   * `'local'` the in-process fallback takes over), `'up'` (answers again), `'schedule'` (this
   * instance rotates on the fleet's recorded period), `'autopipelining'` (exact mode, once: the
   * client passed as `redis` auto-pipelines EVALSHA), `'fleet-lag'` (self-sized, once per
   * store: a twin proposed here was dropped for another instance's adoption lag). Adapters add their logger with the
   * factory's `onEvent(listener)` instead. See {@link RedisStoreEvent}.
   */
  onEvent?: (event: RedisStoreEvent) => void
}

/** The option names of {@link RedisStoreOptions}; any other key is refused. */
export const REDIS_STORE_OPTION_KEYS = optionKeys<RedisStoreOptions>({
  redis: true,
  slots: true,
  mode: true,
  seed: true,
  timeoutMs: true,
  onStoreError: true,
  prefix: true,
  syncMs: true,
  retryMs: true,
  clock: true,
  ticker: true,
  onError: true,
  onEvent: true,
})

/** The parsed, frozen options. */
export interface ParsedRedisOptions {
  readonly redis: RedisLike | string | readonly string[]
  readonly slots: number
  readonly mode: 'exact' | 'sync'
  readonly secret: Uint8Array
  readonly timeoutMs: number
  readonly onStoreError: OnStoreError
  readonly prefix: string
  readonly syncMs: number
  readonly retryMs: number
  readonly clock: Clock | undefined
  readonly ticker: Ticker | undefined
  readonly onError: ((err: unknown) => void) | undefined
  readonly onEvent: ((event: RedisStoreEvent) => void) | undefined
}

/**
 * Parse {@link RedisStoreOptions} once.
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_SEED_REQUIRED` without a seed;
 * `ERR_GRUDGE_OPTION_INVALID` naming any other bad option or a key that is not an option
 */
export function parseRedisOptions(options: RedisStoreOptions): ParsedRedisOptions {
  if (typeof options !== 'object' || options === null) invalidOption('options', 'an object', options)
  checkKnownOptions(options, REDIS_STORE_OPTION_KEYS)
  const redis = options.redis
  const expected = 'an ioredis client or Cluster, a redis:// or rediss:// URL, or a non-empty list of cluster node URLs'
  if (typeof redis === 'string') {
    if (!/^rediss?:\/\//.test(redis)) invalidOption('redis', expected, redis)
  } else if (Array.isArray(redis)) {
    if (redis.length === 0 || !redis.every((u) => typeof u === 'string' && /^rediss?:\/\//.test(u))) {
      invalidOption('redis', expected, redis)
    }
  } else if (!isRedisLike(redis)) {
    invalidOption('redis', expected, redis)
  }
  const mode = options.mode ?? 'exact'
  if (mode !== 'exact' && mode !== 'sync') invalidOption('mode', "'exact' or 'sync'", mode)
  if (mode === 'sync' && isRedisLike(redis) && typeof redis.evalshaBuffer !== 'function') {
    invalidOption('redis', 'a client with evalshaBuffer (ioredis) for sync mode', redis)
  }
  const slots = options.slots ?? (mode === 'exact' ? 16 : 1)
  if (!Number.isInteger(slots) || slots < 1 || slots > 1024) invalidOption('slots', 'an integer in [1, 1024]', slots)
  if (options.seed === undefined || options.seed === null || options.seed === '') {
    throw new GrudgeError(
      'ERR_GRUDGE_CLUSTER_SEED_REQUIRED',
      `option "seed": expected the fleet's shared secret (16 bytes or 32 hex digits, the same on every instance), received ${options.seed === '' ? 'an empty string' : String(options.seed)}`,
    )
  }
  const secret = seedBytes(options.seed, 'seed')
  const timeoutMs = options.timeoutMs ?? 50
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    invalidOption('timeoutMs', 'a finite number > 0 (ms)', timeoutMs)
  }
  const onStoreError = options.onStoreError ?? 'open'
  if (onStoreError !== 'open' && onStoreError !== 'closed' && onStoreError !== 'local') {
    invalidOption('onStoreError', "'open', 'closed' or 'local'", onStoreError)
  }
  const prefix = options.prefix ?? 'grudge'
  if (typeof prefix !== 'string' || prefix.length === 0 || /[{}]/.test(prefix)) {
    invalidOption('prefix', 'a non-empty string without { or }', prefix)
  }
  const syncMs = options.syncMs ?? 100
  if (typeof syncMs !== 'number' || !Number.isFinite(syncMs) || syncMs < 1)
    invalidOption('syncMs', 'a finite number ≥ 1 (ms)', syncMs)
  const retryMs = options.retryMs ?? 250
  if (typeof retryMs !== 'number' || !Number.isFinite(retryMs) || retryMs < 0)
    invalidOption('retryMs', 'a finite number ≥ 0 (ms)', retryMs)
  const clock = options.clock
  if (clock !== undefined && (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function')) {
    invalidOption('clock', 'an object with now(): number', clock)
  }
  const ticker = options.ticker
  if (ticker !== undefined && (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function')) {
    invalidOption('ticker', 'an object with every(periodMs, fn)', ticker)
  }
  const onError = options.onError
  if (onError !== undefined && typeof onError !== 'function') invalidOption('onError', 'a function', onError)
  const onEvent = options.onEvent
  if (onEvent !== undefined && typeof onEvent !== 'function') invalidOption('onEvent', 'a function', onEvent)
  return Object.freeze({
    redis: Array.isArray(redis) ? Object.freeze([...(redis as readonly string[])]) : redis,
    slots,
    mode,
    secret,
    timeoutMs,
    onStoreError,
    prefix,
    syncMs,
    retryMs,
    clock,
    ticker,
    onError,
    onEvent,
  })
}
