/**
 * `peek`, `reset` and `forgive` as the adapters offer them (`fastify.grudge.peek(key)`,
 * `middleware.reset(req)`): given a key string, or a request whose key (and tier) is derived
 * the way the limiter derives it. One home for both adapters.
 * @module
 */
import { invalidOption } from '../errors.js'
import { deriveKey, type RequestView } from './client-key.js'
import { isThenable } from './thenable.js'
import type { AdapterConfig } from './options.js'
import type { Limiter } from '../limit/limiter.js'
import type { ForgiveOptions, KeyState } from '../limit/key-state.js'

/** Options of {@link KeyOps.peek}. */
export interface PeekOptions {
  /** For a tiered limit, the tier to read; default the request's tier (`limit.tier(req)`), required with a key string. */
  tier?: string
}

/**
 * Read and lower a key's scores (ERL's `get` / `resetKey`, rate-limiter-flexible's `get`,
 * `delete` and `reward`). A `string` argument is the request key exactly as the limiter
 * derives it (`ip:203.0.113.7`, `ip:2001:db8:abcd:12::/64`, `fn:alice`, `tenant:acme`, parts
 * joined by `|`; spec/http.md §2); any other argument is a request, whose key (and tier) is
 * derived by the limiter's own `key` (and `limit.tier`) option. Every method answers with a
 * Promise, whatever the store.
 */
export interface KeyOps<Req> {
  /**
   * The key's debt, remaining quota and scores, without consuming anything.
   * @throws {GrudgeError} (as a rejection) `ERR_GRUDGE_TIER_UNKNOWN` (a tiered limit needs a
   * tier: from the request, or `options.tier`); `ERR_GRUDGE_OPTION_INVALID` for an argument
   * that is neither a string nor a request, or options that are not an object;
   * `ERR_GRUDGE_LIMIT_STORE_FAILED` when a store failed
   */
  peek: (keyOrRequest: string | Req, options?: PeekOptions) => Promise<KeyState>
  /**
   * Forget the key's debt and scores (every policy, every tier unless `options` narrows it).
   * What that does to keys sharing its cells: spec/limiter.md §Forgive.
   * @throws {GrudgeError} (as a rejection) as {@link Limiter.reset}; `ERR_GRUDGE_OPTION_INVALID`
   * for an argument that is neither a string nor a request
   */
  reset: (keyOrRequest: string | Req, options?: ForgiveOptions) => Promise<void>
  /**
   * Lower the key's debt (`options.policy` default `limit`, in cost units) by `amount`
   * (default all of it).
   * @throws {GrudgeError} (as a rejection) as {@link Limiter.forgive}; `ERR_GRUDGE_OPTION_INVALID`
   * for an argument that is neither a string nor a request
   */
  forgive: (keyOrRequest: string | Req, amount?: number, options?: ForgiveOptions) => Promise<void>
}

async function keyOf<Req, Res>(
  config: AdapterConfig<Req, Res>,
  view: RequestView<Req>,
  arg: string | Req,
): Promise<string> {
  if (typeof arg === 'string') return arg
  // a number or undefined is no request: derived, it read `ip:` (the bucket every client
  // without an address shares) or threw a TypeError
  if (typeof arg !== 'object' || arg === null)
    invalidOption('key', 'a request key string (e.g. ip:203.0.113.7) or a request', arg)
  return await deriveKey(config, view, arg)
}

async function tierOf<Req, Res>(config: AdapterConfig<Req, Res>, arg: string | Req): Promise<string | undefined> {
  if (typeof arg === 'string' || config.tier === undefined) return undefined
  const t = config.tier(arg)
  return isThenable(t) ? await t : t
}

/**
 * The key operations of one adapter limiter.
 * @param config the limiter's parsed options (its key and tier rules)
 * @param view the adapter's reads of a request
 * @param limiter the limiter
 * @internal
 */
export function keyOps<Req, Res>(
  config: AdapterConfig<Req, Res>,
  view: RequestView<Req>,
  limiter: Limiter,
): KeyOps<Req> {
  return {
    async peek(arg, options) {
      if (options !== undefined && (typeof options !== 'object' || options === null))
        invalidOption('peek options', 'an object { tier? }', options)
      const key = await keyOf(config, view, arg)
      return limiter.peek(key, options?.tier ?? (await tierOf(config, arg)))
    },
    async reset(arg, options) {
      return limiter.reset(await keyOf(config, view, arg), options)
    },
    async forgive(arg, amount, options) {
      return limiter.forgive(await keyOf(config, view, arg), amount, options)
    },
  }
}
