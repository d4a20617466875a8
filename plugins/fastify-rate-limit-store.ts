/**
 * A store for `@fastify/rate-limit`'s `store` option backed by a grudge debt meter, for
 * users who keep that plugin's API but want constant memory (its LocalStore is an LRU map
 * of every key, which also forgets a blocked key under a flood of fresh ones).
 *
 * How the fixed window maps (and how it differs): `max` per `timeWindow` becomes a debt
 * meter with burst = max and rate = max / timeWindow per second. A fixed window admits
 * `max` requests, then nothing until the window ends, then `max` at once again (up to
 * 2·max around a window edge); the debt meter admits the same `max` at once but then one
 * request every timeWindow / max ms, continuously, so there is no edge burst and a client
 * never waits a whole window. `current` is reported as ceil(debt) while admitted and
 * max + 1 when denied; `ttl` is the ms until the debt drains to 0 (admitted) or until one
 * more request fits (denied), so the plugin's `x-ratelimit-reset` and `retry-after` are
 * the real wait. `continueExceeding`, `exponentialBackoff` and `ban` are not supported
 * (denied requests add no debt).
 */
import { DebtMeter } from '../src/limit/debt-meter.js'
import {
  POLICY_SKETCH_OPTION_KEYS,
  resolveSketchOptions,
  type ResolvedSketchOptions,
  type PolicySketchOptions,
} from '../src/limit/options.js'
import { checkKnownOptions } from '../src/options.js'
import { settle } from '../src/limit/settle.js'
import { invalidOption } from '../src/errors.js'

/** The result shape @fastify/rate-limit expects. */
export interface RateLimitStoreResult {
  /** Requests counted for the key: ceil(debt) while admitted, max + 1 when denied. */
  current: number
  /** Ms until the debt drains to 0 (admitted) or until one more request fits (denied); ≥ 0. */
  ttl: number
}

/** Node-style callback @fastify/rate-limit passes to {@link GrudgeStore.incr}: an error or the result. */
export type RateLimitStoreCallback = (error: Error | null, result?: RateLimitStoreResult) => void

let stores = 0

function methodName(m: unknown): string {
  if (typeof m === 'string') return m
  if (Array.isArray(m)) return m.filter((x) => typeof x === 'string').join(',')
  return ''
}

/**
 * A `@fastify/rate-limit` store over debt meters, one per (timeWindow, max) pair seen.
 * Construct through {@link grudgeStore} to pass sketch options; `new GrudgeStore()` (as
 * the plugin does) uses the defaults.
 */
export class GrudgeStore {
  private readonly sketch: ResolvedSketchOptions
  /** The sketch options as given, for children (the resolved ones carry derived fields that are not options). */
  private readonly sketchOptions: PolicySketchOptions
  private readonly meters = new Map<string, DebtMeter>()
  private readonly name: string
  private readonly children: GrudgeStore[] = []

  /**
   * @param _pluginOptions the options @fastify/rate-limit passes (unused and not checked:
   * they are that plugin's)
   * @param sketch sketch options (levels, cellsPerLevel, generations, hasher, clock, ticker, store)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for bad sketch options, also a key
   * that is not an option of {@link PolicySketchOptions} (`store.level`)
   */
  constructor(_pluginOptions?: unknown, sketch?: PolicySketchOptions, name?: string) {
    checkKnownOptions(sketch, POLICY_SKETCH_OPTION_KEYS, 'store.')
    this.sketch = resolveSketchOptions(sketch, 'store.')
    const { hasher, clock, ticker, store } = this.sketch
    this.sketchOptions = { ...sketch, hasher, clock, ticker, store }
    this.name = name ?? `fastify-rate-limit:${++stores}`
  }

  private meter(timeWindow: number, max: number): DebtMeter {
    const id = `${timeWindow}:${max}`
    let m = this.meters.get(id)
    if (m === undefined) {
      if (!(typeof timeWindow === 'number' && timeWindow > 0 && Number.isFinite(timeWindow)))
        invalidOption('timeWindow', 'a finite number of ms > 0', timeWindow)
      if (!(typeof max === 'number' && max > 0 && Number.isFinite(max)))
        invalidOption('max', 'a finite number > 0', max)
      m = new DebtMeter({ rate: max / (timeWindow / 1000), burst: max }, this.sketch, `${this.name}:${id}`, 'store.')
      this.meters.set(id, m)
    }
    return m
  }

  /** Count one request for `key` (the plugin's `incr`). */
  incr(key: string, cb: RateLimitStoreCallback, timeWindow: number, max: number): void {
    try {
      const m = this.meter(timeWindow, max)
      const r = settle(m.consume(key, 1), (v) => {
        if (v.failure !== undefined) return { current: v.admitted ? 0 : max + 1, ttl: v.retryAfterMs }
        if (v.admitted)
          return { current: Math.min(max, Math.max(1, Math.ceil(v.debt - 1e-9))), ttl: Math.ceil(v.resetMs) }
        return { current: max + 1, ttl: Math.ceil(v.retryAfterMs) }
      })
      if (r instanceof Promise)
        r.then(
          (x) => cb(null, x),
          (err) => cb(err as Error),
        )
      else cb(null, r)
    } catch (err) {
      cb(err as Error)
    }
  }

  /** Read `key` without counting (the plugin's `read`). */
  read(key: string, cb: RateLimitStoreCallback, timeWindow: number, max: number): void {
    try {
      const m = this.meter(timeWindow, max)
      const r = settle(m.store.read(key), (debt) => ({
        current: Math.ceil(debt - 1e-9),
        ttl: Math.ceil((debt / m.rate) * 1000),
      }))
      if (r instanceof Promise)
        r.then(
          (x) => cb(null, x),
          (err) => cb(err as Error),
        )
      else cb(null, r)
    } catch (err) {
      cb(err as Error)
    }
  }

  /** A store for a route with its own limits (the plugin's `child`); same sketch options, its own meters. */
  child(routeOptions: { path?: string; url?: string; method?: unknown }): GrudgeStore {
    const c = new GrudgeStore(
      undefined,
      this.sketchOptions,
      `${this.name}:${methodName(routeOptions.method)} ${routeOptions.path ?? routeOptions.url ?? ''}`,
    )
    this.children.push(c)
    return c
  }

  /** Memory of all meters' sketches in bytes. */
  sizeBytes(): number {
    let n = 0
    for (const m of this.meters.values()) n += m.store.sizeBytes()
    for (const c of this.children) n += c.sizeBytes()
    return n
  }

  /** Stop rotation timers (the plugin has no close hook; the default timers are unref'd). */
  async close(): Promise<void> {
    await Promise.all([...this.meters.values()].map((m) => Promise.resolve(m.close())))
    await Promise.all(this.children.map((c) => c.close()))
  }
}

/**
 * A `GrudgeStore` constructor bound to sketch options, for `@fastify/rate-limit`:
 * `fastify.register(rateLimit, { max: 100, timeWindow: 60_000, store: grudgeStore({ cellsPerLevel: 4096 }) })`.
 * @param sketch sketch options; parsed now (bad options throw here)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`, also for a key that is not an option
 * of {@link PolicySketchOptions} (`store.level`, with the closest name suggested)
 */
export function grudgeStore(sketch: PolicySketchOptions = {}): {
  /**
   * Called by @fastify/rate-limit as `new Store(pluginOptions)`; builds a {@link GrudgeStore}
   * over the bound sketch options.
   * @param pluginOptions the options @fastify/rate-limit passes (unused)
   */
  new (pluginOptions?: unknown): GrudgeStore
} {
  checkKnownOptions(sketch, POLICY_SKETCH_OPTION_KEYS, 'store.')
  resolveSketchOptions(sketch, 'store.')
  return class BoundGrudgeStore extends GrudgeStore {
    constructor(pluginOptions?: unknown) {
      super(pluginOptions, sketch)
    }
  }
}
