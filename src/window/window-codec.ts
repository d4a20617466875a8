import { GrudgeError } from '../errors.js'
import {
  FAMILY,
  FieldReader,
  FieldWriter,
  frameFamily,
  frameSeed,
  invalidField,
  readFrame,
  writeFrame,
} from '../format/frame.js'
import { CountMinSketch } from './count-min.js'
import { HyperLogLog } from './hyperloglog.js'
import { checkMergeableFamily, sameBytes, type Mergeable, type MergeableFamily } from './mergeable.js'

/**
 * The window frame (family 6; byte tables in `spec/window.md` §4): params
 * `everyMs f64 | keep u32 | slot family u8 | 3 × 0 | lastSeenMs f64 | slotCount u32`, the
 * template's seed, and a payload of the template's frame then each held slot, newest first,
 * as `key f64 | frame length u32 | frame`.
 */

/** Format version of the window frame written by this release. */
const VERSION = 1
/** Size in bytes of the window frame's params block. */
const PARAMS_BYTES = 28
/** Size in bytes of an embedded frame's length prefix. */
const LENGTH_BYTES = 4
/** Size in bytes of a slot key. */
const KEY_BYTES = 8
/**
 * Largest |time| in ms that moves a window: 8.64e15, the ECMAScript Date range. Within it
 * every slot key and K − keep are exact integers (8.64e15 + 2^20 < 2^53); beyond it the
 * newest slot would not even be live.
 * @internal
 */
export const MAX_TIME_MS = 8.64e15
/**
 * Largest `keep`: 2^20.
 * @internal
 */
export const MAX_KEEP = 2 ** 20

/** Families a window frame can name without `options.family`. */
const BUILTIN_FAMILIES: ReadonlyMap<number, MergeableFamily> = new Map<number, MergeableFamily>([
  [FAMILY.hyperloglog, HyperLogLog],
  [FAMILY.countMin, CountMinSketch],
])

/**
 * What a window frame holds: everything a Window needs to be rebuilt, and nothing of its
 * clock or hooks.
 * @internal
 */
export interface WindowParts<S extends Mergeable> {
  /** Span of one slot in ms. */
  everyMs: number
  /** Number of slots kept. */
  keep: number
  /** The latest time seen in ms, or −Infinity. */
  lastSeenMs: number
  /** The empty template every slot copies (its seed is the frame's). */
  template: S
  /** The held slots, newest first. */
  slots: Array<{ key: number; sketch: S }>
}

/**
 * Write a window frame.
 * @param parts the slots newest first
 * @internal
 */
export function encodeWindow(parts: WindowParts<Mergeable>): Uint8Array {
  const tpl = parts.template.serialize()
  const frames = parts.slots.map((s) => s.sketch.serialize())
  let size = LENGTH_BYTES + tpl.length
  for (const f of frames) size += KEY_BYTES + LENGTH_BYTES + f.length
  const payloadBytes = new Uint8Array(size)
  const payload = new FieldWriter(payloadBytes)
  payload.u32(tpl.length)
  payload.raw(tpl)
  for (let i = 0; i < frames.length; i++) {
    payload.f64(parts.slots[i].key)
    payload.u32(frames[i].length)
    payload.raw(frames[i])
  }
  const paramBytes = new Uint8Array(PARAMS_BYTES)
  const params = new FieldWriter(paramBytes)
  params.f64(parts.everyMs)
  params.u32(parts.keep)
  params.u8(frameFamily(tpl) ?? 0)
  params.skip(3)
  params.f64(parts.lastSeenMs)
  params.u32(frames.length)
  return writeFrame({
    family: FAMILY.window,
    version: VERSION,
    flags: 0,
    seed: frameSeed(tpl),
    params: paramBytes,
    payload: payloadBytes,
  })
}

/**
 * Read and check a window frame: the frame itself, everyMs, keep, the latest time, the
 * slot count, the header seed (the template's), each embedded frame, the template (empty,
 * for families with `emptyLike`), each slot key (an integer, strictly decreasing, live as
 * of the latest time) and each slot's compatibility with the template.
 * @param family the slots' family, or undefined for the built-in ones found by id
 * @throws {GrudgeError} a `ERR_GRUDGE_FORMAT_*` code; `ERR_GRUDGE_FORMAT_FAMILY` when the
 * slots' family is not built in and `family` is absent; `ERR_GRUDGE_OPTION_INVALID` /
 * `ERR_GRUDGE_UNSUPPORTED_OPERATION` for a `family` that is not a mergeable class
 * @internal
 */
export function decodeWindow<S extends Mergeable>(
  bytes: Uint8Array,
  family: MergeableFamily<S> | undefined,
): WindowParts<S> {
  const f = readFrame(bytes, FAMILY.window, VERSION)
  if (f.flags !== 0) invalidField('flags', '0', f.flags)
  if (f.params.length !== PARAMS_BYTES) invalidField('params', `${PARAMS_BYTES} bytes`, f.params.length)
  const params = new FieldReader(f.params)
  const everyMs = params.f64('everyMs')
  if (!Number.isSafeInteger(everyMs) || everyMs < 1) invalidField('everyMs', 'a positive safe integer', everyMs)
  const keep = params.u32('keep')
  if (keep < 1 || keep > MAX_KEEP) invalidField('keep', 'an integer in [1, 2^20]', keep)
  const slotFamily = params.u8('slotFamily')
  params.reserved(3, 'reserved')
  const lastSeenMs = params.f64('lastSeenMs')
  if (!(Math.abs(lastSeenMs) <= MAX_TIME_MS) && lastSeenMs !== -Infinity)
    invalidField('lastSeenMs', 'a number in [−8.64e15, 8.64e15] or −Infinity', lastSeenMs)
  const count = params.u32('slotCount')
  if (count > keep) invalidField('slotCount', `at most keep (${keep})`, count)
  if (lastSeenMs === -Infinity && count !== 0) invalidField('slotCount', '0 before any time was seen', count)

  const fam = (family ?? BUILTIN_FAMILIES.get(slotFamily)) as MergeableFamily<S> | undefined
  if (fam === undefined) {
    throw new GrudgeError(
      'ERR_GRUDGE_FORMAT_FAMILY',
      `window slots: expected family 4 (HyperLogLog) or 5 (CountMinSketch), received ${slotFamily}; pass options.family to read another`,
    )
  }
  checkMergeableFamily(fam, 'options.family')

  const payload = new FieldReader(f.payload)
  const take = (what: string): Uint8Array => {
    const len = payload.u32(what)
    if (len > payload.remaining) invalidField(what, `a frame of at most ${payload.remaining} bytes`, len)
    const frame = payload.raw(len, what)
    if (frameFamily(frame) !== slotFamily) invalidField(what, `a frame of family ${slotFamily}`, frameFamily(frame))
    return frame
  }
  const templateFrame = take('template')
  const template = fam.deserialize(templateFrame)
  if (!sameBytes(f.seed, frameSeed(templateFrame))) invalidField('seed', "the template's seed", 'other bytes')
  // only checkable where the family can build an empty copy to compare with
  if (typeof template.emptyLike === 'function' && !sameBytes(template.emptyLike().serialize(), templateFrame))
    invalidField('template', 'an empty sketch', 'a sketch with items')
  const curKey = Math.floor(lastSeenMs / everyMs)
  const slots: Array<{ key: number; sketch: S }> = []
  for (let i = 0; i < count; i++) {
    const key = payload.f64(`slots[${i}].key`)
    if (!Number.isSafeInteger(key)) invalidField(`slots[${i}].key`, 'a safe integer', key)
    if (!(key <= curKey && key > curKey - keep))
      invalidField(`slots[${i}].key`, `a key in (${curKey - keep}, ${curKey}]`, key)
    if (i > 0 && !(key < slots[i - 1].key))
      invalidField(`slots[${i}].key`, `a key below ${slots[i - 1].key} (newest first)`, key)
    const sketch = fam.deserialize(take(`slots[${i}]`))
    if (!template.isCompatible(sketch))
      invalidField(`slots[${i}]`, 'a sketch compatible with the template (same shape and seed)', 'another')
    slots.push({ key, sketch })
  }
  if (payload.remaining !== 0) invalidField('payload', `${payload.offset} bytes`, f.payload.length)
  return { everyMs, keep, lastSeenMs, template, slots }
}
