import { GrudgeError, describeValue, invalidOption } from '../errors.js'

/**
 * The mergeable contract: what a sketch family must offer so that a {@link Window} (and
 * a cluster) can keep one sketch per time slot and combine them.
 *
 * An instance of a family has
 * - `merge(other)`: fold `other` into `this` in place, returning nothing. Merge MUST be
 *   commutative and associative (the result, serialized, is the same byte for byte
 *   whatever order sketches are merged in) and MUST throw `ERR_GRUDGE_MERGE_INCOMPATIBLE`
 *   naming what differs (family, precision, width, depth, hasher, seed…) when
 *   `isCompatible(other)` is false;
 * - `isCompatible(other)`: whether `other` is of the same family, shape, parameters, seed
 *   and format version;
 * - `serialize()`: a grudge binary frame (`src/format/frame.ts`) of the whole state;
 * - `sizeBytes()`: memory held by the state, in bytes;
 * - `add(item)`: insert one item (what `Window.add` calls);
 * - optionally `estimate()`: a whole-sketch estimate (HyperLogLog cardinality) or
 *   `estimate(item)`: a per-item estimate (Count-Min count). `Window.estimate()` uses the
 *   first form and `Window.estimate(item)` the second; a family's form is told apart by
 *   the method's declared arity (`estimate.length`: 0 for the whole-sketch form);
 * - optionally `emptyLike()`: a new empty sketch with the same shape and seed (saves a
 *   serialize/deserialize round trip when the Window opens a slot).
 *
 * The family itself (the class) has a static `deserialize(bytes)`. A Window is built from
 * one empty instance (its template), so how a family is constructed is its own business
 * (`HyperLogLog.bySize`, `CountMinSketch.byAccuracy`…).
 *
 * Shaped after Apache DataSketches' union/merge contract (`HllSketchMergeOrderTest.java`
 * tests order independence the same way).
 */
export interface Mergeable {
  /** Fold `other` into this sketch, in place. */
  merge(other: never): void
  /** Whether `other` can be merged into this sketch. */
  isCompatible(other: unknown): boolean
  /** The whole state as a grudge binary frame. */
  serialize(): Uint8Array
  /** Bytes of memory held by the state. */
  sizeBytes(): number
  /** Insert one item. */
  add(item: never): unknown
  /** Optional estimate: whole-sketch (arity 0) or per item (arity 1). */
  estimate?(...args: never[]): number
  /** Optional: a new empty sketch with the same shape and seed. */
  emptyLike?(): Mergeable
}

/**
 * A mergeable family: the class of a {@link Mergeable} sketch, as far as a Window needs it.
 * @typeParam S the sketch type
 */
export interface MergeableFamily<S extends Mergeable = Mergeable> {
  /** Read a sketch back from the frame its `serialize()` wrote. */
  deserialize(bytes: Uint8Array): S
  /** The class name, used in error messages. */
  readonly name: string
}

/**
 * Runtime check of the contract, run once at construction by `Window`.
 * @param family the class to check
 * @param option the option name used in errors (default `'family'`)
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` when `family` is not a class;
 * `ERR_GRUDGE_UNSUPPORTED_OPERATION` naming the family and the first missing method
 * (`merge`, `isCompatible`, `serialize`, `sizeBytes`, `add`, static `deserialize`)
 * @internal
 */
export function checkMergeableFamily(family: unknown, option = 'family'): void {
  if (typeof family !== 'function' || typeof family.prototype !== 'object' || family.prototype === null) {
    invalidOption(option, 'a sketch class (e.g. HyperLogLog or CountMinSketch)', family)
  }
  const name = family.name || '(anonymous class)'
  const proto = family.prototype as Record<string, unknown>
  for (const m of ['merge', 'isCompatible', 'serialize', 'sizeBytes', 'add'] as const) {
    if (typeof proto[m] !== 'function') {
      throw new GrudgeError(
        'ERR_GRUDGE_UNSUPPORTED_OPERATION',
        `${option} ${name}: expected a mergeable family with a ${m}() method, received a class without it`,
      )
    }
  }
  if (typeof (family as unknown as { deserialize?: unknown }).deserialize !== 'function') {
    throw new GrudgeError(
      'ERR_GRUDGE_UNSUPPORTED_OPERATION',
      `${option} ${name}: expected a mergeable family with a static deserialize(bytes), received a class without it`,
    )
  }
}

/**
 * Whether instances of the family offer a whole-sketch `estimate()` (declared arity 0),
 * as opposed to none or a per-item `estimate(item)`.
 * @internal
 */
export function hasWholeEstimate(sketch: Mergeable): boolean {
  const e = (sketch as { estimate?: unknown }).estimate
  return typeof e === 'function' && e.length === 0
}

/**
 * Throw `ERR_GRUDGE_MERGE_INCOMPATIBLE` naming the field that differs.
 * @param what the differing field (`'precision'`, `'width'`, `'seed'`, `'family'`…)
 * @param expected this sketch's value
 * @param received the other sketch's value
 * @throws {GrudgeError} always
 * @internal
 */
export function mergeIncompatible(what: string, expected: unknown, received: unknown): never {
  throw new GrudgeError(
    'ERR_GRUDGE_MERGE_INCOMPATIBLE',
    `merge: ${what} differs: expected ${show(expected)}, received ${show(received)}`,
  )
}

/**
 * Throw `ERR_GRUDGE_MERGE_SELF`.
 * @throws {GrudgeError} always
 * @internal
 */
export function mergeSelf(family: string): never {
  throw new GrudgeError('ERR_GRUDGE_MERGE_SELF', `merge: expected another ${family}, received the same instance`)
}

/** Hex of seed bytes, or {@link describeValue}. */
function show(v: unknown): string {
  if (v instanceof Uint8Array && v.length === 16) return Buffer.from(v).toString('hex')
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  return describeValue(v)
}

/**
 * Whether two byte arrays hold the same bytes.
 * @internal
 */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
