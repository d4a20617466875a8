// One instance of the fleet test (forked by fleet.test.ts with tsx): hammers a few keys
// through a redisStore and reports how many requests were admitted per key.
import { redisStore } from '../../src/cluster/index.js'
import { linear } from '../../src/sketch/decay.js'

interface Config {
  url: string
  seed: string
  mode: 'exact' | 'sync'
  prefix: string
  ratePerSecond: number
  burst: number
  keys: number
  syncMs: number
  concurrency: number
}
const cfg = JSON.parse(process.argv[2]) as Config
const store = redisStore({
  redis: cfg.url,
  seed: cfg.seed,
  mode: cfg.mode,
  prefix: cfg.prefix,
  timeoutMs: 2000,
  syncMs: cfg.syncMs,
})({
  name: 'fleet',
  sketch: { levels: 4, cellsPerLevel: 1024, decay: linear(cfg.ratePerSecond), lo: 0, hi: 1e9 },
  generations: 2,
  periodMs: 3_600_000,
})
await store.ready()
process.send!({ type: 'ready' })
const { endAt } = await new Promise<{ endAt: number }>((resolve) => process.once('message', (m) => resolve(m as { endAt: number })))
const admitted = new Array<number>(cfg.keys).fill(0)
let requests = 0
let failures = 0
const startMs = Date.now()
let i = 0
async function lane(): Promise<void> {
  while (Date.now() < endAt) {
    const k = i++ % cfg.keys
    const r = await store.tryConsume(`key-${k}`, 1, cfg.burst)
    requests++
    if (r.failure !== undefined) failures++
    else if (r.admitted) admitted[k]++
    // sync mode answers synchronously: let the event loop run its syncs
    if (cfg.mode === 'sync' && requests % 64 === 0) await new Promise((r) => setImmediate(r))
  }
}
await Promise.all(Array.from({ length: cfg.concurrency }, lane))
const endMs = Date.now()
await store.close()
process.send!({ type: 'done', admitted, requests, failures, startMs, endMs })
process.disconnect()
