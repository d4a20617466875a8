import { join } from 'node:path'
import { GrudgeError, describeValue, invalidOption } from '../errors.js'
import type { Ticker } from '../clock.js'
import type { BloomHashOptions } from './bloom-filter.js'
import { ensureDir } from './checkpoint-file.js'
import { ManagedBloomFilter } from './managed.js'
import type { PersistOptions, PersistPolicy } from './persist.js'
import { ShardedBloomFilter } from './sharded.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Options of {@link BloomFilterRegistry.register}. */
export interface RegisterBloomOptions extends BloomHashOptions {
  /** Expected number of distinct items: a positive safe integer. */
  capacity: number
  /** Target false-positive rate at capacity, in (0, 1). */
  errorRate: number
  /** When to checkpoint; missing fields take the defaults (60 000 ms, 100 000 inserts, on shutdown). */
  policy?: Partial<PersistPolicy>
  /**
   * Split into this many shard files (a {@link ShardedBloomFilter} in `<dir>/<name>.shards/`);
   * absent: one file `<dir>/<name>.bloom` (a {@link ManagedBloomFilter}).
   */
  shardCount?: number
  /** See {@link PersistOptions.onBadCheckpoint}; default `'throw'`. */
  onBadCheckpoint?: 'throw' | 'start-empty'
}

/** Options of a {@link BloomFilterRegistry}, applied to every filter it registers. */
export interface BloomFilterRegistryOptions {
  /** Runs the checkpoint timers; default the unref'd system ticker. */
  ticker?: Ticker
  /** Receives background checkpoint errors; default: emitted as process warnings. */
  onError?: (err: Error) => void
  /** Bytes per asynchronous checkpoint write; default 1 MiB. */
  writeChunkBytes?: number
}

/**
 * The option names of {@link RegisterBloomOptions}; any other key is refused.
 * @internal
 */
export const REGISTER_BLOOM_KEYS = optionKeys<RegisterBloomOptions>({
  capacity: true,
  errorRate: true,
  policy: true,
  shardCount: true,
  onBadCheckpoint: true,
  hasher: true,
  seed: true,
})

/**
 * The option names of {@link BloomFilterRegistryOptions}; any other key is refused.
 * @internal
 */
export const BLOOM_REGISTRY_OPTION_KEYS = optionKeys<BloomFilterRegistryOptions>({
  ticker: true,
  onError: true,
  writeChunkBytes: true,
})

/** A registered filter: one file or shards. */
export type PersistentBloomFilter = ManagedBloomFilter | ShardedBloomFilter

const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/
// Windows device names, which stay devices with any extension ("nul.bloom" writes nowhere)
const DEVICE_NAME = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\.|$)/i

/**
 * Check that `name` is a safe file name: 1–128 characters from `A-Z a-z 0-9 . _ -`, not
 * starting with a dot, without `..` (so no path separator, no parent directory, no hidden
 * file), and not a Windows device name (`CON`, `PRN`, `AUX`, `NUL`, `COM0-9`, `LPT0-9`,
 * any case, alone or before a dot).
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_NAME_INVALID`
 * @internal
 */
export function checkBloomName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !SAFE_NAME.test(name) || name.includes('..') || DEVICE_NAME.test(name)) {
    throw new GrudgeError(
      'ERR_GRUDGE_BLOOM_NAME_INVALID',
      `name: expected 1-128 characters of A-Z a-z 0-9 . _ - not starting with "." and without "..", not a device name (CON, NUL, COM1, …), received ${describeValue(name)}`,
    )
  }
}

/**
 * Named persistent Bloom filters under one directory, so request handlers can ask
 * `mightContain('users', id)` without holding the filter objects.
 *
 * Life cycle: `init(dir)` once (synchronous; creates the directory), then `register`
 * each name once (synchronous; loads its checkpoint), then `add` / `mightContain` /
 * `get`, and finally `close()` (asynchronous: returns a Promise that settles when every
 * filter has stopped and those whose policy says so have written their last checkpoint).
 * After `close()` the registry may be `init`ed again.
 *
 * A filter registered without `shardCount` lives in `<dir>/<name>.bloom`; with it, in
 * `<dir>/<name>.shards/`.
 */
export class BloomFilterRegistry {
  private dir: string | null = null
  private state: 'new' | 'open' | 'closing' = 'new'
  private readonly filters = new Map<string, PersistentBloomFilter>()
  private readonly options: BloomFilterRegistryOptions
  private closing: Promise<void> | null = null

  /**
   * @param options see {@link BloomFilterRegistryOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for options that are not an object or
   * a key that is not an option of {@link BloomFilterRegistryOptions}
   */
  constructor(options: BloomFilterRegistryOptions = {}) {
    if (typeof options !== 'object' || options === null) invalidOption('options', 'an object', options)
    checkKnownOptions(options, BLOOM_REGISTRY_OPTION_KEYS)
    this.options = Object.freeze({ ...options })
  }

  /**
   * Open the registry on `dir` (created if missing). Synchronous.
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_REGISTRY_STATE` when already initialized (and
   * not closed), `ERR_GRUDGE_OPTION_INVALID` for a bad dir, `ERR_GRUDGE_BLOOM_IO`
   */
  init(dir: string): void {
    if (this.state === 'open') {
      throw new GrudgeError(
        'ERR_GRUDGE_BLOOM_REGISTRY_STATE',
        `init: expected an uninitialized registry, received one open on "${this.dir}"`,
      )
    }
    if (this.state === 'closing' && this.filters.size > 0) {
      throw new GrudgeError(
        'ERR_GRUDGE_BLOOM_REGISTRY_STATE',
        'init: expected close() to have finished, received a registry still closing',
      )
    }
    if (typeof dir !== 'string' || dir === '') invalidOption('dir', 'a non-empty directory path', dir)
    ensureDir(dir)
    this.dir = dir
    this.state = 'open'
    this.closing = null
  }

  /** The directory given to `init`, or null. */
  get directory(): string | null {
    return this.dir
  }

  /**
   * Create or load the filter `name`. Synchronous (the checkpoint is read at once).
   * @returns the filter
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_REGISTRY_STATE` before `init` or after `close`;
   * `ERR_GRUDGE_BLOOM_NAME_INVALID`; `ERR_GRUDGE_BLOOM_NAME_TAKEN` for a name registered
   * already, also when it differs only in case (one file on case-insensitive file systems);
   * `ERR_GRUDGE_OPTION_INVALID` for a key that is not an option of {@link RegisterBloomOptions}
   * or of `policy`; and whatever
   * {@link ManagedBloomFilter} / {@link ShardedBloomFilter} throw at construction
   */
  register(name: string, options: RegisterBloomOptions): PersistentBloomFilter {
    const dir = this.openDir('register')
    checkBloomName(name)
    if (this.filters.has(name)) {
      throw new GrudgeError(
        'ERR_GRUDGE_BLOOM_NAME_TAKEN',
        `register: expected a new name, received "${name}" (already registered)`,
      )
    }
    // on case-insensitive file systems (macOS, Windows) "Users" and "users" are one file
    const folded = name.toLowerCase()
    for (const other of this.filters.keys()) {
      if (other.toLowerCase() === folded) {
        throw new GrudgeError(
          'ERR_GRUDGE_BLOOM_NAME_TAKEN',
          `register: expected a name differing from the registered ones in more than case, received "${name}" ("${other}" is registered and would share its file)`,
        )
      }
    }
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object { capacity, errorRate }', options)
    checkKnownOptions(options, REGISTER_BLOOM_KEYS)
    const common: PersistOptions & BloomHashOptions = {
      policy: options.policy,
      ticker: this.options.ticker,
      onError: this.options.onError,
      writeChunkBytes: this.options.writeChunkBytes,
      onBadCheckpoint: options.onBadCheckpoint,
      hasher: options.hasher,
      seed: options.seed,
    }
    const f: PersistentBloomFilter =
      options.shardCount === undefined
        ? new ManagedBloomFilter({
            ...common,
            capacity: options.capacity,
            errorRate: options.errorRate,
            path: join(dir, `${name}.bloom`),
          })
        : new ShardedBloomFilter({
            ...common,
            capacity: options.capacity,
            errorRate: options.errorRate,
            shardCount: options.shardCount,
            dir: join(dir, `${name}.shards`),
          })
    this.filters.set(name, f)
    return f
  }

  /**
   * The filter registered as `name`.
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_REGISTRY_STATE`, `ERR_GRUDGE_BLOOM_NAME_UNKNOWN`
   */
  get(name: string): PersistentBloomFilter {
    this.openDir('get')
    const f = this.filters.get(name)
    if (f === undefined) {
      throw new GrudgeError(
        'ERR_GRUDGE_BLOOM_NAME_UNKNOWN',
        `get: expected a registered name, received ${describeValue(name)}`,
      )
    }
    return f
  }

  /** Whether `name` is registered. */
  has(name: string): boolean {
    return this.filters.has(name)
  }

  /** The registered names, in registration order. */
  names(): string[] {
    return [...this.filters.keys()]
  }

  /**
   * `get(name).mightContain(item)`.
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_REGISTRY_STATE`, `ERR_GRUDGE_BLOOM_NAME_UNKNOWN`
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  mightContain(name: string, item: string | Uint8Array): boolean {
    return this.get(name).mightContain(item)
  }

  /**
   * `get(name).add(item)`.
   * @returns true when a bit went from 0 to 1
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_REGISTRY_STATE`, `ERR_GRUDGE_BLOOM_NAME_UNKNOWN`
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  add(name: string, item: string | Uint8Array): boolean {
    return this.get(name).add(item)
  }

  /**
   * Checkpoint every filter now (those with unsaved inserts).
   * @returns the number of files written
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_REGISTRY_STATE`; the first checkpoint error
   */
  async checkpoint(): Promise<number> {
    this.openDir('checkpoint')
    let n = 0
    for (const f of this.filters.values()) n += await f.checkpoint()
    return n
  }

  /**
   * Close every filter (each writes a last checkpoint if its policy says so) and forget
   * them. Returns a Promise; idempotent (the same promise while closing; resolves at once
   * on a registry never initialized). Rejects with the first error after trying all.
   */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing
    if (this.state !== 'open') return Promise.resolve()
    this.state = 'closing'
    const all = [...this.filters.values()]
    this.closing = Promise.allSettled(all.map((f) => f.close())).then((results) => {
      this.filters.clear()
      this.dir = null
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
      if (failed !== undefined) throw failed.reason
    })
    return this.closing
  }

  private openDir(what: string): string {
    if (this.state !== 'open' || this.dir === null) {
      const why = this.state === 'new' ? 'before init()' : 'after close()'
      throw new GrudgeError(
        'ERR_GRUDGE_BLOOM_REGISTRY_STATE',
        `${what}: expected an initialized registry, received a call ${why}`,
      )
    }
    return this.dir
  }
}

/**
 * The module-level default registry: `bloomRegistry.init(dir)`, `.register(name, …)`,
 * `.mightContain(name, item)`, `.add(name, item)`, `.get(name)`, `.close()`. Created
 * empty at import (no I/O, no timers until `register`).
 */
export const bloomRegistry: BloomFilterRegistry = new BloomFilterRegistry()
