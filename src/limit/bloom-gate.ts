import { invalidOption } from '../errors.js'
import { settle } from './settle.js'
import { checkKnownOptions, optionKeys } from '../options.js'

/**
 * What the Bloom gate needs of a filter registry (the `BloomFilterRegistry` of
 * `src/bloom/` satisfies it): membership by filter name, possibly asynchronous.
 */
export interface BloomLookup {
  /** false when `item` is surely not in filter `name`; true when it might be. */
  mightContain(name: string, item: string): boolean | Promise<boolean>
}

/** Options of a Bloom gate (`bloom` on a route), framework-free part. */
export interface BloomGateOptions {
  /** Name of a filter registered in the registry. */
  filter: string
}

/** The option names of {@link BloomGateOptions}; any other key is refused. */
export const BLOOM_GATE_OPTION_KEYS = optionKeys<BloomGateOptions>({ filter: true })

/**
 * A Bloom pre-check: if the named filter surely does not contain the item, the request is
 * answered without running the handler (no database query for an id that does not exist).
 * A Bloom filter has no false negatives, so an existing item is never refused; a false
 * positive only lets a request reach the handler as it would without the gate.
 */
export class BloomGate {
  /** Name of the registry filter consulted (non-empty). */
  readonly filter: string
  /**
   * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` for a missing filter name or a key
   * that is not an option of {@link BloomGateOptions}
   */
  constructor(options: BloomGateOptions, prefix = 'bloom.') {
    if (typeof options !== 'object' || options === null)
      invalidOption(prefix.slice(0, -1), 'an object { filter, item, onAbsent }', options)
    checkKnownOptions(options, BLOOM_GATE_OPTION_KEYS, prefix)
    if (typeof options.filter !== 'string' || options.filter.length === 0)
      invalidOption(prefix + 'filter', 'a filter name', options.filter)
    this.filter = options.filter
  }

  /**
   * @returns true when the item may be present (let the request through), false when it surely is absent
   */
  check(registry: BloomLookup, item: string): boolean | Promise<boolean> {
    if (typeof item !== 'string') invalidOption('bloom.item', 'a function returning a string', item)
    return settle(registry.mightContain(this.filter, item), (v) => v === true)
  }
}
