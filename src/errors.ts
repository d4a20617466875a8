/**
 * The one table of error codes. Every code thrown by grudge is declared here, once,
 * with its meaning; `spec/errors.md` carries the same rows with how to fix each, and a
 * test fails when the two drift apart. HTTP status codes belong to the adapters.
 *
 * Codes read `ERR_GRUDGE_<AREA>_<PROBLEM>`. Messages say what was expected and what was
 * received ("expected … , received …"), after the style of fastify's `lib/errors.js`.
 */
export const ERROR_CODES = {
  // options and arguments
  ERR_GRUDGE_OPTION_INVALID: 'An option or argument is missing, unknown, of the wrong type or out of range.',
  ERR_GRUDGE_VALUE_NOT_FINITE: 'A delta, limit, count or clock reading is NaN or ±Infinity; nothing was changed.',
  ERR_GRUDGE_KEY_INVALID: 'A key is neither a string nor a Uint8Array.',
  ERR_GRUDGE_SIZING_INVALID: 'A sizing helper got arguments outside its domain.',
  ERR_GRUDGE_SIZING_BUDGET: 'The memory budget is too small for one generation of the smallest sketch.',
  ERR_GRUDGE_SIZING_CONFLICT:
    'A memory budget was given with levels and cellsPerLevel, or with a restored frame, whose sketches do not fit in it.',
  ERR_GRUDGE_UNSUPPORTED_OPERATION: 'The operation is not supported by this family or object.',
  // rotator
  ERR_GRUDGE_ROTATOR_CLOSED: 'The rotator was closed and can no longer be used.',
  ERR_GRUDGE_ROTATOR_AMNESTY: 'The rotation period is too short: a fresh generation would forgive debt early.',
  // limiter
  ERR_GRUDGE_TIER_UNKNOWN: "A request named no tier, or a tier that is not one of the tiered limit's tiers.",
  ERR_GRUDGE_LIMIT_STORE_FAILED:
    "A store failed to answer a peek, reset or forgive: the key's score is unknown and may be unchanged.",
  // binary frames
  ERR_GRUDGE_FORMAT_TRUNCATED: 'A binary frame is shorter than its header or its declared length.',
  ERR_GRUDGE_FORMAT_MAGIC: 'A binary frame does not start with the grudge magic bytes.',
  ERR_GRUDGE_FORMAT_FAMILY: 'A binary frame holds another family than the one being read.',
  ERR_GRUDGE_FORMAT_VERSION: 'A binary frame has a format version this release cannot read.',
  ERR_GRUDGE_FORMAT_CHECKSUM: 'A binary frame fails its CRC32C check: it was corrupted.',
  ERR_GRUDGE_FORMAT_INVALID: 'A binary frame has a field whose value is invalid or does not match its config.',
  // merge
  ERR_GRUDGE_MERGE_INCOMPATIBLE: 'Two sketches differ in family, shape, parameters or seed and cannot be merged.',
  ERR_GRUDGE_MERGE_SELF: 'A sketch cannot be merged with itself.',
  // bloom filters, checkpoints, shards, registry
  ERR_GRUDGE_BLOOM_PARAMS_MISMATCH:
    'A Bloom checkpoint or shard directory was written with other parameters than the ones asked for.',
  ERR_GRUDGE_BLOOM_CLOSED: 'A persistent Bloom filter was closed and can no longer take inserts or checkpoints.',
  ERR_GRUDGE_BLOOM_IO: 'Reading or writing a Bloom checkpoint file failed at the file-system level.',
  ERR_GRUDGE_BLOOM_NAME_INVALID: 'A Bloom filter name is not a safe file name.',
  ERR_GRUDGE_BLOOM_NAME_TAKEN: 'A Bloom filter name is already registered.',
  ERR_GRUDGE_BLOOM_NAME_UNKNOWN: 'No Bloom filter is registered under that name.',
  ERR_GRUDGE_BLOOM_REGISTRY_STATE:
    'The Bloom registry was used before init(), initialized twice, or used after close().',
  // cluster (Redis)
  ERR_GRUDGE_CLUSTER_SEED_REQUIRED: 'A Redis-backed store was configured without the shared secret seed of the fleet.',
  ERR_GRUDGE_CLUSTER_FINGERPRINT:
    'Redis holds cells of this policy placed or encoded otherwise: another seed, hash function, levels, cells per level, decay kind, aggregator, generations or mode.',
  ERR_GRUDGE_CLUSTER_SCHEDULE:
    "The fleet's recorded rotation period cannot hold this policy's limit: the debt it would need drains before the generations retire.",
  ERR_GRUDGE_CLUSTER_SHAPE:
    "Redis holds a generation shape record for this policy that this instance cannot adopt: not written by grudge for this fingerprint, or larger than this instance's memory budget.",
  ERR_GRUDGE_CLUSTER_CLIENT:
    'The Redis client could not be created: the optional peer ioredis is missing or failed to load.',
  ERR_GRUDGE_CLUSTER_UNAVAILABLE: 'Redis did not answer within timeoutMs where an answer was required (startup check).',
  ERR_GRUDGE_CLUSTER_REPLY: 'Redis answered the grudge script with a reply of an unexpected shape.',
  ERR_GRUDGE_CLUSTER_CLOSED: 'The Redis-backed store was closed and can no longer be used.',
  // adapters (Fastify, Express)
  ERR_GRUDGE_ADAPTER_REGISTERED: 'The grudge Fastify plugin was registered twice in one scope.',
  ERR_GRUDGE_ADAPTER_COST_OVER_BURST:
    'A cost function returned a cost above the burst: a request of that cost could never be admitted.',
  ERR_GRUDGE_PEER_MISSING: 'An optional peer dependency that the feature called needs is not installed.',
} as const

/** Every declared error code. */
export type GrudgeErrorCode = keyof typeof ERROR_CODES

/** Shape shared by every grudge error: a standard Error with a stable `code`. */
export interface CodedError extends Error {
  /** Stable code from {@link ERROR_CODES}: match on it, never on the message. */
  readonly code: GrudgeErrorCode
}

/**
 * The base error of grudge. `code` is one of {@link ERROR_CODES}; `message` says what was
 * expected and what was received.
 */
export class GrudgeError extends Error implements CodedError {
  /** Stable code from {@link ERROR_CODES}: match on it, never on the message. */
  readonly code: GrudgeErrorCode
  /**
   * An error carrying `code`, a stable key for callers to match on.
   * @param code one of {@link ERROR_CODES}
   * @param message what was expected and what was received
   * @param options `cause`: the underlying error, if any
   */
  constructor(code: GrudgeErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'GrudgeError'
    this.code = code
  }
}

/** A coded `RangeError`: a number outside its allowed range (NaN, ±Infinity, negative…). */
export class GrudgeRangeError extends RangeError implements CodedError {
  /** Stable code from {@link ERROR_CODES}: match on it, never on the message. */
  readonly code: GrudgeErrorCode
  /**
   * An error carrying `code`, a stable key for callers to match on.
   * @param code one of {@link ERROR_CODES}
   * @param message what was expected and what was received
   */
  constructor(code: GrudgeErrorCode, message: string) {
    super(message)
    this.name = 'GrudgeRangeError'
    this.code = code
  }
}

/** A coded `TypeError`: a value of the wrong type (a key that is not a string or bytes…). */
export class GrudgeTypeError extends TypeError implements CodedError {
  /** Stable code from {@link ERROR_CODES}: match on it, never on the message. */
  readonly code: GrudgeErrorCode
  /**
   * An error carrying `code`, a stable key for callers to match on.
   * @param code one of {@link ERROR_CODES}
   * @param message what was expected and what was received
   */
  constructor(code: GrudgeErrorCode, message: string) {
    super(message)
    this.name = 'GrudgeTypeError'
    this.code = code
  }
}

/** Render a received value for an error message without throwing on odd inputs. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? value.slice(0, 80) + '…' : value)
  if (typeof value === 'bigint') return `${value}n`
  if (value instanceof Uint8Array) return `Uint8Array(${value.length})`
  if (Array.isArray(value)) return `Array(${value.length})`
  if (value === null) return 'null'
  if (typeof value === 'object') return 'object'
  if (typeof value === 'function') return 'function'
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- objects returned above; only primitives reach here
  return String(value)
}

/**
 * Render a secret (a seed, a key) for an error message by its kind and length only, never
 * its content: `a string of 3 characters`, `Uint8Array(12)`, `a number`, `a bigint`.
 * An operator can still see what is wrong with it (too short, not hex, the wrong type).
 */
export function describeSecret(value: unknown): string {
  if (typeof value === 'string') {
    const hex = /^[0-9a-fA-F]*$/.test(value) ? 'hex digits' : 'characters, not all hex digits'
    return value === '' ? 'an empty string' : `a string of ${value.length} ${hex}`
  }
  if (typeof value === 'number') {
    return Number.isSafeInteger(value)
      ? `a ${value < 0 ? 'negative ' : ''}number`
      : 'a number that is not a safe integer'
  }
  if (typeof value === 'bigint')
    return `a ${value < 0n ? 'negative ' : ''}bigint of ${value.toString(2).replace('-', '').length} bits`
  if (value === undefined) return 'undefined'
  return describeValue(value) // Uint8Array(n), Array(n), null, object, function: no content
}

/** How {@link invalidOption} renders the received value. */
export interface InvalidOptionFlags {
  /** The option holds a secret (a seed): print its kind and length, never its value. Default false. */
  readonly secret?: boolean
}

/**
 * Throw `ERR_GRUDGE_OPTION_INVALID` for option `name`.
 * @param name dotted option path, e.g. `limit.rate`
 * @param expected what was expected, e.g. `a positive finite number`
 * @param received the bad value
 * @param flags `{ secret: true }` for a secret option: the message gives the value's kind
 * and length ({@link describeSecret}), never the value
 * @throws {GrudgeError} always, code `ERR_GRUDGE_OPTION_INVALID`
 */
export function invalidOption(name: string, expected: string, received: unknown, flags?: InvalidOptionFlags): never {
  const shown = flags?.secret === true ? describeSecret(received) : describeValue(received)
  throw new GrudgeError('ERR_GRUDGE_OPTION_INVALID', `option "${name}": expected ${expected}, received ${shown}`)
}
