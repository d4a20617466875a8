// RSS after 10^6 distinct keys through each library's in-process state, in its own process:
//   node --import tsx --expose-gc examples/bench/http-memory.ts <grudge|fastify-rate-limit|express-rate-limit>
// Prints one JSON line { rssBeforeMB, rssAfterMB }.
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type * as LimiterModule from '../../src/limit/limiter.js'

const dist = process.env.GRUDGE_DIST
const { Limiter } = (await import(
  dist ? pathToFileURL(`${dist}/src/limit/limiter.js`).href : '../../src/limit/limiter.js'
)) as typeof LimiterModule

const require = createRequire(import.meta.url)
const which = process.argv[2]
const N = 1_000_000
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined)
gc()
const before = process.memoryUsage().rss
let keep: unknown
if (which === 'grudge') {
  const l = new Limiter({ limit: { rate: 1, burst: 10 } })
  for (let i = 0; i < N; i++) void l.decide(`10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}:${i}`)
  keep = l
} else if (which === 'fastify-rate-limit') {
  // its default store, with a cache big enough to hold every key (as it must to limit them)
  const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
    continueExceeding: boolean,
    exponentialBackoff: boolean,
    cache: number,
  ) => { incr(key: string, cb: () => void, timeWindowMs: number, max: number): void }
  const s = new LocalStore(false, false, N)
  for (let i = 0; i < N; i++)
    s.incr(`10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}:${i}`, () => undefined, 60_000, 10)
  keep = s
} else {
  const { MemoryStore } = await import('express-rate-limit')
  const s = new MemoryStore()
  s.init({ windowMs: 60_000 } as never)
  for (let i = 0; i < N; i++) await s.increment(`10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}:${i}`)
  keep = s
}
gc()
const after = process.memoryUsage()
console.log(
  JSON.stringify({
    which,
    rssBeforeMB: before / 2 ** 20,
    rssAfterMB: after.rss / 2 ** 20,
    heapUsedMB: after.heapUsed / 2 ** 20,
    kept: keep !== undefined,
  }),
)
process.exit(0)
