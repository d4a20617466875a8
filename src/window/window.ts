import { systemClock, type Clock } from '../clock.js'
import { GrudgeError, GrudgeRangeError, describeValue, invalidOption } from '../errors.js'
import { FAMILY, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { CountMinSketch } from './count-min.js'
import { HyperLogLog } from './hyperloglog.js'
import {
  checkMergeableFamily,
  hasWholeEstimate,
  sameBytes,
  type Mergeable,
  type MergeableFamily,
  type MergeMethod,
} from './mergeable.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** What {@link WindowOptions.onRoll} receives when the window moves into a new slot. */
export interface RollEvent {
  /** Key of the new current slot, `floor(nowMs / everyMs)`. */
  key: number
  /** Key of the previous current slot. */
  previousKey: number
  /** Number of slots that expired and were dropped by this move (0 or more). */
  dropped: number
  /**
   * Number of slots held after the move: the new slot counts when an update caused the
   * move (it opens on its first update), not after a bare tick.
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
  /** Time source in ms; default the monotonic {@link systemClock}. */
  clock?: Clock
  /**
   * Called synchronously each time the window moves into a new slot (not on the very
   * first time it sees), after the triggering update's item was added; for telemetry.
   * An exception it throws propagates to the caller of update/updateMany/tick.
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
   * The slots' family. Optional for the built-in families (HyperLogLog, CountMinSketch),
   * which are found by the family id in the frame; required for any other (a Bloom filter
   * or your own).
   */
  family?: MergeableFamily<S, never>
}

/** The option names of {@link WindowOptions}; any other key is refused. */
export const WINDOW_OPTION_KEYS = optionKeys<WindowOptions>({ everyMs: true, keep: true, clock: true, onRoll: true })
/** The option names of {@link WindowDeserializeOptions}; any other key is refused. */
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

interface Adder {
  add(item: unknown): unknown
}
interface WholeEstimator {
  estimate(): number
}
interface ItemEstimator {
  estimate(item: unknown): number
}

/** Largest `keep`. */
export const WINDOW_MAX_KEEP = 2 ** 20
/**
 * Largest |time| in ms that moves a window: 8.64e15, the ECMAScript Date range. Within it
 * every slot key and K − keep are exact integers (8.64e15 + 2^20 < 2^53); beyond it the
 * newest slot would not even be live.
 */
const MAX_TIME_MS = 8.64e15
const VERSION = 1
const PARAMS_BYTES = 28

/** Families a window frame can name without `options.family`. */
const BUILTIN_FAMILIES: ReadonlyMap<number, MergeableFamily<Mergeable, never>> = new Map<
  number,
  MergeableFamily<Mergeable, never>
>([
  [FAMILY.hyperloglog, HyperLogLog],
  [FAMILY.countMin, CountMinSketch],
])

// Set by Window.deserialize just before it calls the constructor, so that the restored
// template (with its seed) is used instead of a fresh sketch from options.
let restoredTemplate: Mergeable | undefined

/**
 * A sliding window over any mergeable sketch family: a ring of `keep` tumbling slots,
 * each a sketch of the items seen during `everyMs` ms. It answers "in about the last N
 * minutes" questions (distinct clients, how often a key was rejected) with no timer:
 * time moves only when an update or tick brings a later `nowMs`.
 *
 * Rules (normative in `spec/window.md`):
 * - The slot of time t has key `floor(t / everyMs)` (floor, also for negative t).
 * - With current key K (the key of the latest time seen), a slot is live when its key is
 *   greater than K − keep. `keep` includes the slot still filling, so the window covers
 *   between (keep − 1)·everyMs and keep·everyMs of history.
 * - Times are non-decreasing: a `nowMs` lower than the latest one seen is treated as that
 *   latest one, so slots never expire out of order and a late item lands in the current
 *   slot.
 * - update/updateMany/tick move time forward and drop every expired slot at once, however
 *   long the gap (one pass over the ring, never one step per elapsed slot). The queries
 *   (merged, estimate, estimateItem, slots) are pure: they consider the slots live at
 *   `max(nowMs, latest seen)` and change nothing.
 * - All slots share the seed of one template sketch built from `familyOptions`, so they
 *   always merge.
 *
 * @typeParam S the family's sketch type
 * @typeParam O the family's constructor options (checked at the constructor only, so a
 * `Window<HyperLogLog>` accepts any HyperLogLog window)
 */
export class Window<S extends Mergeable = Mergeable, O = unknown> {
  /** The slots' family (class). */
  readonly family: MergeableFamily<S, never>
  /** Span of one slot in ms. */
  readonly everyMs: number
  /** Number of slots kept, including the one filling. */
  readonly keep: number
  /** The time source (ms). */
  readonly clock: Clock
  private readonly mergeMethod: MergeMethod
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
   * @param family a mergeable family (see {@link Mergeable}): HyperLogLog,
   * CountMinSketch, a Bloom filter (merged by `union`)…
   * @param familyOptions the options every slot's sketch is built from (e.g.
   * `{ precision: 14 }`); a template sketch is built once from them and every slot is an
   * empty copy of it (same seed)
   * @param options see {@link WindowOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_UNSUPPORTED_OPERATION` naming the family when it has
   * no merge/union (or another method of the contract); `ERR_GRUDGE_OPTION_INVALID` naming
   * `family`, `everyMs`, `keep`, `clock` or `onRoll`, or a key that is not an option of
   * {@link WindowOptions}; whatever the family's constructor throws for bad (or unknown)
   * `familyOptions`
   */
  constructor(family: MergeableFamily<S, O>, familyOptions: O, options: WindowOptions) {
    const template = restoredTemplate as S | undefined
    restoredTemplate = undefined
    this.mergeMethod = checkMergeableFamily(family)
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
    this.template = template ?? new family(familyOptions)
    this.templateFrame = typeof this.template.emptyLike === 'function' ? undefined : this.template.serialize()
    this.ring = new Array<S | undefined>(keep).fill(undefined)
    this.ringKeys = new Float64Array(keep)
  }

  /**
   * Add `item` to the slot of `nowMs` (opening it if needed), after dropping every
   * expired slot. No allocation except when a slot opens.
   * @param item passed to the family's `add` (a string or bytes for the built-ins)
   * @param nowMs time in ms, within ±8.64e15 (default `clock.now()`); below the latest
   * time seen it counts as that time
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `nowMs` for a time beyond
   * ±8.64e15 ms (the Date range; nothing changes); whatever the family's `add` throws
   * (e.g. `ERR_GRUDGE_KEY_INVALID`), after time has
   * moved and any roll was reported
   */
  update(item: Parameters<S['add']>[0], nowMs?: number): void {
    this.advance(nowMs === undefined ? this.clock.now() : nowMs)
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
   * Add every item of `items` to one slot, reading the time once for the whole batch.
   * @param items any iterable of items
   * @param nowMs time in ms, within ±8.64e15 (default `clock.now()`, read once)
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `items` when it is not
   * iterable (nothing changes); otherwise as {@link Window.update}; items before a
   * rejected one stay added
   */
  updateMany(items: Iterable<Parameters<S['add']>[0]>, nowMs?: number): void {
    if (typeof (items as { [Symbol.iterator]?: unknown } | null)?.[Symbol.iterator] !== 'function')
      invalidOption('items', 'an iterable of items', items)
    this.advance(nowMs === undefined ? this.clock.now() : nowMs)
    const s = (this.cur ?? this.open()) as unknown as Adder
    try {
      for (const item of items) s.add(item)
    } finally {
      if (this.rollPending) this.finish()
    }
  }

  /**
   * Move time to `nowMs` and drop every expired slot, inserting nothing.
   * @param nowMs time in ms, within ±8.64e15 (default `clock.now()`)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming `nowMs` beyond ±8.64e15 ms
   */
  tick(nowMs?: number): void {
    this.advance(nowMs === undefined ? this.clock.now() : nowMs)
    if (this.rollPending) this.finish()
  }

  /**
   * A fresh sketch: an empty copy of the template into which every slot live at
   * `max(nowMs, latest seen)` is merged. The window itself is not changed, and the result
   * is the caller's (changing it changes nothing in the window).
   * @param nowMs time in ms (default `clock.now()`)
   * @returns a new sketch of the family (empty when no slot is live)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  merged(nowMs?: number): S {
    const floor = this.liveFloor(nowMs)
    const out = this.emptySketch()
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined && this.ringKeys[i] > floor) (out[this.mergeMethod] as (other: S) => unknown).call(out, s)
    }
    return out
  }

  /**
   * The family's whole-sketch estimate over the live slots, `merged(nowMs).estimate()`
   * (distinct items for HyperLogLog; an empty window estimates 0).
   * @param nowMs time in ms (default `clock.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_UNSUPPORTED_OPERATION` when the family has no
   * `estimate()` without arguments: for Count-Min's `estimate(item)` use
   * {@link Window.estimateItem}; for a Bloom filter, `merged(nowMs)` and its own query
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  estimate(nowMs?: number): number {
    if (!hasWholeEstimate(this.template)) {
      throw new GrudgeError(
        'ERR_GRUDGE_UNSUPPORTED_OPERATION',
        `Window.estimate: expected a family with estimate() taking no argument, received ${this.family.name}; ` +
          (typeof (this.template as { estimate?: unknown }).estimate === 'function'
            ? 'use estimateItem(item, nowMs) or merged(nowMs).estimate(item)'
            : "use merged(nowMs) and the family's own query"),
      )
    }
    return (this.merged(nowMs) as unknown as WholeEstimator).estimate()
  }

  /**
   * A per-item count over the live slots without building a merged sketch: the sum of
   * each live slot's `estimate(item)`. Meant for counting families (Count-Min: "how often
   * was this key rejected in the last N minutes"), whose per-item estimate is additive
   * over disjoint time slots: the sum is never below the true count and never above
   * `merged(nowMs).estimate(item)` (a sum of row minima is at most the minimum of row
   * sums). Pure; allocates nothing beyond what the family's estimate does.
   * @param item passed to each slot's `estimate(item)`
   * @param nowMs time in ms (default `clock.now()`)
   * @throws {GrudgeError} `ERR_GRUDGE_UNSUPPORTED_OPERATION` when the family has no
   * per-item `estimate(item)` (HyperLogLog: use {@link Window.estimate})
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  estimateItem(item: Parameters<S['add']>[0], nowMs?: number): number {
    const e = (this.template as { estimate?: unknown }).estimate
    if (typeof e !== 'function' || e.length === 0) {
      throw new GrudgeError(
        'ERR_GRUDGE_UNSUPPORTED_OPERATION',
        `Window.estimateItem: expected a family with a per-item estimate(item), received ${this.family.name}; ` +
          (typeof e === 'function' ? 'use estimate(nowMs)' : "use merged(nowMs) and the family's own query"),
      )
    }
    const floor = this.liveFloor(nowMs)
    let sum = 0
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined && this.ringKeys[i] > floor) sum += (s as unknown as ItemEstimator).estimate(item)
    }
    return sum
  }

  /**
   * The slots live at `max(nowMs, latest seen)`, newest first. Only slots that received
   * an update exist. Pure.
   * @param nowMs time in ms (default `clock.now()`)
   * @returns `{ key, sketch }` per slot; the sketches are the window's own (read-only)
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` for a NaN/±Infinity time
   */
  slots(nowMs?: number): Array<WindowSlot<S>> {
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

  /** The latest time seen by update/updateMany/tick, in ms (−Infinity before any). */
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
    const tpl = this.template.serialize()
    const live: Array<{ key: number; frame: Uint8Array }> = []
    for (let i = 0; i < this.keep; i++) {
      const s = this.ring[i]
      if (s !== undefined) live.push({ key: this.ringKeys[i], frame: s.serialize() })
    }
    live.sort((a, b) => b.key - a.key)
    let size = 4 + tpl.length
    for (const l of live) size += 12 + l.frame.length
    const payload = new Uint8Array(size)
    const dv = new DataView(payload.buffer)
    dv.setUint32(0, tpl.length, true)
    payload.set(tpl, 4)
    let off = 4 + tpl.length
    for (const l of live) {
      dv.setFloat64(off, l.key, true)
      dv.setUint32(off + 8, l.frame.length, true)
      payload.set(l.frame, off + 12)
      off += 12 + l.frame.length
    }
    const params = new Uint8Array(PARAMS_BYTES)
    const pv = new DataView(params.buffer)
    pv.setFloat64(0, this.everyMs, true)
    pv.setUint32(8, this.keep, true)
    params[12] = tpl[4]
    pv.setFloat64(16, this.lastNow, true)
    pv.setUint32(24, live.length, true)
    return writeFrame({
      family: FAMILY.window,
      version: VERSION,
      flags: 0,
      seed: tpl.subarray(12, 28),
      params,
      payload,
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
    const f = readFrame(bytes, FAMILY.window, VERSION)
    if (f.flags !== 0) invalidField('flags', '0', f.flags)
    if (f.params.length !== PARAMS_BYTES) invalidField('params', `${PARAMS_BYTES} bytes`, f.params.length)
    const pv = new DataView(f.params.buffer, f.params.byteOffset, PARAMS_BYTES)
    const everyMs = pv.getFloat64(0, true)
    if (!Number.isSafeInteger(everyMs) || everyMs < 1) invalidField('everyMs', 'a positive safe integer', everyMs)
    const keep = pv.getUint32(8, true)
    if (keep < 1 || keep > WINDOW_MAX_KEEP) invalidField('keep', 'an integer in [1, 2^20]', keep)
    const slotFamily = f.params[12]
    if (f.params[13] !== 0 || f.params[14] !== 0 || f.params[15] !== 0) invalidField('reserved', '0', 'non-zero bytes')
    const lastNow = pv.getFloat64(16, true)
    if (!(Math.abs(lastNow) <= MAX_TIME_MS) && lastNow !== -Infinity)
      invalidField('lastSeenMs', 'a number in [−8.64e15, 8.64e15] or −Infinity', lastNow)
    const count = pv.getUint32(24, true)
    if (count > keep) invalidField('slotCount', `at most keep (${keep})`, count)
    if (lastNow === -Infinity && count !== 0) invalidField('slotCount', '0 before any time was seen', count)

    const family = (options.family ?? BUILTIN_FAMILIES.get(slotFamily)) as MergeableFamily<S, never> | undefined
    if (family === undefined) {
      throw new GrudgeError(
        'ERR_GRUDGE_FORMAT_FAMILY',
        `window slots: expected family 4 (HyperLogLog) or 5 (CountMinSketch), received ${slotFamily}; pass options.family to read another`,
      )
    }
    checkMergeableFamily(family, 'options.family')

    const p = f.payload
    const dv = new DataView(p.buffer, p.byteOffset, p.byteLength)
    let off = 0
    const take = (what: string): Uint8Array => {
      if (off + 4 > p.length)
        invalidField(what, 'a u32 frame length within the payload', `${p.length - off} bytes left`)
      const len = dv.getUint32(off, true)
      if (off + 4 + len > p.length) invalidField(what, `a frame of at most ${p.length - off - 4} bytes`, len)
      const frame = p.slice(off + 4, off + 4 + len)
      off += 4 + len
      if (frame.length < 5 || frame[4] !== slotFamily) invalidField(what, `a frame of family ${slotFamily}`, frame[4])
      return frame
    }
    const templateFrame = take('template')
    const template = family.deserialize(templateFrame)
    if (!sameBytes(f.seed, templateFrame.subarray(12, 28))) invalidField('seed', "the template's seed", 'other bytes')
    // only checkable where the family can build an empty copy to compare with
    if (typeof template.emptyLike === 'function' && !sameBytes(template.emptyLike().serialize(), templateFrame))
      invalidField('template', 'an empty sketch', 'a sketch with items')
    const curKey = Math.floor(lastNow / everyMs)
    const keys: number[] = []
    const sketches: S[] = []
    for (let i = 0; i < count; i++) {
      if (off + 8 > p.length)
        invalidField(`slots[${i}].key`, 'a f64 within the payload', `${p.length - off} bytes left`)
      const key = dv.getFloat64(off, true)
      off += 8
      if (!Number.isSafeInteger(key)) invalidField(`slots[${i}].key`, 'a safe integer', key)
      if (!(key <= curKey && key > curKey - keep))
        invalidField(`slots[${i}].key`, `a key in (${curKey - keep}, ${curKey}]`, key)
      if (i > 0 && !(key < keys[i - 1]))
        invalidField(`slots[${i}].key`, `a key below ${keys[i - 1]} (newest first)`, key)
      const sketch = family.deserialize(take(`slots[${i}]`))
      if (!template.isCompatible(sketch))
        invalidField(`slots[${i}]`, 'a sketch compatible with the template (same shape and seed)', 'another')
      keys.push(key)
      sketches.push(sketch)
    }
    if (off !== p.length) invalidField('payload', `${off} bytes`, p.length)

    restoredTemplate = template
    let w: Window<S>
    try {
      w = new Window<S>(family as MergeableFamily<S, unknown>, undefined, {
        everyMs,
        keep,
        ...(options.clock !== undefined ? { clock: options.clock } : {}),
        ...(options.onRoll !== undefined ? { onRoll: options.onRoll } : {}),
      })
    } finally {
      restoredTemplate = undefined
    }
    w.lastNow = lastNow
    w.curKey = lastNow === -Infinity ? -Infinity : curKey
    w.curIdx = lastNow === -Infinity ? 0 : mod(curKey, keep)
    for (let i = 0; i < count; i++) {
      const idx = mod(keys[i], keep)
      w.ring[idx] = sketches[i]
      w.ringKeys[idx] = keys[i]
    }
    w.held = count
    w.cur = w.ring[w.curIdx] !== undefined && w.ringKeys[w.curIdx] === w.curKey ? w.ring[w.curIdx] : undefined
    return w
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
    if (this.curKey !== -Infinity) {
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
  private liveFloor(nowMs: number | undefined): number {
    let now = nowMs === undefined ? this.clock.now() : nowMs
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
