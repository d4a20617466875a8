import { systemClock, type Clock } from '../clock.js'
import { GrudgeError, GrudgeRangeError, describeValue, invalidOption } from '../errors.js'
import { checkMergeableFamily, hasWholeEstimate, sameBytes, type Mergeable, type MergeableFamily } from './mergeable.js'
import { MAX_KEEP, MAX_TIME_MS, decodeWindow, encodeWindow, type WindowParts } from './window-codec.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** What {@link WindowOptions.onRoll} receives when a move into a new slot drops expired slots. */
export interface RollEvent {
  /** Key of the new current slot, `floor(nowMs / everyMs)`. */
  key: number
  /** Key of the previous current slot. */
  previousKey: number
  /** Number of slots that expired and were dropped by this move: 1 or more. */
  dropped: number
  /**
   * Number of slots held after the move: the new slot counts when an add caused the move
   * (it opens on its first add), not after a bare tick.
   */
  slotCount: number
}

/** Options of {@link Window}. */
export interface WindowOptions {
  /** Span of one tumbling slot in ms: a positive safe integer. Required. */
  everyMs: number
  /**
   * Number of slots kept, including the one still filling: an integer in [1, 2^20].
   * The window covers between (keep − 1)·everyMs and keep·everyMs of history. Required.
   */
  keep: number
  /** Time source in ms, read by every method without `At`; default the monotonic {@link systemClock}. */
  clock?: Clock
  /**
   * Called synchronously each time a move into a new slot drops at least one expired slot
   * (a move that drops nothing is not reported, as in ExDataSketch's Window), after the
   * triggering add's item was added; for telemetry. An exception it throws propagates to
   * the caller of add/addAll/tick (or their `At` forms).
   */
  onRoll?: (event: RollEvent) => void
}

/** Options of {@link Window.deserialize}. */
export interface WindowDeserializeOptions<S extends Mergeable = Mergeable> {
  /** Time source in ms; default {@link systemClock}. */
  clock?: Clock
  /** See {@link WindowOptions.onRoll}. */
  onRoll?: (event: RollEvent) => void
  /**
   * The slots' family (its class). Optional for the built-in families (HyperLogLog,
   * CountMinSketch), which are found by the family id in the frame; required for any other
   * (a Bloom filter or your own).
   */
  family?: MergeableFamily<S>
}

/**
 * The option names of {@link WindowOptions}; any other key is refused.
 * @internal
 */
export const WINDOW_OPTION_KEYS = optionKeys<WindowOptions>({ everyMs: true, keep: true, clock: true, onRoll: true })
/**
 * The option names of {@link WindowDeserializeOptions}; any other key is refused.
 * @internal
 */
export const WINDOW_DESERIALIZE_KEYS = optionKeys<WindowDeserializeOptions>({
  clock: true,
  onRoll: true,
  family: true,
})

/** One held slot: its key `floor(t / everyMs)` and its sketch. */
export interface WindowSlot<S> {
  /** The slot key. */
  key: number
  /** The slot's sketch (the live object: treat it as read-only). */
  sketch: S
}

/** The item type of a family: what its `add` takes. */
export type WindowItem<S extends Mergeable> = Parameters<S['add']>[0]

interface Adder {
  add(item: unknown): unknown
}
interface WholeEstimator {
  estimate(): number
}
interface ItemEstimator {
  estimate(item: unknown): number
}

/** Largest `keep`: 2^20. */
export const WINDOW_MAX_KEEP = MAX_KEEP

/**
 * A sliding window over any mergeable sketch family: a ring of `keep` tumbling slots,
 * each a sketch of the items seen during `everyMs` ms. It answers "in about the last N
 * minutes" questions (distinct clients, how often a key was rejected) with no timer:
 * time moves only when an add or tick brings a later time.
 *
 * Time: every method without `At` reads the injected clock; its `…At(nowMs, …)` twin
 * takes the time first, as golang.org/x/time/rate's `AllowN(t, n)` does.
 *
 * Rules (normative in `spec/window.md`):
 * - The slot of time t has key `floor(t / everyMs)` (floor, also for negative t).
 * - With current key K (the key of the latest time seen), a slot is live when its key is
 *   greater than K − keep. `keep` includes the slot still filling, so the window covers
 *   between (keep − 1)·everyMs and keep·everyMs of history.
 * - Time never goes backwards: a time lower than the latest one seen is treated as that
 *   latest one, so slots never expire out of order and a late item lands in the current
 *   slot.
 * - add/addAll/tick move time forward and drop every expired slot at once, however long
 *   the gap (one pass over the ring, never one step per elapsed slot). The queries
 *   (merged, estimate, slots) are pure: they consider the slots live at
 *   `max(nowMs, latest seen)` and change nothing.
 * - All slots are empty copies of one template sketch, so they share its shape and seed
 *   and always merge.
 *
 * @typeParam S the family's sketch type
 */
export class Window<S extends Mergeable = Mergeable> {
  /** The slots' family (the template's class). */
  readonly family: MergeableFamily<S>
  /** Span of one slot in ms. */
  readonly everyMs: number
  /** Number of slots kept, including the one filling. */
  readonly keep: number
  /** The time source (ms). */
  readonly clock: Clock
  private readonly template: S
  private readonly templateFrame: Uint8Array | undefined
  private readonly onRoll: ((event: RollEvent) => void) | undefined
  private readonly ring: Array<S | undefined>
  private readonly ringKeys: Float64Array
  private lastNow = -Infinity
  private curKey = -Infinity
  private curIdx = 0
  private cur: S | undefined = undefined
  private held = 0
  // a roll detected by advance(), reported by finish() once the item is in
  private rollPending = false
  private rollFrom = 0
  private rollDropped = 0

  /**
   * An empty window.
   * @param template an empty sketch of a mergeable family (see {@link Mergeable}), e.g.
   * `HyperLogLog.bySize({ precision: 14 })`, `CountMinSketch.byAccuracy({ epsilon, delta })`
   * or a Bloom filter: every slot is an empty copy of it (same shape and seed). The window
   * keeps its own copy, so the object passed stays the caller's.
   * @param options see {@link WindowOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_UNSUPPORTED_OPERATION` naming the family when it has
   * no merge (or another method of the contract); `ERR_GRUDGE_OPTION_INVALID` naming
   * `template` (not a sketch, or, for a family with `emptyLike()`, not empty), `everyMs`,
   * `keep`, `clock` or `onRoll`, or a key that is not an option of {@link WindowOptions}
   */
  constructor(template: S, options: WindowOptions) {
    if (typeof template !== 'object' || template === null)
      invalidOption('template', 'an empty sketch, e.g. HyperLogLog.bySize({ precision: 14 })', template)
    const family = template.constructor as unknown as MergeableFamily<S>
    checkMergeableFamily(family, 'template')
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object with everyMs and keep', options)
    checkKnownOptions(options, WINDOW_OPTION_KEYS)
    const { everyMs, keep } = options
    if (typeof everyMs !== 'number' || !Number.isSafeInteger(everyMs) || everyMs < 1) {
      invalidOption('everyMs', 'a positive integer number of ms', everyMs)
    }
    if (typeof keep !== 'number' || !Number.isInteger(keep) || keep < 1 || keep > WINDOW_MAX_KEEP) {
      invalidOption('keep', 'an integer in [1, 2^20]', keep)
    }
    const clock = options.clock ?? systemClock
    if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function') {
      invalidOption('clock', 'an object with now(): number', clock)
    }
    if (options.onRoll !== undefined && typeof options.onRoll !== 'function') {
      invalidOption('onRoll', 'a function or undefined', options.onRoll)
    }
    this.family = family
    this.everyMs = everyMs
    this.keep = keep
    this.clock = clock
    this.onRoll = options.onRoll
    const frame = template.serialize()
    if (typeof template.emptyLike === 'function') {
      const empty = template.emptyLike() as S
      if (!sameBytes(empty.serialize(), frame))
        invalidOption('template', `an empty ${family.name} (no item added)`, 'a sketch with items')
      this.template = empty
      this.templateFrame = undefined
    } else {
      // without emptyLike every slot opens by reading this frame: the template is copied as it is
      this.template = family.deserialize(frame)
      this.templateFrame = frame
    }
    this.ring = new Array<S | undefined>(keep).fill(undefined)
    this.ringKeys = new Float64Array(keep)
  }

  /** A restored window: the parts a frame held, placed in a new ring (no clock read, no roll reported). */
  private static fromParts<S extends Mergeable>(
    parts: WindowParts<S>,
    options: WindowDeserializeOptions<S>,
  ): Window<S> {
    const w = new Window<S>(parts.template, {
      everyMs: parts.everyMs,
      keep: parts.keep,
      ...(options.clock !== undefined ? { clock: options.clock } : {}),
      ...(options.onRoll !== undefined ? { onRoll: options.onRoll } : {}),
    })
    const { lastSeenMs, slots } = parts
    w.lastNow = lastSeenMs
    if (lastSeenMs !== -Infinity) {
      w.curKey = Math.floor(lastSeenMs / parts.everyMs)
      w.curIdx = mod(w.curKey, parts.keep)
    }
    for (const { key, sketch } of slots) {
      const idx = mod(key, parts.keep)
      w.ring[idx] = sketch
      w.ringKeys[idx] = key
    }
    w.held = slots.length
    if (w.ring[w.curIdx] !== undefined && w.ringKeys[w.curIdx] === w.curKey) w.cur = w.ring[w.curIdx]
    return w
  }

  /**
   * Add `item` to the slot of `clock.now()`; see {@link Window.addAt}.
   * @param item passed to the family's `add` (a string or bytes for the built-ins)
   * @throws as {@link Window.addAt}
   */
  add(item: WindowItem<S>): void {
    this.addAt(this.clock.now(), item)
  }

  /**
   * Add `item` to the slot of `nowMs` (opening it if needed), after dropping every
   * expired slot. No allocation except when a slot opens.
   * @param nowMs time in ms, within ±8.64e15; below the latest time seen it counts as that time
   * @param item passed to the family's `add` (a string or bytes for the built-ins)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `nowMs` for a time beyond
   * ±8.64e15 ms (the Date range; nothing changes); whatever the family's `add` throws
   * (e.g. `ERR_GRUDGE_KEY_INVALID`), after time has moved and any roll was reported
   */
  addAt(nowMs: number, item: WindowItem<S>): void {
    this.advance(nowMs)
    const s = (this.cur ?? this.open()) as unknown as Adder
    if (!this.rollPending) {
      s.add(item)
      return
    }
    // a rejected item must not hold the roll back: the next move would overwrite it
    try {
      s.add(item)
    } finally {
      this.finish()
    }
  }

  /**
   * Add every item of `items` to the slot of `clock.now()` (read once); see {@link Window.addAllAt}.
   * @param items any iterable of items
   * @throws as {@link Window.addAllAt}
   */
  addAll(items: Iterable<WindowItem<S>>): void {
    this.addAllAt(this.clock.now(), items)
  }

  /**
   * Add every item of `items` to the slot of `nowMs`.
   * @param nowMs time in ms, within ±8.64e15
   * @param items any iterable of items
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `items` when it is not
   * iterable (nothing changes); otherwise as {@link Window.addAt}; items before a
   * rejected one stay added
   */
  addAllAt(nowMs: number, items: Iterable<WindowItem<S>>): void {
    if (typeof (items as { [Symbol.iterator]?: unknown } | null)?.[Symbol.iterator] !== 'function')
      invalidOption('items', 'an iterable of items', items)
    this.advance(nowMs)
    const s = (this.cur ?? this.open()) as unknown as Adder
    try {
      for (const item of items) s.add(item)
    } finally {
      if (this.rollPending) this.finish()
    }
  }

  /**
   * Move time to `clock.now()`; see {@link Window.tickAt}.
   * @throws as {@link Window.tickAt}
   */
  tick(): void {
    this.tickAt(this.clock.now())
  }

  /**
   * Move time to `nowMs` and drop every expired slot, inserting nothing.
   * @param nowMs time in ms, within ±8.64e15
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `nowMs` beyond ±8.64e15 ms
   */
  tickAt(nowMs: number): void {
    this.advance(nowMs)
    if (this.rollPending) this.finish()
  }

  /**
   * The live slots merged into a fresh sketch, as of `clock.now()`; see {@link Window.mergedAt}.
   * @throws as {@link Window.mergedAt}
   */
  merged(): S {
    return this.mergedAt(this.clock.now())
  }

  /**
   * A fresh sketch: an empty copy of the template into which every slot live at
   * `max(nowMs, latest seen)` is merged. The window itself is not changed, and the result
   * is the caller's (changing it changes nothing in the window).
   * @param nowMs time in ms
   * @returns a new sketch of the family (empty when no slot is live)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  mergedAt(nowMs: number): S {
    const floor = this.liveFloor(nowMs)
    const out = this.emptySketch() as unknown as { merge(other: S): void }
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined && this.ringKeys[i] > floor) out.merge(s)
    }
    return out as unknown as S
  }

  /**
   * The window's estimate as of `clock.now()`; see {@link Window.estimateAt}.
   * @param item for a per-item family (Count-Min), the item; absent for a whole-sketch
   * family (HyperLogLog)
   * @throws as {@link Window.estimateAt}
   */
  estimate(item?: WindowItem<S>): number {
    return this.estimateAt(this.clock.now(), item)
  }

  /**
   * The family's estimate over the slots live at `max(nowMs, latest seen)`, mirroring the
   * slots' own `estimate`. Pure.
   * - Without `item`, for a family whose `estimate()` takes no argument (HyperLogLog):
   *   `mergedAt(nowMs).estimate()`, distinct items (an empty window estimates 0).
   * - With `item`, for a family with a per-item `estimate(item)` (Count-Min: "how often was
   *   this key rejected in the last N minutes"): the sum of each live slot's
   *   `estimate(item)`, without building a merged sketch. A per-item count is additive over
   *   disjoint time slots, so the sum is never below the true count and never above
   *   `mergedAt(nowMs).estimate(item)` (a sum of row minima is at most the minimum of row
   *   sums). Allocates nothing beyond what the family's estimate does.
   * @param nowMs time in ms
   * @param item the item, for a per-item family only
   * @throws {GrudgeError} `ERR_GRUDGE_UNSUPPORTED_OPERATION` when the family has no
   * estimate of the form asked for (no argument for Count-Min, an item for HyperLogLog, any
   * for a Bloom filter: use `mergedAt(nowMs)` and the family's own query)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  estimateAt(nowMs: number, item?: WindowItem<S>): number {
    const e = (this.template as { estimate?: unknown }).estimate
    const has = typeof e === 'function'
    if (item === undefined) {
      if (!hasWholeEstimate(this.template))
        this.unsupported('estimate() taking no argument', has ? 'pass the item: estimate(item)' : undefined)
      return (this.mergedAt(nowMs) as unknown as WholeEstimator).estimate()
    }
    if (!has || e.length === 0)
      this.unsupported('a per-item estimate(item)', has ? 'call estimate() without an item' : undefined)
    const floor = this.liveFloor(nowMs)
    let sum = 0
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined && this.ringKeys[i] > floor) sum += (s as unknown as ItemEstimator).estimate(item)
    }
    return sum
  }

  /**
   * The slots live as of `clock.now()`, newest first; see {@link Window.slotsAt}.
   * @throws as {@link Window.slotsAt}
   */
  slots(): Array<WindowSlot<S>> {
    return this.slotsAt(this.clock.now())
  }

  /**
   * The slots live at `max(nowMs, latest seen)`, newest first. Only slots that received
   * an add exist. Pure.
   * @param nowMs time in ms
   * @returns `{ key, sketch }` per slot; the sketches are the window's own (read-only)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  slotsAt(nowMs: number): Array<WindowSlot<S>> {
    const floor = this.liveFloor(nowMs)
    const out: Array<WindowSlot<S>> = []
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined && this.ringKeys[i] > floor) out.push({ key: this.ringKeys[i], sketch: s })
    }
    return out.sort((a, b) => b.key - a.key)
  }

  /** Number of slots held now (live as of the latest time seen), at most `keep`. */
  get slotCount(): number {
    return this.held
  }

  /** The latest time seen by add/addAll/tick (or their `At` forms), in ms (−Infinity before any). */
  get lastSeenMs(): number {
    return this.lastNow
  }

  /**
   * Memory held in bytes: the template's `sizeBytes()` plus every held slot's. At most
   * (keep + 1) × one sketch.
   */
  sizeBytes(): number {
    let n = this.template.sizeBytes()
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined) n += s.sizeBytes()
    }
    return n
  }

  /**
   * The window as a grudge frame (family 6, version 1), embedding the template's frame
   * and each held slot's frame, newest first; layout in `spec/window.md`. The seed field
   * is the template's.
   */
  serialize(): Uint8Array {
    const slots: Array<WindowSlot<S>> = []
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined) slots.push({ key: this.ringKeys[i], sketch: s })
    }
    slots.sort((a, b) => b.key - a.key)
    return encodeWindow({
      everyMs: this.everyMs,
      keep: this.keep,
      lastSeenMs: this.lastNow,
      template: this.template,
      slots,
    })
  }

  /**
   * Read a window back from {@link Window.serialize}'s frame. Every field is checked: the
   * frame itself, everyMs, keep, the latest time, the slot count, the header seed (the
   * template's), each embedded frame (family, checksum…), the template (empty, for
   * families with `emptyLike`), each slot key (an integer, strictly decreasing, live as of the
   * latest time) and each slot's compatibility with the template.
   * @param bytes the frame
   * @param options see {@link WindowDeserializeOptions}
   * @throws {GrudgeError} a `ERR_GRUDGE_FORMAT_*` code (three garbage bytes give
   * `ERR_GRUDGE_FORMAT_TRUNCATED`); `ERR_GRUDGE_FORMAT_FAMILY` when the slots' family is
   * not built in and `options.family` is absent; `ERR_GRUDGE_OPTION_INVALID` /
   * `ERR_GRUDGE_UNSUPPORTED_OPERATION` for bad options (an unknown key included)
   */
  static deserialize<S extends Mergeable = Mergeable>(
    bytes: Uint8Array,
    options: WindowDeserializeOptions<S> = {},
  ): Window<S> {
    if (typeof options !== 'object' || options === null) invalidOption('options', 'an object', options)
    checkKnownOptions(options, WINDOW_DESERIALIZE_KEYS)
    return Window.fromParts(decodeWindow(bytes, options.family), options)
  }

  /** Throw `ERR_GRUDGE_UNSUPPORTED_OPERATION` for an estimate the family does not offer. */
  private unsupported(expected: string, hint: string | undefined): never {
    throw new GrudgeError(
      'ERR_GRUDGE_UNSUPPORTED_OPERATION',
      `Window.estimate: expected a family with ${expected}, received ${this.family.name}; ` +
        (hint ?? "use merged() and the family's own query"),
    )
  }

  /** Move the latest time to `now` if later; drop expired slots when the key changes. */
  private advance(now: number): void {
    if (typeof now !== 'number' || !Number.isFinite(now)) badTime(now)
    if (Math.abs(now) > MAX_TIME_MS) invalidOption('nowMs', 'a time in [−8.64e15, 8.64e15] ms', now)
    if (now <= this.lastNow) return
    this.lastNow = now
    const key = Math.floor(now / this.everyMs)
    if (key === this.curKey) return
    const floor = key - this.keep
    let dropped = 0
    // held keys are in (K − keep, K], so only the cells of keys (K − keep, newK − keep] can
    // expire: at most keep cells however many slots elapsed, and only as many as elapsed
    // otherwise (scanning the whole ring made each roll O(keep): 2.4 ms at keep 2^20)
    const n = Math.min(this.keep, key - this.curKey)
    for (let j = 1; j <= n && dropped < this.held; j++) {
      const i = mod(this.curKey - this.keep + j, this.keep)
      if (this.ring[i] !== undefined && this.ringKeys[i] <= floor) {
        this.ring[i] = undefined
        dropped++
      }
    }
    this.held -= dropped
    // reported only when a slot was dropped (ExDataSketch's Window does the same)
    if (dropped > 0) {
      this.rollPending = true
      this.rollFrom = this.curKey
      this.rollDropped = dropped
    }
    this.curKey = key
    this.curIdx = mod(key, this.keep)
    // the ring cell of a new key is empty: any older key there is ≤ key − keep, dropped above
    this.cur = undefined
  }

  /** Open the current slot with an empty sketch. */
  private open(): S {
    const s = this.emptySketch()
    this.ring[this.curIdx] = s
    this.ringKeys[this.curIdx] = this.curKey
    this.held++
    this.cur = s
    return s
  }

  /** Report a pending roll to the hook. */
  private finish(): void {
    this.rollPending = false
    if (this.onRoll !== undefined) {
      this.onRoll({ key: this.curKey, previousKey: this.rollFrom, dropped: this.rollDropped, slotCount: this.held })
    }
  }

  private emptySketch(): S {
    return this.templateFrame === undefined
      ? (this.template.emptyLike as () => S).call(this.template)
      : this.family.deserialize(this.templateFrame)
  }

  /** Slots with a key above the returned value are live at max(nowMs, latest seen). */
  private liveFloor(nowMs: number): number {
    let now = nowMs
    if (typeof now !== 'number' || !Number.isFinite(now)) badTime(now)
    if (now < this.lastNow) now = this.lastNow
    return Math.floor(now / this.everyMs) - this.keep
  }
}

function mod(a: number, n: number): number {
  const r = a % n
  return r < 0 ? r + n : r === 0 ? 0 : r
}

function badTime(now: unknown): never {
  throw new GrudgeRangeError(
    'ERR_GRUDGE_VALUE_NOT_FINITE',
    `nowMs: expected a finite number of ms, received ${describeValue(now)}`,
  )
}
