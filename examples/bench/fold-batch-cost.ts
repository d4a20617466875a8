// r1 (s30): what the first exact-mode batch after a folding twin's switch costs Redis when it
// touches every slot: each slot string of each folding twin it reaches is made there (GET of the
// base, string.rep, SET). Self-sized, 4 levels, largest 65,536 cells per level (the default
// 8 MiB budget's), S slots, both live generations at 128 with folding twins of 65,536 (records
// written here, as an instance would). Prints the batch's wall time and its failures, and the
// Redis commandstats time of the sized script over the batch. Loaded machine: indicative only.
// Run: npx tsx examples/bench/fold-batch-cost.ts [slots] [requests]
import { FakeClock } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { Redis } from 'ioredis'

const S = Number(process.argv[2] ?? 16)
const REQ = Number(process.argv[3] ?? 32)
const P = 100_000
const T0 = 2000 * P + 1000
const admin = new Redis('redis://127.0.0.1:6379')
const prefix = `s30r1:foldcost:${process.pid}`
const clock = new FakeClock(T0)
const spec: StoreSpec = {
  name: 'fc',
  sketch: { levels: 4, cellsPerLevel: 128, decay: linear(1), lo: 0, hi: 100, aggregator: 'min' },
  generations: 2,
  periodMs: P,
  sizing: {
    sizeNextGeneration: () => 128,
    minCellsPerLevel: 128,
    maxCellsPerLevel: 65536,
    growEarlyWhen: () => false,
    checkEveryMs: 1000,
  },
}
const store = redisStore({
  redis: admin,
  seed: '5555555555555555eeeeeeeeeeeeeeee',
  prefix,
  mode: 'exact',
  slots: S,
  clock,
  timeoutMs: 50,
  onStoreError: 'closed',
})(spec) as RedisExactStore
await store.ready()
// every slot's base strings written (a key per slot and generation)
for (let i = 0; i < 400; i++) await store.tryConsume(`warm-${i}`, 1, 10)
const fp = store.shape.fingerprint
const SWITCH = T0 + 3000
for (const id of [2000, 2001]) await admin.set(`${prefix}:{fc}:s${id}+`, `${fp}:${SWITCH}:65536:fold`)
clock.advance(2100) // past 2 x checkEveryMs: the next call reads the records
await store.tryConsume('warm-x', 1, 10)
await store.settled()
clock.set(SWITCH + 10)
await admin.config('RESETSTAT')
const t0 = performance.now()
const rs = await Promise.all(Array.from({ length: REQ }, (_, i) => store.tryConsume(`k-${i}`, 1, 10)))
const ms = performance.now() - t0
const info = await admin.info('commandstats')
const line = info
  .split('\n')
  .filter((l) => /cmdstat_(evalsha|eval):/.test(l))
  .join(' ')
console.log(
  `S=${S}, ${REQ} requests in one turn after the switch: ${ms.toFixed(1)} ms, failures ${rs.filter((r) => r.failure !== undefined).length}; ${line}`,
)
let folded = 0
for (let s = 0; s < S; s++) {
  const p = s === 0 ? `${prefix}:{fc}:` : `${prefix}:{fc#${s}}:`
  for (const id of [2000, 2001]) if ((await admin.strlen(`${p}g${id}+`)) > 0) folded++
}
console.log(`twin slot strings made: ${folded} of ${2 * S}`)
await store.close()
for (let s = 0; s < S; s++) {
  const p = s === 0 ? `${prefix}:{fc}:` : `${prefix}:{fc#${s}}:`
  const keys = await admin.keys(`${p}*`)
  if (keys.length > 0) await admin.del(...keys)
}
await admin.quit()
