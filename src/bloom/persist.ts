import { systemTicker, type Ticker, type TickerHandle } from '../clock.js'
import { GrudgeError, invalidOption } from '../errors.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/**
 * When a persistent Bloom filter writes its checkpoint. Each trigger is independent;
 * whichever fires first writes. Nothing is written while there is nothing unsaved.
 */
export interface PersistPolicy {
  /**
   * With unsaved inserts, checkpoint at most this long after they were made: a timer
   * (unref'd, so it never keeps the process alive) fires every `checkpointIntervalMs` and
   * writes only if something is unsaved. Milliseconds, a positive finite number ≥ 1, or
   * `Infinity` for no timer. Default 60 000 (1 min).
   */
  checkpointIntervalMs: number
  /**
   * Checkpoint as soon as this many unsaved inserts (inserts that set at least one new
   * bit) have accumulated. A positive integer, or `Infinity` to never checkpoint by count.
   * Default 100 000. After such a checkpoint fails, the next try by count waits for another
   * `checkpointInsertThreshold` inserts (a failing disk is not retried on every insert).
   */
  checkpointInsertThreshold: number
  /** Checkpoint on `close()` when something is unsaved. Default true. */
  checkpointOnShutdown: boolean
}

/** The defaults of {@link PersistPolicy}: 60 000 ms, 100 000 inserts, on shutdown. */
export const DEFAULT_PERSIST_POLICY: Readonly<PersistPolicy> = Object.freeze({
  checkpointIntervalMs: 60_000,
  checkpointInsertThreshold: 100_000,
  checkpointOnShutdown: true,
})

/** The field names of {@link PersistPolicy}; any other key of a `policy` is refused. */
export const PERSIST_POLICY_KEYS = optionKeys<PersistPolicy>({
  checkpointIntervalMs: true,
  checkpointInsertThreshold: true,
  checkpointOnShutdown: true,
})

/**
 * Complete a partial policy with the defaults and freeze it.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad or unknown field
 */
export function parsePolicy(policy: Partial<PersistPolicy> | undefined, name = 'policy'): Readonly<PersistPolicy> {
  if (policy === undefined) return DEFAULT_PERSIST_POLICY
  if (typeof policy !== 'object' || policy === null) invalidOption(name, 'an object', policy)
  checkKnownOptions(policy, PERSIST_POLICY_KEYS, name + '.')
  const interval = policy.checkpointIntervalMs ?? DEFAULT_PERSIST_POLICY.checkpointIntervalMs
  const threshold = policy.checkpointInsertThreshold ?? DEFAULT_PERSIST_POLICY.checkpointInsertThreshold
  const onShutdown = policy.checkpointOnShutdown ?? DEFAULT_PERSIST_POLICY.checkpointOnShutdown
  if (typeof interval !== 'number' || !(interval >= 1)) {
    invalidOption(`${name}.checkpointIntervalMs`, 'a number of ms ≥ 1, or Infinity', interval)
  }
  if (
    typeof threshold !== 'number' ||
    !(threshold >= 1) ||
    (threshold !== Infinity && !Number.isSafeInteger(threshold))
  ) {
    invalidOption(`${name}.checkpointInsertThreshold`, 'a positive integer, or Infinity', threshold)
  }
  if (typeof onShutdown !== 'boolean') invalidOption(`${name}.checkpointOnShutdown`, 'a boolean', onShutdown)
  return Object.freeze({
    checkpointIntervalMs: interval,
    checkpointInsertThreshold: threshold,
    checkpointOnShutdown: onShutdown,
  })
}

/** Options common to {@link ManagedBloomFilter} and {@link ShardedBloomFilter} about persistence. */
export interface PersistOptions {
  /** When to checkpoint; missing fields take {@link DEFAULT_PERSIST_POLICY}'s. */
  policy?: Partial<PersistPolicy>
  /** Runs the interval timer; default the unref'd `systemTicker`. Tests pass a FakeTicker. */
  ticker?: Ticker
  /**
   * Receives errors of checkpoints started by the timer or the insert threshold (those of
   * `checkpoint()` and `close()` reject their promise instead). Default: emit them as a
   * process warning.
   */
  onError?: (err: Error) => void
  /**
   * What to do with a checkpoint that is corrupt or written with other parameters:
   * `'throw'` (default; the file is left untouched) or `'start-empty'` (the file is renamed
   * to `<file>.bad-<ms>`, never deleted, and the filter starts empty).
   */
  onBadCheckpoint?: 'throw' | 'start-empty'
  /** Bytes written per asynchronous step of a checkpoint, an integer in [4096, 2^30]. Default 1 MiB. */
  writeChunkBytes?: number
}

/** The parsed, frozen {@link PersistOptions}. */
export interface ParsedPersistOptions {
  policy: Readonly<PersistPolicy>
  ticker: Ticker
  onError: (err: Error) => void
  onBadCheckpoint: 'throw' | 'start-empty'
  writeChunkBytes: number
}

/**
 * Parse {@link PersistOptions}.
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option
 */
export function parsePersistOptions(o: PersistOptions): ParsedPersistOptions {
  const policy = parsePolicy(o.policy)
  const ticker = o.ticker ?? systemTicker
  if (typeof ticker !== 'object' || ticker === null || typeof ticker.every !== 'function') {
    invalidOption('ticker', 'an object with every(periodMs, fn)', ticker)
  }
  const onError = o.onError ?? ((err: Error) => process.emitWarning(err))
  if (typeof onError !== 'function') invalidOption('onError', 'a function', onError)
  const onBad = o.onBadCheckpoint ?? 'throw'
  if (onBad !== 'throw' && onBad !== 'start-empty') invalidOption('onBadCheckpoint', "'throw' or 'start-empty'", onBad)
  const chunk = o.writeChunkBytes ?? 1 << 20
  if (!Number.isInteger(chunk) || chunk < 4096 || chunk > 2 ** 30)
    invalidOption('writeChunkBytes', 'an integer in [4096, 2^30]', chunk)
  return { policy, ticker, onError, onBadCheckpoint: onBad, writeChunkBytes: chunk }
}

/**
 * The checkpoint scheduling shared by managed and sharded filters: one checkpoint at a
 * time (later requests queue behind it), the interval timer, the insert threshold and
 * an idempotent close. Subclasses say how many inserts are unsaved and how to write.
 */
export abstract class CheckpointRunner {
  /** The frozen persist policy. */
  readonly policy: Readonly<PersistPolicy>
  /** Receives the errors of background checkpoints (see {@link PersistOptions.onError}). */
  protected readonly onError: (err: Error) => void
  private chain: Promise<unknown> = Promise.resolve()
  private queued = 0
  private autoQueued = false
  private timer: TickerHandle | null = null
  private closing: Promise<void> | null = null
  /** True from the moment `close()` is called: inserts are refused from then on. */
  protected closed = false
  private completed = 0
  /**
   * Unsaved inserts at which the next threshold checkpoint starts: the policy's threshold,
   * moved one threshold further after a background checkpoint fails, so a failing disk is
   * retried every `checkpointInsertThreshold` inserts (and timer ticks), not on every insert.
   */
  private thresholdAt: number

  /**
   * Start the interval timer (unless the interval is Infinity).
   * @param opts parsed by {@link parsePersistOptions}
   */
  constructor(opts: ParsedPersistOptions) {
    this.policy = opts.policy
    this.onError = opts.onError
    this.thresholdAt = opts.policy.checkpointInsertThreshold
    if (opts.policy.checkpointIntervalMs !== Infinity) {
      this.timer = opts.ticker.every(opts.policy.checkpointIntervalMs, () => this.onTick())
    }
  }

  /** Inserts not yet in a completed checkpoint (inserts that set a new bit). */
  abstract get unsavedCount(): number
  /** Write what is unsaved; resolve to the number of files written. */
  protected abstract writeUnsaved(): Promise<number>

  /** Number of checkpoints that wrote at least one file. */
  get checkpointCount(): number {
    return this.completed
  }

  /** Whether a checkpoint is running or queued. */
  get checkpointing(): boolean {
    return this.queued > 0
  }

  /**
   * Write a checkpoint now if anything is unsaved (after any checkpoint already running).
   * @returns the number of files written (0 when nothing was unsaved)
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_CLOSED` after `close()`; `ERR_GRUDGE_BLOOM_IO`
   * when writing fails (the previous checkpoint stays in place)
   */
  checkpoint(): Promise<number> {
    if (this.closed) {
      return Promise.reject(
        new GrudgeError('ERR_GRUDGE_BLOOM_CLOSED', 'checkpoint: expected an open filter, received a closed one'),
      )
    }
    return this.enqueue()
  }

  /** Resolves once no checkpoint is running or queued (errors are not re-thrown here). */
  async settled(): Promise<void> {
    while (this.queued > 0) await this.chain.catch(() => {})
  }

  /**
   * Stop the timer, refuse further inserts and, if the policy says so, write a last
   * checkpoint. Idempotent: every call returns the same promise.
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_IO` when the last checkpoint fails
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing
    this.closed = true
    this.timer?.cancel()
    this.timer = null
    this.closing = (async () => {
      if (this.policy.checkpointOnShutdown) await this.enqueue()
      else await this.settled()
    })()
    return this.closing
  }

  /** Whether `close()` was called. */
  get isClosed(): boolean {
    return this.closed
  }

  /** Call after an insert that set a new bit: starts a checkpoint at the threshold. */
  protected noteUnsaved(unsaved: number): void {
    if (unsaved >= this.thresholdAt) this.auto()
  }

  /** Refuse an insert after close. */
  protected assertOpen(what: string): void {
    if (this.closed)
      throw new GrudgeError('ERR_GRUDGE_BLOOM_CLOSED', `${what}: expected an open filter, received a closed one`)
  }

  private onTick(): void {
    if (this.unsavedCount > 0) this.auto()
  }

  /** A background checkpoint, at most one queued at a time. */
  private auto(): void {
    if (this.autoQueued || this.closed) return
    this.autoQueued = true
    this.enqueue().then(
      () => {},
      (err: Error) => {
        this.thresholdAt = this.unsavedCount + this.policy.checkpointInsertThreshold
        this.onError(err)
      },
    )
  }

  private enqueue(): Promise<number> {
    this.queued++
    const run = this.chain.then(async () => {
      this.autoQueued = false
      if (this.unsavedCount === 0) return 0
      const n = await this.writeUnsaved()
      this.thresholdAt = this.policy.checkpointInsertThreshold
      if (n > 0) this.completed++
      return n
    })
    const done = run.finally(() => {
      this.queued--
    })
    this.chain = done.catch(() => {})
    return done
  }
}
