/**
 * The log of a failing store: with `onStoreError: 'open'` a store that fails (Redis down)
 * admits every request, which must not happen without a word. The first failure of an
 * outage is logged at once, with its error; while the outage lasts at most one line per
 * `intervalMs` follows, counting the failures since the last line. An outage ends after
 * `intervalMs` without a failure: the next failure opens a new one and is logged at once.
 * @module
 */
import type { Clock } from '../clock.js'

/**
 * A store-failure listener for `Limiter.onStoreFailure` that logs once per outage, rate-limited.
 * @param log writes one line: the message, the error and the failures it covers (≥ 1)
 * @param clock time source (ms)
 * @param intervalMs shortest gap between two lines, and the quiet time that ends an outage; default 60 000
 * @internal
 */
export function storeOutageLog(
  log: (message: string, error: unknown, failures: number) => void,
  clock: Clock,
  intervalMs = 60_000,
): (error: unknown) => void {
  let lastFailureMs = -Infinity
  let lastLogMs = -Infinity
  let unlogged = 0
  return (error) => {
    const now = clock.now()
    const fresh = now - lastFailureMs > intervalMs
    lastFailureMs = now
    unlogged++
    if (!fresh && now - lastLogMs < intervalMs) return
    const n = unlogged
    unlogged = 0
    lastLogMs = now
    log(
      fresh
        ? 'grudge: the store failed; onStoreError decides (open: requests are admitted without limits)'
        : `grudge: the store is still failing (${n} failures since the last line); onStoreError decides`,
      error,
      n,
    )
  }
}

/** What a store event carries for a log line (the Redis stores' `RedisStoreEvent`, read structurally). */
interface LoggedStoreEvent {
  readonly type: string
  readonly policy?: string
  readonly message: string
  readonly error?: unknown
}

/**
 * Route a store's transition events (a Redis store's `onEvent`: `'down'` when Redis fails and
 * `onStoreError` — with `'local'` the in-process fallback — takes over, `'up'` when it
 * answers again, `'schedule'` when an instance adopts the fleet's period) to the framework
 * logger, so a fallback never takes over silently. A store without `onEvent` (the in-process
 * one) has no transitions: nothing is subscribed.
 * @param store the adapter's `store` option (a StoreFactory, possibly with `onEvent`)
 * @param log writes one line: `'info'` for `'up'`, `'warn'` for the others
 * @returns a function that removes the subscription (call it when the adapter closes)
 * @internal
 */
export function logStoreEvents(
  store: unknown,
  log: (level: 'info' | 'warn', message: string, event: LoggedStoreEvent) => void,
): () => void {
  const onEvent = (store as { onEvent?: unknown } | undefined)?.onEvent
  if (typeof onEvent !== 'function') return () => {}
  const off: unknown = (onEvent as (l: (e: LoggedStoreEvent) => void) => unknown).call(store, (e) =>
    // the Redis stores already write `grudge: …`; say it once
    log(e.type === 'up' ? 'info' : 'warn', e.message.startsWith('grudge: ') ? e.message : `grudge: ${e.message}`, e),
  )
  return typeof off === 'function' ? (off as () => void) : () => {}
}
