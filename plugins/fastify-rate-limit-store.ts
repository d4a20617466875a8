/**
 * A store for `@fastify/rate-limit`'s `store` option backed by grudge debt meters, for
 * users who keep that plugin's API but want constant memory (its LocalStore is an LRU map
 * of every key, which also forgets a blocked key under a flood of fresh ones).
 *
 * How the fixed window maps (and how it differs; docs/migrating.md says it in full): `max`
 * per `timeWindow` becomes a GCRA with burst = max and rate = max / timeWindow per second.
 * A fixed window admits `max` requests, then nothing until the window ends, then `max` at
 * once again (up to 2·max around a window edge); the debt meter admits the same `max` at
 * once but then one request every timeWindow / max ms, continuously, so there is no edge
 * burst and a client never waits a whole window. `current` is ⌈debt / (timeWindow / max)⌉
 * while admitted and max + (refusals counted) once refused, so `ban` / `onBanReach` work;
 * `ttl` is the ms until the debt drains to 0 (admitted) or until one more request fits
 * (refused), so the plugin's `x-ratelimit-reset` and `retry-after` are the real wait.
 * `continueExceeding` and `exponentialBackoff` are read from the options the plugin hands
 * the store (`new Store(options)`, `child(routeOptions)`).
 *
 * Memory: one debt sketch per power-of-two class of `timeWindow` in use, plus one refusal
 * sketch per class once a request was refused: at most 2 × 65 sketches (`WINDOW_CLASSES_MAX`, window-meters.ts) per store (and per
 * route with its own limits), whatever the number of keys or of distinct computed `max`.
 */
import {
  POLICY_SKETCH_OPTION_KEYS,
  resolveSketchOptions,
  type ResolvedSketchOptions,
  type PolicySketchOptions,
} from '../src/limit/options.js'
import { checkKnownOptions } from '../src/options.js'
import { settle } from '../src/limit/settle.js'
import { WindowMeters, type RefusalMode, type WindowVerdict } from './window-meters.js'

export { dateClock } from './window-meters.js'

/** The result shape @fastify/rate-limit expects. */
export interface RateLimitStoreResult {
  /** Requests counted for the key: ⌈debt / (timeWindow / max)⌉ while admitted, max + refusals counted when refused. */
  current: number
  /** Ms until the debt drains to 0 (admitted) or until one more request fits (refused); integer ≥ 0. */
  ttl: number
}

/** Node-style callback @fastify/rate-limit passes to {@link GrudgeStore.incr}: an error or the result. */
export type RateLimitStoreCallback = (error: Error | null, result?: RateLimitStoreResult) => void

/** The options of @fastify/rate-limit a {@link GrudgeStore} reads (it passes them all; the rest are ignored). */
export interface RateLimitStoreOptions {
  /** FRL's `continueExceeding`: a refused request puts the next admission a whole `timeWindow` away. */
  continueExceeding?: boolean
  /** FRL's `exponentialBackoff`: the n-th refusal in a row puts the next admission timeWindow · 2^(n−1) away (at most 2^16 windows). */
  exponentialBackoff?: boolean
}

let stores = 0

function methodName(m: unknown): string {
  if (typeof m === 'string') return m
  if (Array.isArray(m)) return m.filter((x) => typeof x === 'string').join(',')
  return ''
}

function modeOf(options: unknown, parent: RefusalMode): RefusalMode {
  if (typeof options !== 'object' || options === null) return parent
  const o = options as RateLimitStoreOptions
  // FRL gives continueExceeding precedence over exponentialBackoff (LocalStore, RedisStore)
  if (o.continueExceeding === true) return 'continue'
  if (o.exponentialBackoff === true) return 'backoff'
  return parent
}

function answer(r: WindowVerdict | Promise<WindowVerdict>, cb: RateLimitStoreCallback): void {
  const x = settle(r, (v) => ({ current: v.current, ttl: v.ttlMs }))
  if (x instanceof Promise)
    x.then(
      (y) => cb(null, y),
      (err) => cb(err as Error),
    )
  else cb(null, x)
}

/**
 * A `@fastify/rate-limit` store over grudge debt meters (see the module comment for the
 * mapping and its memory bound). Construct through {@link grudgeStore} to pass sketch
 * options; `new GrudgeStore(options)` (as the plugin does) uses the defaults.
 */
export class GrudgeStore {
  private readonly sketch: ResolvedSketchOptions
  /** The sketch options as given, for children (the resolved ones carry derived fields that are not options). */
  private readonly sketchOptions: PolicySketchOptions
  private readonly meters: WindowMeters
  private readonly name: string
  private readonly children: GrudgeStore[] = []

  /**
   * @param pluginOptions the options @fastify/rate-limit passes; only `continueExceeding` and
   * `exponentialBackoff` are read (the rest are that plugin's)
   * @param sketch sketch options (levels, cellsPerLevel, generations, hasher, clock, ticker, store);
   * pass `clock: dateClock` to follow `Date.now()` (and so node:test MockTimers)
   * @param name the store's name in its sketches (default `fastify-rate-limit:<n>`)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for bad sketch options, also a key
   * that is not an option of {@link PolicySketchOptions} (`store.level`)
   */
  constructor(pluginOptions?: RateLimitStoreOptions | object, sketch?: PolicySketchOptions, name?: string) {
    checkKnownOptions(sketch, POLICY_SKETCH_OPTION_KEYS, 'store.')
    this.sketch = resolveSketchOptions(sketch, 'store.')
    const { hasher, clock, ticker, store } = this.sketch
    this.sketchOptions = { ...sketch, hasher, clock, ticker, store }
    this.name = name ?? `fastify-rate-limit:${++stores}`
    this.meters = new WindowMeters(this.sketch, this.name, modeOf(pluginOptions, 'none'))
  }

  /**
   * Count one request for `key` (the plugin's `incr`).
   * @param key the keyGenerator's result: a string, or anything else as `String(key)` (FRL takes numbers)
   * @param cb called once with the result, or with a `GrudgeError` (`ERR_GRUDGE_OPTION_INVALID`
   * for a `timeWindow` outside (0, 2^53] ms or a `max` that is not a finite number ≥ 0)
   * @param timeWindow the window in ms
   * @param max requests per window; 0 refuses every request (429, as LocalStore)
   */
  incr(key: string | number, cb: RateLimitStoreCallback, timeWindow: number, max: number): void {
    try {
      answer(this.meters.consume(typeof key === 'string' ? key : String(key), timeWindow, max), cb)
    } catch (err) {
      cb(err as Error)
    }
  }

  /**
   * Read `key` without counting (the plugin's `read`, for `{ increment: false }`).
   * @param key as for {@link GrudgeStore.incr}
   * @param cb called once with `{ current, ttl }` (ttl: ms until the debt drains to 0) or an error
   * @param timeWindow the window in ms
   * @param max requests per window
   */
  read(key: string | number, cb: RateLimitStoreCallback, timeWindow: number, max: number): void {
    try {
      answer(this.meters.read(typeof key === 'string' ? key : String(key), timeWindow, max), cb)
    } catch (err) {
      cb(err as Error)
    }
  }

  /**
   * A store for a route with its own limits (the plugin's `child`): same sketch options, its
   * own meters, and the route's `continueExceeding` / `exponentialBackoff` (else this store's).
   * @param routeOptions the route's merged options as the plugin passes them
   */
  child(routeOptions: { path?: string; url?: string; method?: unknown } & RateLimitStoreOptions): GrudgeStore {
    const inherited: RateLimitStoreOptions = {
      continueExceeding: routeOptions.continueExceeding ?? this.meters.mode === 'continue',
      exponentialBackoff: routeOptions.exponentialBackoff ?? this.meters.mode === 'backoff',
    }
    const c = new GrudgeStore(
      inherited,
      this.sketchOptions,
      `${this.name}:${methodName(routeOptions.method)} ${routeOptions.path ?? routeOptions.url ?? ''}`,
    )
    this.children.push(c)
    return c
  }

  /** Memory of all meters' sketches in bytes, children included. */
  sizeBytes(): number {
    let n = this.meters.sizeBytes()
    for (const c of this.children) n += c.sizeBytes()
    return n
  }

  /** Stop rotation timers (the plugin has no close hook; the default timers are unref'd). */
  async close(): Promise<void> {
    await this.meters.close()
    await Promise.all(this.children.map((c) => c.close()))
  }
}

/**
 * A `GrudgeStore` constructor bound to sketch options, for `@fastify/rate-limit`:
 * `fastify.register(rateLimit, { max: 100, timeWindow: 60_000, store: grudgeStore({ cellsPerLevel: 4096 }) })`.
 * @param sketch sketch options; parsed now (bad options throw here). `clock: dateClock`
 * makes the store follow `Date.now()`, as FRL's LocalStore does.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`, also for a key that is not an option
 * of {@link PolicySketchOptions} (`store.level`, with the closest name suggested)
 */
export function grudgeStore(sketch: PolicySketchOptions = {}): {
  /**
   * Called by @fastify/rate-limit as `new Store(pluginOptions)`; builds a {@link GrudgeStore}
   * over the bound sketch options.
   * @param pluginOptions the options @fastify/rate-limit passes (`continueExceeding` and
   * `exponentialBackoff` are read)
   */
  new (pluginOptions?: RateLimitStoreOptions | object): GrudgeStore
} {
  checkKnownOptions(sketch, POLICY_SKETCH_OPTION_KEYS, 'store.')
  resolveSketchOptions(sketch, 'store.')
  return class BoundGrudgeStore extends GrudgeStore {
    constructor(pluginOptions?: RateLimitStoreOptions | object) {
      super(pluginOptions, sketch)
    }
  }
}
