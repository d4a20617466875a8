/**
 * Preload for running @fastify/rate-limit's own shipped test suite against grudgeStore
 * (test/compat/frl-suite.test.ts): `node --import tsx --import ./test/compat/frl-default-store.ts --test …`.
 * It replaces the plugin's module export by a wrapper that registers the plugin with
 * `store: grudgeStore({ clock: dateClock })` whenever the options name neither a `store` nor
 * `redis`, so every test that configures no store runs on ours. Their code is not copied:
 * the suite is read from node_modules.
 *
 * A test of theirs that fails an assertion before its own `clock.reset()` leaves node:test's
 * MockTimers enabled, and the next test's `mock.timers.enable()` would then throw "already
 * enabled": one expected failure would fail the tests after it. So a root `afterEach` resets
 * a mock a test left enabled, and records that test (its file and name, one JSON line) in
 * the file named by `GRUDGE_FRL_TIMER_RESETS`; frl-suite.test.ts asserts that every recorded
 * test is one of its named expected failures, so a real clean-up failure cannot pass unseen.
 * `enable` and `reset` are wrapped only to track that state: a mock still enabled when a test
 * enables it still throws, and fails that test.
 */
import { appendFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { basename } from 'node:path'
import { afterEach, mock } from 'node:test'
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

// whether their global MockTimers are enabled (node:test has no public reading of it)
let timersEnabled = false
const timers = mock.timers
const enable = timers.enable.bind(timers)
const reset = timers.reset.bind(timers)
timers.enable = (...args: Parameters<typeof enable>) => {
  enable(...args)
  timersEnabled = true
}
timers.reset = () => {
  reset()
  timersEnabled = false
}
const resetLog = process.env.GRUDGE_FRL_TIMER_RESETS
afterEach((t) => {
  if (!timersEnabled) return
  timers.reset()
  if (resetLog !== undefined)
    appendFileSync(resetLog, JSON.stringify({ file: basename(process.argv[1] ?? ''), name: t.name }) + '\n')
})
