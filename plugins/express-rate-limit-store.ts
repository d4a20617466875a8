/**
 * A store for `express-rate-limit`'s `store` option backed by grudge debt meters, for users
 * who keep that package's API (`limit`, `windowMs`, its headers, handler and validations) but
 * want constant memory: its MemoryStore keeps a map entry per client for a window.
 *
 * The mapping is the one of `grudgeStore` for @fastify/rate-limit (docs/migrating.md says it
 * once for both): `limit` per `windowMs` becomes a GCRA with burst = limit and rate =
 * limit / windowMs per second; express-rate-limit compares the `totalHits` we report with its
 * `limit`, so `totalHits` is ⌈debt / (windowMs / limit)⌉ (≤ limit) while admitted and
 * limit + (refusals counted) once refused, and `resetTime` is when the debt drains to 0
 * (admitted) or when one more request fits (refused).
 *
 * The types below are express-rate-limit's public `Store` interface written structurally, so
 * this module (and its `.d.ts`) need no import of that package.
 */
import {
  POLICY_SKETCH_OPTION_KEYS,
  resolveSketchOptions,
  type ResolvedSketchOptions,
  type PolicySketchOptions,
} from '../src/limit/options.js'
import { checkKnownOptions } from '../src/options.js'
import { GrudgeError, invalidOption } from '../src/errors.js'
import { settle } from '../src/limit/settle.js'
import { WindowMeters, type WindowVerdict } from './window-meters.js'

/** express-rate-limit's `ClientRateLimitInfo` / `IncrementResponse`: hits counted and when they reset. */
export interface ExpressRateLimitInfo {
  /** Hits counted for the key (see the module comment for what a GCRA counts). */
  totalHits: number
  /** When the key's debt drains to 0 (admitted) or one more request fits (refused). */
  resetTime: Date | undefined
}

/** What {@link GrudgeExpressStore.init} reads of express-rate-limit's options (it passes them all). */
export interface ExpressRateLimitInitOptions {
  /** The window in ms: finite, > 0 (ERL's default 60 000). */
  windowMs: number
  /** Requests per window: a finite number ≥ 0. A function of the request is refused (see {@link GrudgeExpressStore.init}). */
  limit: unknown
}

let stores = 0

/**
 * An express-rate-limit `Store` over grudge debt meters. Memory: one debt sketch for the
 * window's power-of-two class, plus one refusal sketch once a request was refused, whatever
 * the number of clients.
 */
export class GrudgeExpressStore {
  private readonly sketch: ResolvedSketchOptions
  private meters: WindowMeters
  private windowMs = 60_000
  private limit: number | undefined
  /** Prepended to keys by express-rate-limit's double-count check: this store's name. */
  readonly prefix: string
  /** True: counts live in this process's sketch, unless the `store` sketch option is a shared store. */
  readonly localKeys: boolean

  /**
   * @param sketch sketch options (levels, cellsPerLevel, generations, hasher, clock, ticker,
   * store); `clock: dateClock` follows `Date.now()` as ERL's MemoryStore does (so fake timers drive it)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for bad sketch options, also a key that
   * is not an option of {@link PolicySketchOptions}, with the closest name suggested
   */
  constructor(sketch: PolicySketchOptions = {}) {
    checkKnownOptions(sketch, POLICY_SKETCH_OPTION_KEYS, 'store.')
    this.sketch = resolveSketchOptions(sketch, 'store.')
    this.prefix = `express-rate-limit:${++stores}:`
    this.localKeys = sketch.store === undefined
    this.meters = new WindowMeters(this.sketch, this.prefix, 'none')
  }

  /**
   * Called once by express-rate-limit with its options: reads `windowMs` and `limit`.
   * @param options express-rate-limit's parsed options
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a `windowMs` that is not a finite
   * number > 0, or a `limit` that is not a finite number ≥ 0 — including a function of the
   * request: the emission interval windowMs / limit is the cost charged, so the store must know
   * it; use one limiter (and store) per plan instead. express-rate-limit logs what init throws,
   * and every later request then fails with the same error.
   */
  init(options: ExpressRateLimitInitOptions): void {
    const w = options.windowMs
    if (!(typeof w === 'number' && w > 0 && Number.isFinite(w)))
      invalidOption('windowMs', 'a finite number of ms > 0', w)
    const l = options.limit
    if (typeof l === 'function')
      invalidOption(
        'limit',
        'a number for grudgeExpressStore (a function of the request is not supported: use one limiter per plan)',
        l,
      )
    if (!(typeof l === 'number' && l >= 0 && Number.isFinite(l))) invalidOption('limit', 'a finite number ≥ 0', l)
    this.windowMs = w
    this.limit = l
  }

  private configured(): number {
    if (this.limit === undefined)
      throw new GrudgeError(
        'ERR_GRUDGE_OPTION_INVALID',
        'option "limit": expected init() to have been called with a valid limit by express-rate-limit, received none (see the error logged at init)',
      )
    return this.limit
  }

  private info(v: WindowVerdict): ExpressRateLimitInfo {
    return { totalHits: v.current, resetTime: new Date(this.sketch.clock.now() + v.ttlMs) }
  }

  /**
   * Count one hit for `key`.
   * @returns the hits counted and when they reset (synchronously for an in-process sketch)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when init did not configure the store
   */
  increment(key: string): ExpressRateLimitInfo | Promise<ExpressRateLimitInfo> {
    return settle(this.meters.consume(key, this.windowMs, this.configured()), (v) => this.info(v))
  }

  /**
   * Take one hit back (`skipSuccessfulRequests`, `skipFailedRequests`): a refusal while
   * refusals are counted for the key, else one emission interval of debt. In a sketch this also
   * lowers keys that share all of the key's cells.
   */
  decrement(key: string): void | Promise<void> {
    return this.meters.giveBack(key, this.windowMs, this.configured())
  }

  /**
   * The hits counted for `key` without counting one (ERL's `getKey`).
   * @returns `totalHits` as for {@link GrudgeExpressStore.increment}, `resetTime` when the debt drains to 0
   */
  get(key: string): ExpressRateLimitInfo | Promise<ExpressRateLimitInfo> {
    return settle(this.meters.read(key, this.windowMs, this.configured()), (v) => this.info(v))
  }

  /**
   * Forget `key`'s debt and refusals (ERL's `resetKey`). In a sketch this also clears keys that
   * share all of the key's cells (they only ever gain from it: the Min aggregator).
   */
  resetKey(key: string): void | Promise<void> {
    return this.meters.reset(key)
  }

  /** Forget every key: the sketches are released and new empty ones take their place. */
  async resetAll(): Promise<void> {
    const old = this.meters
    this.meters = new WindowMeters(this.sketch, this.prefix, 'none')
    await old.close()
  }

  /** Memory of the store's sketches in bytes. */
  sizeBytes(): number {
    return this.meters.sizeBytes()
  }

  /** Stop rotation timers and release shared stores (ERL's `shutdown`). */
  async shutdown(): Promise<void> {
    await this.meters.close()
  }
}

/**
 * A store for express-rate-limit backed by a grudge debt meter:
 * `rateLimit({ windowMs: 60_000, limit: 100, store: grudgeExpressStore({ cellsPerLevel: 4096 }) })`.
 * Each limiter needs its own store instance, as with any ERL store.
 * @param sketch sketch options; parsed now (bad options throw here). `clock: dateClock`
 * follows `Date.now()`, as ERL's MemoryStore does.
 * @returns a store that express-rate-limit initialises with its `windowMs` and numeric `limit`
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID`, also for a key that is not an option of
 * {@link PolicySketchOptions}
 */
export function grudgeExpressStore(sketch: PolicySketchOptions = {}): GrudgeExpressStore {
  return new GrudgeExpressStore(sketch)
}
