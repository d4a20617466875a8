import type { Clock } from '../clock.js'

/**
 * A clock that can be pinned for the span of one decision: while pinned, `now()` returns
 * the time read when it was pinned, so the several sketch operations of one request (a
 * read of the deciding generation, a write to each generation, the telemetry bucket) read
 * the clock once and agree on one instant. Unpinned, it reads the underlying clock.
 */
export class PinnedClock implements Clock {
  private t = 0
  private pinned = false
  /** @param base the clock read when pinning and while unpinned */
  constructor(readonly base: Clock) {}
  /** The pinned time while pinned, else the underlying clock's time (ms). */
  now(): number {
    return this.pinned ? this.t : this.base.now()
  }
  /** Read the underlying clock once and hold that time until {@link PinnedClock.unpin}. Re-entrant calls keep the outer pin. @returns whether this call pinned (and so must unpin) */
  pin(): boolean {
    if (this.pinned) return false
    this.t = this.base.now()
    this.pinned = true
    return true
  }
  /** Release the pin. */
  unpin(): void {
    this.pinned = false
  }
}
