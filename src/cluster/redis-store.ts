import type { ScoreStore, StoreSpec } from '../limit/store.js'
import { invalidOption } from '../errors.js'
import { SharedClient, type RedisStoreEvent } from './connection.js'
import { RedisExactStore } from './exact-store.js'
import { parseRedisOptions, type RedisStoreOptions } from './options.js'
import { RedisSyncStore } from './sync-store.js'

/** A store built by {@link redisStore}: a {@link ScoreStore} with a startup check. */
export interface RedisScoreStore extends ScoreStore {
  /**
   * Check Redis once without a failure mode: compares the fleet fingerprint (storing it
   * when absent); sync mode also pulls the fleet's cells. Await it at startup.
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT`, `ERR_GRUDGE_CLUSTER_UNAVAILABLE`,
   * `ERR_GRUDGE_CLUSTER_CLIENT`
   */
  ready(): Promise<void>
  /** Whether Redis is currently failing (requests follow `onStoreError`). */
  readonly failing: boolean
}

/** The factory {@link redisStore} returns: a `StoreFactory` building {@link RedisScoreStore}s. */
export interface RedisStoreFactory {
  (spec: StoreSpec): RedisScoreStore
  /** The mode every store of this factory uses. */
  readonly mode: 'exact' | 'sync'
  /**
   * {@link RedisScoreStore.ready} of every open store this factory has built so far (the
   * adapters build theirs at registration, so await it after registering, before listening):
   * refuses to start beside a fleet with another seed or shape.
   * @throws {GrudgeError} as {@link RedisScoreStore.ready}
   */
  ready(): Promise<void>
  /**
   * Add a listener of the stores' {@link RedisStoreEvent}s (`'down'` when Redis fails and
   * `onStoreError` — with `'local'` the in-process fallback — takes over, `'up'` when it
   * answers again, `'schedule'` when an instance adopts the fleet's period, `'autopipelining'`
   * once when a client you passed auto-pipelines EVALSHA, `'fleet-lag'` once per self-sized store
   * when another instance's adoption lag dropped a twin proposed here): the hook for a
   * framework logger, e.g. `store.onEvent((e) => fastify.log.warn({ policy: e.policy }, e.message))`.
   * Each event comes once per transition, not per request. A listener that throws is ignored.
   * @returns a function that removes the listener
   */
  readonly onEvent: (listener: (event: RedisStoreEvent) => void) => () => void
}

/**
 * A `StoreFactory` that keeps a policy's scores in Redis, shared by every instance of
 * a fleet (spec/cluster.md):
 *
 * - `mode: 'exact'` — the cells live in Redis; each decision is one EVALSHA of a Lua script
 *   that applies the Sketch's lazy decay (with Redis `TIME`) and update / tryUpdate
 *   atomically. Exact across the fleet; costs one round trip per request.
 * - `mode: 'sync'` — each instance decides on its own cells (no round trip on the request
 *   path) and every `syncMs` pushes what it added and pulls the fleet's merged cells.
 *   Over-admission is bounded (spec/cluster.md, "Sync bound").
 *
 * Either way the memory in Redis is fixed — at most (generations + 1) × L × M × 16 bytes per
 * policy — whatever the number of request keys, and no request waits longer than
 * `timeoutMs` for Redis (`onStoreError` decides instead).
 *
 * Options are parsed once here. The stores it builds have `ready()` (check the fingerprint
 * at startup) besides the {@link ScoreStore} methods.
 * @param options see {@link RedisStoreOptions}
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_SEED_REQUIRED` without `seed`;
 * `ERR_GRUDGE_OPTION_INVALID` naming any other bad option or a key that is not an option of
 * {@link RedisStoreOptions} (the message suggests the closest name; the client in `redis` is
 * a value and is not inspected), and, from the factory, a bad spec
 */
export function redisStore(options: RedisStoreOptions): RedisStoreFactory {
  const o = parseRedisOptions(options)
  const shared = new SharedClient(o.redis)
  if (o.onEvent !== undefined) shared.listeners.add(o.onEvent)
  const open = new Set<RedisScoreStore>()
  const factory = (spec: StoreSpec): RedisScoreStore => {
    const store = o.mode === 'exact' ? new RedisExactStore(spec, o, shared) : new RedisSyncStore(spec, o, shared)
    open.add(store)
    const close = store.close.bind(store)
    store.close = () => {
      open.delete(store)
      return close()
    }
    return store
  }
  const ready = async (): Promise<void> => {
    await Promise.all([...open].map((s) => s.ready()))
  }
  const onEvent = (listener: (event: RedisStoreEvent) => void): (() => void) => {
    if (typeof listener !== 'function') invalidOption('onEvent(listener)', 'a function', listener)
    shared.listeners.add(listener)
    return () => {
      shared.listeners.delete(listener)
    }
  }
  return Object.assign(factory, { mode: o.mode, ready, onEvent })
}
