/**
 * What the adapters treat as an asynchronous answer of a user function (`skip`, `allowList`,
 * `key`): any thenable, not only a native Promise, so that an answer from another Promise
 * library is awaited rather than read as a truthy object.
 * @module
 */

/**
 * Whether a value is a thenable (an object or function with a `then` method).
 * @param v any value
 * @internal
 */
export function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (
    (typeof v === 'object' || typeof v === 'function') &&
    v !== null &&
    typeof (v as { then?: unknown }).then === 'function'
  )
}
