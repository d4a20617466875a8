import { join } from 'node:path'
import { wallClockMs } from '../clock.js'
import { GrudgeError, invalidOption } from '../errors.js'
import { FAMILY, invalidField, readFrame, writeFrame } from '../format/frame.js'
import { hasherFromId, randomSeed, type Hasher } from '../hash/hasher.js'
import { fmix32 } from '../hash/murmur3.js'
import { BloomFilter, pickHasher, sameBytes, type BloomHashOptions } from './bloom-filter.js'
import {
  ensureDir,
  listDir,
  moveAside,
  readFileOrNull,
  removeStaleTemps,
  writeFileAtomicSync,
  writeFrameAtomic,
} from './checkpoint-file.js'
import { expectedBloom, hasherIdAccepted, isBadCheckpointError, loadCheckpoint, type ExpectedBloom } from './managed.js'
import { CheckpointRunner, parsePersistOptions, type PersistOptions } from './persist.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/**
 * Format version of the shard-directory manifest (family 7, `FAMILY.shardedBloomManifest`).
 * @internal
 */
export const MANIFEST_FORMAT_VERSION = 1
/**
 * File name of the manifest inside a shard directory.
 * @internal
 */
export const MANIFEST_FILE = 'manifest.grudge'
/** Largest shard count: 65 536. */
export const MAX_SHARDS = 65536
const MANIFEST_PARAMS_BYTES = 24
const SHARD_FILE = /^shard-(\d{5})\.bloom$/

/**
 * File name of shard `i`: `shard-00000.bloom` …
 * @internal
 */
export function shardFileName(i: number): string {
  return `shard-${String(i).padStart(5, '0')}.bloom`
}

/** Options of {@link ShardedBloomFilter}. */
export interface ShardedBloomFilterOptions extends BloomHashOptions, PersistOptions {
  /** Expected number of distinct items over all shards: a positive safe integer. */
  capacity: number
  /** Target false-positive rate at capacity, in (0, 1). */
  errorRate: number
  /** The directory holding the manifest and one file per shard; created if missing. */
  dir: string
  /** Number of shards: an integer in [1, 65536]. */
  shardCount: number
}

/**
 * The option names of {@link ShardedBloomFilterOptions}; any other key is refused.
 * @internal
 */
export const SHARDED_BLOOM_OPTION_KEYS = optionKeys<ShardedBloomFilterOptions>({
  capacity: true,
  errorRate: true,
  dir: true,
  shardCount: true,
  hasher: true,
  seed: true,
  policy: true,
  ticker: true,
  onError: true,
  onBadCheckpoint: true,
  writeChunkBytes: true,
})

/**
 * The shard of a 64-bit hash among S shards: `floor(fmix32(hi XOR lo) · S / 2^32)`, with
 * fmix32 the MurmurHash3 finalizer (avalanche), so the shard tells nothing usable about
 * the bit positions, which are drawn from the same hash.
 * @param hashHi high 32 bits (int32 or uint32)
 * @param hashLo low 32 bits
 * @param shards S, integer in [1, 65536]
 * @internal
 */
export function shardOf(hashHi: number, hashLo: number, shards: number): number {
  return Math.floor(((fmix32(hashHi ^ hashLo) >>> 0) * shards) / 0x100000000)
}

interface Manifest {
  shardCount: number
  bitsPerShard: number
  hashes: number
  hasherId: number
  seed: Uint8Array
}

function encodeManifest(m: Manifest): Uint8Array {
  const p = new Uint8Array(MANIFEST_PARAMS_BYTES)
  const dv = new DataView(p.buffer)
  dv.setUint32(0, m.shardCount, true)
  dv.setUint32(4, m.hashes, true)
  dv.setUint32(8, m.bitsPerShard % 0x100000000, true)
  dv.setUint32(12, Math.floor(m.bitsPerShard / 0x100000000), true)
  p[16] = m.hasherId
  return writeFrame({
    family: FAMILY.shardedBloomManifest,
    version: MANIFEST_FORMAT_VERSION,
    flags: 0,
    seed: m.seed,
    params: p,
    payload: new Uint8Array(0),
  })
}

function decodeManifest(bytes: Uint8Array): Manifest {
  const f = readFrame(bytes, FAMILY.shardedBloomManifest, MANIFEST_FORMAT_VERSION)
  if (f.flags !== 0) invalidField('flags', '0', f.flags)
  if (f.params.length !== MANIFEST_PARAMS_BYTES)
    invalidField('params length', `${MANIFEST_PARAMS_BYTES}`, f.params.length)
  if (f.payload.length !== 0) invalidField('payload length', '0', f.payload.length)
  const p = f.params
  const dv = new DataView(p.buffer, p.byteOffset, p.byteLength)
  for (let i = 17; i < MANIFEST_PARAMS_BYTES; i++) if (p[i] !== 0) invalidField('reserved', '0', p[i])
  const m: Manifest = {
    shardCount: dv.getUint32(0, true),
    hashes: dv.getUint32(4, true),
    bitsPerShard: dv.getUint32(8, true) + dv.getUint32(12, true) * 0x100000000,
    hasherId: p[16],
    seed: new Uint8Array(f.seed),
  }
  if (m.shardCount < 1 || m.shardCount > MAX_SHARDS)
    invalidField('shardCount', 'an integer in [1, 65536]', m.shardCount)
  hasherFromId(m.hasherId, m.seed)
  return m
}

/**
 * A Bloom filter split into `shardCount` shards, each its own checkpoint file in `dir`,
 * so a checkpoint rewrites only the shards changed since the last one: with 16 shards a
 * few inserts cost one 1/16-size write instead of the whole filter.
 *
 * An item's shard is `floor(fmix32(hi XOR lo) · S / 2^32)` of its 64-bit hash
 * (`spec/bloom.md` §7); within the shard its positions come from the same hash (one hash
 * per operation). Each shard is sized for
 * `ceil(capacity / shardCount)` items at `errorRate`. The directory carries a manifest
 * (frame family 7) with the shard count, shard geometry, hash function and seed; opening
 * a directory written with other values is refused with `ERR_GRUDGE_BLOOM_PARAMS_MISMATCH`
 * (reading it anyway would route items to other shards and lose members), as are shard
 * files without a manifest.
 *
 * Loading is synchronous at construction; checkpoints follow the {@link PersistPolicy},
 * crash-safe and chunked as {@link ManagedBloomFilter}'s.
 */
export class ShardedBloomFilter extends CheckpointRunner {
  /** The shard directory. */
  readonly dir: string
  /** Number of shards. */
  readonly shardCount: number
  /** The shards (read-only use: inserts made directly are not tracked as unsaved). */
  readonly shards: readonly BloomFilter[]
  /** Shard files moved aside at load (`onBadCheckpoint: 'start-empty'`). */
  readonly movedAside: readonly string[]
  private readonly hasher: Hasher
  private readonly unsavedPerShard: Float64Array
  private unsavedTotal = 0
  private readonly chunkBytes: number

  /**
   * @param options see {@link ShardedBloomFilterOptions}
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming a bad option, or a key that is
   * not an option of {@link ShardedBloomFilterOptions} or of `policy`;
   * `ERR_GRUDGE_BLOOM_PARAMS_MISMATCH` for a directory written with another shard count,
   * geometry, hasher or seed, or shard files without a manifest; a corrupt manifest or
   * shard raises its `ERR_GRUDGE_FORMAT_*` code (a corrupt shard is moved aside instead
   * under `onBadCheckpoint: 'start-empty'`); `ERR_GRUDGE_BLOOM_IO`
   */
  constructor(options: ShardedBloomFilterOptions) {
    if (typeof options !== 'object' || options === null)
      invalidOption('options', 'an object { capacity, errorRate, dir, shardCount }', options)
    checkKnownOptions(options, SHARDED_BLOOM_OPTION_KEYS)
    const { dir, shardCount } = options
    if (typeof dir !== 'string' || dir === '') invalidOption('dir', 'a non-empty directory path', dir)
    if (!Number.isInteger(shardCount) || shardCount < 1 || shardCount > MAX_SHARDS) {
      invalidOption('shardCount', 'an integer in [1, 65536]', shardCount)
    }
    if (!Number.isSafeInteger(options.capacity) || options.capacity < 1)
      invalidOption('capacity', 'a positive safe integer', options.capacity)
    const opts = parsePersistOptions(options)
    const want = expectedBloom(Math.ceil(options.capacity / shardCount), options.errorRate, options)
    ensureDir(dir)

    const manifestPath = join(dir, MANIFEST_FILE)
    removeStaleTemps(manifestPath)
    const mbytes = readFileOrNull(manifestPath)
    const names = listDir(dir)
    const mismatch = (field: string, expected: unknown, received: unknown): never => {
      throw new GrudgeError(
        'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH',
        `shard directory "${dir}": ${field} expected ${String(expected)}, received ${String(received)} (written with other parameters)`,
      )
    }
    let seed: Uint8Array
    let hasherId = want.hasherId
    if (mbytes !== null) {
      let m: Manifest
      try {
        m = decodeManifest(mbytes)
      } catch (err) {
        const e = err as GrudgeError
        throw new GrudgeError(e.code, `manifest "${manifestPath}": ${e.message}`, { cause: err })
      }
      if (m.shardCount !== shardCount) mismatch('shardCount', shardCount, m.shardCount)
      if (m.bitsPerShard !== want.bits) mismatch('bits per shard', want.bits, m.bitsPerShard)
      if (m.hashes !== want.hashes) mismatch('hashes', want.hashes, m.hashes)
      if (!hasherIdAccepted(want, m.hasherId)) mismatch('hasher id', want.hasherId, m.hasherId)
      if (want.seed !== null && !sameBytes(want.seed, m.seed)) mismatch('seed', 'the seed asked for', 'another seed')
      seed = m.seed
      hasherId = m.hasherId
    } else {
      if (names.some((n) => SHARD_FILE.test(n))) mismatch('manifest', MANIFEST_FILE, 'shard files without a manifest')
      seed = want.seed ?? randomSeed()
      writeFileAtomicSync(
        manifestPath,
        encodeManifest({ shardCount, bitsPerShard: want.bits, hashes: want.hashes, hasherId: want.hasherId, seed }),
      )
    }
    for (const n of names) {
      const m = SHARD_FILE.exec(n)
      if (m !== null && Number(m[1]) >= shardCount) mismatch('shard files', `indexes below ${shardCount}`, n)
    }

    // the manifest's hasher: the one asked for, or the murmur3 variant adopted from the manifest
    const hasher =
      hasherId === want.hasherId ? pickHasher({ hasher: options.hasher, seed }) : hasherFromId(hasherId, seed)
    const exact: ExpectedBloom = { ...want, hasherId, adoptMurmur3: false, seed }
    const shards: BloomFilter[] = []
    const moved: string[] = []
    for (let i = 0; i < shardCount; i++) {
      const path = join(dir, shardFileName(i))
      removeStaleTemps(path)
      let f: BloomFilter | null = null
      try {
        f = loadCheckpoint(path, exact)
      } catch (err) {
        if (opts.onBadCheckpoint !== 'start-empty' || !isBadCheckpointError(err)) throw err
        moved.push(moveAside(path, wallClockMs()))
      }
      shards.push(f ?? BloomFilter.bySize({ bits: want.bits, hashes: want.hashes, hasher }))
    }
    super(opts)
    this.dir = dir
    this.shardCount = shardCount
    this.shards = shards
    this.movedAside = moved
    this.hasher = hasher
    this.unsavedPerShard = new Float64Array(shardCount)
    this.chunkBytes = opts.writeChunkBytes
  }

  /** Inserts (that set a new bit) not yet in a completed checkpoint, over all shards. */
  get unsavedCount(): number {
    return this.unsavedTotal
  }

  /** Number of shards with unsaved inserts: the files the next checkpoint writes. */
  get dirtyCount(): number {
    let n = 0
    for (let i = 0; i < this.shardCount; i++) if (this.unsavedPerShard[i] > 0) n++
    return n
  }

  /**
   * Insert an item into its shard; may start a background checkpoint.
   * @returns true when a bit went from 0 to 1
   * @throws {GrudgeError} `ERR_GRUDGE_BLOOM_CLOSED` after `close()`
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  add(item: string | Uint8Array): boolean {
    this.assertOpen('add')
    const h = this.hasher
    h.hashKey(item)
    const s = shardOf(h.hashHi, h.hashLo, this.shardCount)
    if (!this.shards[s].addHashed(h.hashHi, h.hashLo)) return false
    this.unsavedPerShard[s]++
    this.noteUnsaved(++this.unsavedTotal)
    return true
  }

  /**
   * Whether the item may have been added (false: surely not). Still answers after close.
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID`
   */
  mightContain(item: string | Uint8Array): boolean {
    const h = this.hasher
    h.hashKey(item)
    return this.shards[shardOf(h.hashHi, h.hashLo, this.shardCount)].mightContainHashed(h.hashHi, h.hashLo)
  }

  /** The shard index of an item (for inspection and tests). */
  shardIndexOf(item: string | Uint8Array): number {
    this.hasher.hashKey(item)
    return shardOf(this.hasher.hashHi, this.hasher.hashLo, this.shardCount)
  }

  /** Sum of the shards' `addedCount`. */
  get addedCount(): number {
    let n = 0
    for (const s of this.shards) n += s.addedCount
    return n
  }
  /** Total bits over all shards. */
  get bitCount(): number {
    return this.shards[0].bitCount * this.shardCount
  }
  /** k, positions per item (the same in every shard). */
  get hashCount(): number {
    return this.shards[0].hashCount
  }
  /** Fraction of all bits set. */
  fillRatio(): number {
    let set = 0
    for (const s of this.shards) set += s.setBitCount
    return set / this.bitCount
  }
  /**
   * The false-positive rate at the current fill: the mean over shards of
   * `(X_s / m_s)^k`, since a non-member is routed to each shard with probability 1/S.
   */
  estimatedFalsePositiveRate(): number {
    let sum = 0
    for (const s of this.shards) sum += s.estimatedFalsePositiveRate()
    return sum / this.shardCount
  }
  /** The sum of the shards' {@link BloomFilter.estimatedCardinality}. */
  estimatedCardinality(): number {
    let sum = 0
    for (const s of this.shards) sum += s.estimatedCardinality()
    return sum
  }

  /** Writes the dirty shards one after another; resolves to how many files were written. */
  protected async writeUnsaved(): Promise<number> {
    let written = 0
    for (let i = 0; i < this.shardCount; i++) {
      const snapshot = this.unsavedPerShard[i]
      if (snapshot === 0) continue
      const f = this.shards[i]
      await writeFrameAtomic(join(this.dir, shardFileName(i)), f.frameHeader(), f.payloadView(), this.chunkBytes)
      this.unsavedPerShard[i] -= snapshot
      this.unsavedTotal -= snapshot
      written++
    }
    return written
  }
}
