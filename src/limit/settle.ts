/**
 * Apply `f` to a value that may be a Promise: synchronously when it is not, so the
 * in-process path never pays for a microtask; via `then` when it is.
 */
export function settle<T, U>(value: T | Promise<T>, f: (v: T) => U | Promise<U>): U | Promise<U> {
  if (value instanceof Promise) return value.then(f)
  return f(value)
}

/** Whether a value is a thenable. */
export function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return value instanceof Promise
}
