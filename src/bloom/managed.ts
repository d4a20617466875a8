import { GrudgeError, invalidOption } from '../errors.js'
import { wallClockMs } from '../clock.js'
import { HASHER_IDS } from '../hash/hasher.js'
import { BloomFilter, accuracyGeometry, pickHasher, sameBytes, type BloomHashOptions } from './bloom-filter.js'
import { moveAside, readFileOrNull, removeStaleTemps, writeFrameAtomic } from './checkpoint-file.js'
import { CheckpointRunner, parsePersistOptions, type PersistOptions } from './persist.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/** Options of {@link ManagedBloomFilter}. */
export interface ManagedBloomFilterOptions extends BloomHashOptions, PersistOptions {
  /** Expected number of distinct items: a positive safe integer. */
  capacity: number
  /** Target false-positive rate at capacity, in (0, 1). */
  errorRate: number
  /** The checkpoint file. Its directory must exist. */
  path: string
}

/**
 * The option names of {@link ManagedBloomFilterOptions}; any other key is refused.
 * @internal
 */
export const MANAGED_BLOOM_OPTION_KEYS = optionKeys<ManagedBloomFilterOptions>({
  capacity: true,
  errorRate: true,
  path: true,
  hasher: true,
  seed: true,
  policy: true,
  ticker: true,
  onError: true,
  onBadCheckpoint: true,
  writeChunkBytes: true,
})

/**
 * What a loaded checkpoint must match: geometry always, hasher and seed when asked for.
 * @internal
 */
export interface ExpectedBloom {
  bits: number
  hashes: number
  hasherId: number
  /**
   * No hasher was asked for: a file written with the other MurmurHash3 variant (id 1,
   * `'murmur3x64'`, the default before 0.1.0) is adopted with its hasher instead of refused.
   */
  adoptMurmur3: boolean
  /** The seed asked for, or null to adopt the file's. */
  seed: Uint8Array | null
}

/**
 * Whether a file's hasher id satisfies `want` (the same id, or an adopted murmur3 variant).
 * @internal
 */
export function hasherIdAccepted(want: ExpectedBloom, id: number): boolean {
  if (id === want.hasherId) return true
  return want.adoptMurmur3 && want.hasherId === HASHER_IDS.murmur3 && id === HASHER_IDS.murmur3x64
}

/**
 * The geometry and hashing the options ask for: the bits and hashes
 * `BloomFilter.byAccuracy(…)` would choose (k capped at 1024).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a bad capacity (or one needing
 * more than 2^36 bits), errorRate, hasher or seed
 * @internal
 */
export function expectedBloom(capacity: number, errorRate: number, options: BloomHashOptions): ExpectedBloom {
  // the same geometry as BloomFilter.byAccuracy, or a filter could not reload its own checkpoint
  const { bits, hashes } = accuracyGeometry(capacity, errorRate)
  const explicit = options.seed !== undefined || options.hasher !== undefined
  const hasher = explicit ? pickHasher(options) : null
  return {
    bits,
    hashes,
    hasherId: hasher?.id ?? HASHER_IDS.murmur3,
    adoptMurmur3: options.hasher === undefined,
    seed: hasher === null ? null : hasher.seed,
  }
}

/**
 * Check a loaded filter against what was asked for.
 * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_PARAMS_MISMATCH` naming the field
 * @internal
 */
export function checkLoaded(f: BloomFilter, want: ExpectedBloom, where: string): void {
  const fail = (field: string, expected: unknown, received: unknown): never => {
    throw new GrudgeError(
      'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH',
      `${where}: ${field} expected ${String(expected)}, received ${String(received)} (the file was written with other parameters)`,
    )
  }
  if (f.bitCount !== want.bits) fail('bits', want.bits, f.bitCount)
  if (f.hashCount !== want.hashes) fail('hashes', want.hashes, f.hashCount)
  if (!hasherIdAccepted(want, f.hasher.id)) fail('hasher id', want.hasherId, f.hasher.id)
  if (want.seed !== null && !sameBytes(f.hasher.seed, want.seed)) fail('seed', 'the seed asked for', 'another seed')
}

/**
 * Whether an error means "this file is bad" (as opposed to an I/O failure).
 * @internal
 */
export function isBadCheckpointError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return (
    typeof code === 'string' && (code.startsWith('ERR_GRUDGE_FORMAT_') || code === 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH')
  )
}

/**
 * Load a Bloom checkpoint from `path`, or null when the file is absent.
 * @throws {GrudgeError} the frame's `ERR_GRUDGE_FORMAT_*` code, or
 * `ERR_GRUDGE_BLOOM_PARAMS_MISMATCH`, with the path in the message (the file is untouched);
 * `ERR_GRUDGE_BLOOM_IO`
 * @internal
 */
export function loadCheckpoint(path: string, want: ExpectedBloom): BloomFilter | null {
  const bytes = readFileOrNull(path)
  if (bytes === null) return null
  try {
    const f = BloomFilter.deserialize(bytes)
    checkLoaded(f, want, `checkpoint "${path}"`)
    return f
  } catch (err) {
    const e = err as GrudgeError
    if (e.code === 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH') throw e
    throw new GrudgeError(e.code, `checkpoint "${path}": ${e.message}`, { cause: err })
  }
}

/**
 * A Bloom filter kept in one checkpoint file that survives restarts.
 *
 * On construction it loads the checkpoint at `path` synchronously if the file exists
 * (checking its frame and that it was written with the same capacity, error rate, hash
 * function and — when given — seed; without an explicit seed it adopts the file's), else
 * starts empty under a random seed. It then checkpoints by its {@link PersistPolicy}:
 * after `checkpointInsertThreshold` unsaved inserts, at most `checkpointIntervalMs` after
 * an unsaved insert (an unref'd timer; an idle filter writes nothing), and on `close()`.
 *
 * A checkpoint is crash-safe (temporary file in the same directory, fsync, rename,
 * directory fsync) and does not stall the event loop: the payload is written in chunks
 * of `writeChunkBytes`, each awaited. Inserts made during a checkpoint stay counted as
 * unsaved and go into the next one.
 */
export class ManagedBloomFilter extends CheckpointRunner {
  /** The checkpoint file. */
  readonly path: string
  /** The in-memory filter. */
  readonly filter: BloomFilter
  /** Where a bad checkpoint was moved at load (`onBadCheckpoint: 'start-empty'`), else null. */
  readonly movedAside: string | null
  private unsaved = 0
  private readonly chunkBytes: number

  /**
   * @param options see {@link ManagedBloomFilterOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming a bad option, or a key that is
   * not an option of {@link ManagedBloomFilterOptions} or of `policy`; when the checkpoint
   * is corrupt (`ERR_GRUDGE_FORMAT_*`) or was written with other parameters
   * (`ERR_GRUDGE_BLOOM_PARAMS_MISMATCH`) — unless `onBadCheckpoint: 'start-empty'`; for
   * a read failure `ERR_GRUDGE_BLOOM_IO`
   */
  constructor(options: ManagedBloomFilterOptions) {
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object { capacity, errorRate, path }', options)
    checkKnownOptions(options, MANAGED_BLOOM_OPTION_KEYS)
    if (typeof options.path !== 'string' || options.path === '')
      invalidOption('path', 'a non-empty file path', options.path)
    const opts = parsePersistOptions(options)
    const want = expectedBloom(options.capacity, options.errorRate, options)
    removeStaleTemps(options.path)
    let loaded: BloomFilter | null = null
    let moved: string | null = null
    try {
      loaded = loadCheckpoint(options.path, want)
    } catch (err) {
      if (opts.onBadCheckpoint !== 'start-empty' || !isBadCheckpointError(err)) throw err
      moved = moveAside(options.path, wallClockMs())
    }
    super(opts)
    this.path = options.path
    this.filter =
      loaded ??
      BloomFilter.byAccuracy({
        capacity: options.capacity,
        errorRate: options.errorRate,
        hasher: options.hasher,
        seed: options.seed,
      })
    this.movedAside = moved
    this.chunkBytes = opts.writeChunkBytes
  }

  /** Inserts (that set a new bit) not yet in a completed checkpoint. */
  get unsavedCount(): number {
    return this.unsaved
  }

  /**
   * Insert an item; may start a background checkpoint (see the policy).
   * @returns true when a bit went from 0 to 1
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_CLOSED` after `close()`
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  add(item: string | Uint8Array): boolean {
    this.assertOpen('add')
    if (!this.filter.add(item)) return false
    this.noteUnsaved(++this.unsaved)
    return true
  }

  /** See {@link BloomFilter.mightContain}; still answers after `close()`. */
  mightContain(item: string | Uint8Array): boolean {
    return this.filter.mightContain(item)
  }

  /** See {@link BloomFilter.addedCount}. */
  get addedCount(): number {
    return this.filter.addedCount
  }
  /** m, bits. */
  get bitCount(): number {
    return this.filter.bitCount
  }
  /** k, positions per item. */
  get hashCount(): number {
    return this.filter.hashCount
  }
  /** See {@link BloomFilter.fillRatio}. */
  fillRatio(): number {
    return this.filter.fillRatio()
  }
  /** See {@link BloomFilter.estimatedFalsePositiveRate}. */
  estimatedFalsePositiveRate(): number {
    return this.filter.estimatedFalsePositiveRate()
  }
  /** See {@link BloomFilter.estimatedCardinality}. */
  estimatedCardinality(): number {
    return this.filter.estimatedCardinality()
  }

  /** Write the one checkpoint file; inserts made while it is written stay unsaved. */
  protected async writeUnsaved(): Promise<number> {
    const snapshot = this.unsaved
    await writeFrameAtomic(this.path, this.filter.frameHeader(), this.filter.payloadView(), this.chunkBytes)
    this.unsaved -= snapshot
    return 1
  }
}
