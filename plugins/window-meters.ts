/**
 * The debt meters behind the stores for `@fastify/rate-limit` and `express-rate-limit`: a
 * "`max` per `windowMs`" limit read as a GCRA (generic cell rate algorithm, ITU-T I.371;
 * the virtual-scheduling form) in the time domain, so that one sketch serves every `max`.
 *
 * A key's debt D is in ms of theoretical time and drains at 1 ms per ms. A request costs the
 * emission interval e = windowMs / max and is admitted iff D + e ≤ windowMs; this admits `max`
 * requests at once from a fresh key, then one every e ms (rate max / windowMs, burst max).
 * Because the cost carries `max`, a per-key computed `max` needs no meter of its own; the
 * meters are keyed only by the power-of-two class of windowMs (2^⌈log2 windowMs⌉), which
 * bounds a store at {@link WINDOW_CLASSES_MAX} debt sketches plus as many refusal sketches,
 * whatever the keys, maxes and windows.
 *
 * Refused requests are counted in a second sketch (the refusals R, also in ms: + e per refusal,
 * draining 1 ms per ms, at most {@link REFUSALS_MAX_WINDOWS} windows), so that `current` grows
 * with repeated refusals (max + ⌈R / e⌉) without delaying the next admission; it is created on
 * the first refusal. `continueExceeding` and `exponentialBackoff` raise D on a refusal so that
 * the next admission is windowMs (or windowMs · 2^(n−1) for the n-th refusal in a row, at
 * most 2^{@link BACKOFF_DOUBLINGS_MAX} windows) away.
 * @module
 */
import { DebtMeter } from '../src/limit/debt-meter.js'
import type { ResolvedSketchOptions } from '../src/limit/options.js'
import { invalidOption } from '../src/errors.js'
import { settle } from '../src/limit/settle.js'
import type { ScoreStore } from '../src/limit/store.js'
import type { Clock } from '../src/clock.js'

/**
 * Most power-of-two classes of windowMs a store can hold: windows are ms in (0, 2^64], so
 * classes 2^0 … 2^64.
 * @internal
 */
export const WINDOW_CLASSES_MAX = 65

/**
 * The refusal count a key can reach, in windows: R ≤ 64 · class, i.e. up to 64 · max refusals
 * counted (FRL's `ban` works for any ban < 64 · max).
 * @internal
 */
export const REFUSALS_MAX_WINDOWS = 64

/**
 * Most doublings of `exponentialBackoff`: the wait stops growing at 2^16 windows.
 * @internal
 */
export const BACKOFF_DOUBLINGS_MAX = 16

/** How a refusal changes the debt (FRL's `continueExceeding` / `exponentialBackoff`; ERL has neither). */
export type RefusalMode = 'none' | 'continue' | 'backoff'

/**
 * One answer of {@link WindowMeters.consume} or {@link WindowMeters.read}.
 * @internal
 */
export interface WindowVerdict {
  /** Whether the request was admitted (for `read`: whether one would be). */
  admitted: boolean
  /** Requests counted for the key: ⌈D / e⌉ (≤ max) while admitted, max + ⌈R / e⌉ once refused. */
  current: number
  /** Ms until the debt drains to 0 (admitted) or until the next request fits (refused); ≥ 0, integer. */
  ttlMs: number
  /** Set when a shared store failed and its `onStoreError` decided. */
  failure: 'open' | 'closed' | undefined
}

/** Relative slack for float sums: max requests of cost windowMs / max add up to windowMs. */
const EPS = 1e-9

/**
 * `Date.now()` as a {@link Clock}: what `@fastify/rate-limit`'s LocalStore and
 * express-rate-limit's MemoryStore read, so `node:test` MockTimers (or sinon's fake timers)
 * drive the stores. Pass it as the `clock` sketch option. It reads the global `Date` at each
 * call, so a mock installed later is seen; wall time may step backwards (NTP, a mock's
 * reset), which the sketches treat as no time passing.
 */
export const dateClock: Clock = {
  now: () => Date.now(),
}

interface ClassMeters {
  debt: DebtMeter
  refusals: DebtMeter | undefined
}

/**
 * The meters of one store: per class of windowMs a debt sketch, and a refusal sketch made on
 * the first refusal.
 * @internal
 */
export class WindowMeters {
  private readonly classes = new Map<number, ClassMeters>()

  /**
   * @param sketch resolved sketch options shared by every meter
   * @param name the store's name (meters are named `name:2^k`)
   * @param mode how refusals change the debt
   */
  constructor(
    private readonly sketch: ResolvedSketchOptions,
    private readonly name: string,
    readonly mode: RefusalMode,
  ) {}

  private meters(windowMs: number): ClassMeters {
    const exp = Math.max(0, Math.ceil(Math.log2(windowMs)))
    let c = this.classes.get(exp)
    if (c === undefined) {
      const classMs = 2 ** exp
      const maxDebt = this.mode === 'backoff' ? classMs * (2 ** BACKOFF_DOUBLINGS_MAX + 1) : 2 * classMs
      c = {
        debt: new DebtMeter({ rate: 1000, burst: classMs, maxDebt }, this.sketch, `${this.name}:2^${exp}`, 'store.'),
        refusals: undefined,
      }
      this.classes.set(exp, c)
    }
    return c
  }

  private refusals(c: ClassMeters): ScoreStore {
    if (c.refusals === undefined) {
      const classMs = c.debt.burst
      c.refusals = new DebtMeter(
        { rate: 1000, burst: classMs, maxDebt: REFUSALS_MAX_WINDOWS * classMs },
        this.sketch,
        `${this.name}:2^${Math.log2(classMs)}:refusals`,
        'store.',
      )
    }
    return c.refusals.store
  }

  /**
   * Count one request of `key` under "`max` per `windowMs`".
   * @param key the key
   * @param windowMs the window in ms: finite, > 0
   * @param max requests per window: finite, ≥ 0 (0 refuses every request, as FRL's LocalStore)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a window or max out of range
   */
  consume(key: string, windowMs: number, max: number): WindowVerdict | Promise<WindowVerdict> {
    check(windowMs, max)
    const c = this.meters(windowMs)
    if (max === 0) return this.refuse(c, key, windowMs, max, windowMs, NaN)
    const e = windowMs / max
    return settle(c.debt.store.tryConsume(key, e, windowMs * (1 + EPS)), (r) => {
      if (r.failure !== undefined)
        return {
          admitted: r.failure === 'open',
          current: r.failure === 'open' ? 0 : max + 1,
          ttlMs: r.failure === 'open' ? 0 : 1000,
          failure: r.failure,
        }
      if (r.admitted)
        return {
          admitted: true,
          current: Math.min(max, Math.max(1, Math.ceil(r.score / e - 1e-6))),
          ttlMs: Math.ceil(r.score),
          failure: undefined,
        }
      return this.refuse(c, key, windowMs, max, e, r.score)
    })
  }

  private refuse(
    c: ClassMeters,
    key: string,
    windowMs: number,
    max: number,
    e: number,
    debt: number,
  ): WindowVerdict | Promise<WindowVerdict> {
    return settle(this.refusals(c).add(key, e), (refusedMs) => {
      const n = Math.max(1, Math.ceil(refusedMs / e - 1e-6))
      const current = max + n
      // max 0: nothing ever fits; the wait shown is one window, as LocalStore's
      if (max === 0) return { admitted: false, current, ttlMs: windowMs, failure: undefined }
      const wait = Math.max(0, debt + e - windowMs)
      let target = wait
      if (this.mode === 'continue') target = windowMs
      // FRL's stores stop the backoff at Number.MAX_SAFE_INTEGER ms; so do we, and at 2^16 windows
      else if (this.mode === 'backoff')
        target = Math.min(Number.MAX_SAFE_INTEGER, windowMs * 2 ** Math.min(n - 1, BACKOFF_DOUBLINGS_MAX))
      if (!(target > wait)) return { admitted: false, current, ttlMs: Math.ceil(wait), failure: undefined }
      return settle(c.debt.store.add(key, target - wait), () => ({
        admitted: false,
        current,
        ttlMs: Math.ceil(target),
        failure: undefined,
      }))
    })
  }

  /**
   * Read `key` without counting.
   * @param key the key
   * @param windowMs the window in ms: finite, > 0
   * @param max requests per window: finite, ≥ 0
   * @returns `admitted` whether a request now would be; `current` max + ⌈R / e⌉ while refusals
   * are counted, else ⌈D / e⌉; `ttlMs` ⌈D⌉
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a window or max out of range
   */
  read(key: string, windowMs: number, max: number): WindowVerdict | Promise<WindowVerdict> {
    check(windowMs, max)
    const c = this.meters(windowMs)
    const e = max === 0 ? windowMs : windowMs / max
    const refused = c.refusals === undefined ? 0 : c.refusals.store.read(key)
    return settle(c.debt.store.read(key), (debt) =>
      settle(refused, (refusedMs) => {
        const n = Math.ceil(refusedMs / e - 1e-6)
        return {
          admitted: max > 0 && debt + e <= windowMs * (1 + EPS),
          current: n > 0 ? max + n : Math.min(max, Math.max(0, Math.ceil(debt / e - 1e-6))),
          ttlMs: Math.ceil(debt),
          failure: undefined,
        }
      }),
    )
  }

  /**
   * Take one request back from `key` (ERL's `decrement`, for `skipSuccessfulRequests` /
   * `skipFailedRequests`): while refusals are counted for the key (R > 0) the refusal count
   * drops by one (the request taken back was most likely refused, and it added no debt),
   * else the debt drops by one emission interval, floored at 0. In a sketch this also lowers
   * the keys that share all of the key's cells, by at most that much.
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a window or max out of range
   */
  giveBack(key: string, windowMs: number, max: number): void | Promise<void> {
    check(windowMs, max)
    if (max === 0) return
    const c = this.meters(windowMs)
    const e = windowMs / max
    const refusals = c.refusals?.store
    const done = settle(refusals === undefined ? 0 : refusals.read(key), (refusedMs) =>
      refusedMs > 0 ? refusals!.add(key, -e) : c.debt.store.add(key, -e),
    )
    if (done instanceof Promise) return done.then(() => undefined)
  }

  /** Forget `key`'s debt and refusals in every class (ERL's `resetKey`); other keys sharing its cells drop too. */
  reset(key: string): void | Promise<void> {
    const pending: Promise<unknown>[] = []
    for (const c of this.classes.values()) {
      for (const m of [c.debt, c.refusals]) {
        if (m === undefined) continue
        const r = m.store.add(key, -m.maxDebt)
        if (r instanceof Promise) pending.push(r)
      }
    }
    if (pending.length > 0) return Promise.all(pending).then(() => undefined)
  }

  /** Memory of all sketches in bytes. */
  sizeBytes(): number {
    let n = 0
    for (const c of this.classes.values()) n += c.debt.store.sizeBytes() + (c.refusals?.store.sizeBytes() ?? 0)
    return n
  }

  /** Release every sketch (timers, connections). */
  async close(): Promise<void> {
    for (const c of this.classes.values()) {
      await c.debt.close()
      if (c.refusals !== undefined) await c.refusals.close()
    }
  }
}

function check(windowMs: number, max: number): void {
  if (!(typeof windowMs === 'number' && windowMs > 0 && windowMs <= 2 ** 64))
    invalidOption('timeWindow', 'a number of ms in (0, 2^64]', windowMs)
  if (!(typeof max === 'number' && max >= 0 && Number.isFinite(max))) invalidOption('max', 'a finite number ≥ 0', max)
}
