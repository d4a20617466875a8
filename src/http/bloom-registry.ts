/**
 * The adapters' `bloomRegistry` / `bloom.registry` option: a registry to consult, or the
 * configuration of one for the adapter to open, and close when the server closes.
 * @module
 */
import { invalidOption } from '../errors.js'
import { checkKnownOptions, optionKeys } from '../options.js'
import type { Ticker } from '../clock.js'
import type { BloomLookup } from '../limit/bloom-gate.js'
import { BloomFilterRegistry, REGISTER_BLOOM_KEYS, type RegisterBloomOptions } from '../bloom/registry.js'
import { PERSIST_POLICY_KEYS } from '../bloom/persist.js'

/** A Bloom registry an adapter consults for the `bloom` option (a `BloomFilterRegistry` is one). */
export interface BloomRegistryLike extends BloomLookup {
  /** Checkpoint and release; called on server close. */
  close?(): void | Promise<void>
  /** The named filter (for `fastify.grudge.bloom(name)`). */
  get?(name: string): unknown
}

/**
 * A registry described by configuration: the adapter builds a `BloomFilterRegistry`,
 * `init(dir)`s it, `register`s each filter (loading its checkpoint when there is one) and
 * closes it (a last checkpoint) when the server closes.
 */
export interface BloomRegistryConfig {
  /** Directory of the checkpoints (created if missing). */
  dir: string
  /** Filters by name: `{ capacity, errorRate, policy?, shardCount?, ... }` (see `RegisterBloomOptions`). */
  filters: Readonly<Record<string, RegisterBloomOptions>>
  /** Ticker of the checkpoint timers (tests pass a FakeTicker). */
  ticker?: Ticker
  /** Receives background checkpoint errors. */
  onError?: (err: Error) => void
}

/**
 * The option names of {@link BloomRegistryConfig}.
 * @internal
 */
export const BLOOM_REGISTRY_CONFIG_KEYS = optionKeys<BloomRegistryConfig>({
  dir: true,
  filters: true,
  ticker: true,
  onError: true,
})

/**
 * The registry an adapter uses: the object itself when it has `mightContain` (a value: its
 * keys are not checked), else a `BloomFilterRegistry` built from a {@link BloomRegistryConfig}.
 * @param v a registry or its configuration
 * @param option option path for error messages
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for neither, or for an unknown key of the
 * configuration, of a filter's options or of a filter's `policy` (named by its full path,
 * e.g. `bloomRegistry.filters.users.capacty`); the registry's own errors for a bad configuration
 * @internal
 */
export function openBloomRegistry(v: BloomRegistryLike | BloomRegistryConfig, option: string): BloomRegistryLike {
  if (typeof v !== 'object' || v === null)
    invalidOption(option, 'a registry with mightContain(name, item) or { dir, filters }', v)
  if (typeof (v as BloomRegistryLike).mightContain === 'function') return v as BloomRegistryLike
  const c = v as BloomRegistryConfig
  if (typeof c.dir !== 'string' || typeof c.filters !== 'object' || c.filters === null) {
    invalidOption(option, 'a registry with mightContain(name, item) or { dir, filters }', v)
  }
  checkKnownOptions(c, BLOOM_REGISTRY_CONFIG_KEYS, option + '.')
  // checked here first, so that the message names the path from the adapter's options
  for (const [name, o] of Object.entries(c.filters)) {
    const path = `${option}.filters.${name}.`
    checkKnownOptions(o, REGISTER_BLOOM_KEYS, path)
    if (typeof o === 'object' && o !== null) checkKnownOptions(o.policy, PERSIST_POLICY_KEYS, path + 'policy.')
  }
  const registry = new BloomFilterRegistry({ ticker: c.ticker, onError: c.onError })
  registry.init(c.dir)
  try {
    for (const [name, o] of Object.entries(c.filters)) registry.register(name, o)
  } catch (err) {
    void registry.close()
    throw err
  }
  return registry
}
