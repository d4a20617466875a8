/**
 * Preload for running @fastify/rate-limit's own shipped test suite against grudgeStore
 * (test/compat/frl-suite.test.ts): `node --import tsx --import ./test/compat/frl-default-store.ts --test …`.
 * It replaces the plugin's module export by a wrapper that registers the plugin with
 * `store: grudgeStore({ clock: dateClock })` whenever the options name neither a `store` nor
 * `redis`, so every test that configures no store runs on ours. Their code is not copied:
 * the suite is read from node_modules.
 *
 * A test of theirs that fails leaves node:test's MockTimers enabled, and the next test's
 * `mock.timers.enable()` then throws "already enabled": one expected failure would fail the
 * tests after it. So `enable` resets a still-enabled mock first; each test is judged alone.
 */
import { createRequire } from 'node:module'
import { mock } from 'node:test'
import { grudgeStore, dateClock } from '../../plugins/fastify-rate-limit-store.js'

type PluginFn = (fastify: unknown, opts: Record<string, unknown>) => Promise<void>
type Plugin = PluginFn & Record<string, unknown>

const require = createRequire(import.meta.url)
const indexPath = require.resolve('@fastify/rate-limit')
const frl = require(indexPath) as Plugin
const fp = createRequire(indexPath)('fastify-plugin') as (f: PluginFn, meta: object) => Plugin
const Store = grudgeStore({ clock: dateClock })

const wrapped = fp(
  (fastify, opts) =>
    (frl.fastifyRateLimit as Plugin)(fastify, opts.store || opts.redis ? opts : { ...opts, store: Store }),
  { fastify: '5.x', name: '@fastify/rate-limit' },
)
wrapped.default = wrapped
wrapped.fastifyRateLimit = wrapped
wrapped.normalizeIP = frl.normalizeIP
require.cache[indexPath]!.exports = wrapped

const enable = mock.timers.enable.bind(mock.timers)
mock.timers.enable = (...args: Parameters<typeof enable>) => {
  try {
    enable(...args)
  } catch {
    mock.timers.reset()
    enable(...args)
  }
}
