// r1 (s30), F4: what the calls after a folding twin's switch cost Redis in exact mode. Each
// slot string of each folding twin is made by the calls that reach it, one step of at most
// FOLD_CHUNK_BYTES per call (spec/cluster.md "Early growth", _The incremental fold_); before
// F4 the first batch after the switch made every slot string it touched in that one call
// (7.5 MiB, 46–81 ms of Redis time at S = 16). Self-sized, 4 levels, largest 65,536 cells per
// level (the default budget's), S slots, both live generations at 128 with folding twins
// of 65,536 (records written here, as an instance would). After the switch it sends turns of
// `requests` fresh keys (one EVALSHA each on one node) until every twin slot string is whole,
// and prints per call the largest Redis time (INFO commandstats, usec delta of EVALSHA; a turn
// whose delta counts more than one EVALSHA ran beside another client's and is left out of the
// maximum) and the largest bytes folded (STRLEN of the twin strings before and after), with
// the failures. Loaded machine: indicative only.
// Run: npx tsx examples/bench/fold-batch-cost.ts [slots] [requests]
import { FakeClock } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { Redis } from 'ioredis'
import { FOLD_CHUNK_BYTES } from '../../src/cluster/scripts.js'

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
const twinKeys: string[] = []
for (let s = 0; s < S; s++) {
  const p = s === 0 ? `${prefix}:{fc}:` : `${prefix}:{fc#${s}}:`
  for (const id of [2000, 2001]) twinKeys.push(`${p}g${id}+`)
}
const full = 4 * (65536 / S) * 16
const folded = async () => (await Promise.all(twinKeys.map((k) => admin.strlen(k)))).reduce((a, n) => a + n, 0)
const evalsha = async () => {
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await admin.info('commandstats'))
  return m === null ? { calls: 0, usec: 0 } : { calls: Number(m[1]), usec: Number(m[2]) }
}
let turns = 0
let failures = 0
let mostUsec = 0
const foldUsec: number[] = []
let mostBytes = 0
let shared = 0
let wallMs = 0
let bytes = await folded()
for (; turns < 10_000 && bytes < twinKeys.length * full; turns++) {
  const before = await evalsha()
  const t0 = performance.now()
  const rs = await Promise.all(Array.from({ length: REQ }, (_, i) => store.tryConsume(`k-${turns}-${i}`, 1, 10)))
  wallMs = Math.max(wallMs, performance.now() - t0)
  const after = await evalsha()
  const now = await folded()
  failures += rs.filter((r) => r.failure !== undefined).length
  if (after.calls - before.calls === 1) {
    mostUsec = Math.max(mostUsec, after.usec - before.usec)
    foldUsec.push(after.usec - before.usec)
  } else shared++
  mostBytes = Math.max(mostBytes, now - bytes)
  bytes = now
}
console.log(
  `S=${S}, turns of ${REQ} requests after the switch: ${turns} turns to fold ${twinKeys.length} twin strings of ${full} bytes; ` +
    `per call at most ${mostUsec} µs of Redis time (median ${foldUsec.sort((a, b) => a - b)[foldUsec.length >> 1]}) and ${mostBytes} bytes folded (FOLD_CHUNK_BYTES ${FOLD_CHUNK_BYTES}); ` +
    `the slowest turn ${wallMs.toFixed(1)} ms of wall time; failures ${failures}; turns beside other clients' EVALSHA ${shared}`,
)
// the same turns once every twin string is whole (no fold step): the baseline of this run
const plain: number[] = []
for (let i = 0; i < 40; i++) {
  const before = await evalsha()
  await Promise.all(Array.from({ length: REQ }, (_, j) => store.tryConsume(`p-${i}-${j}`, 1, 10)))
  const after = await evalsha()
  if (after.calls - before.calls === 1) plain.push(after.usec - before.usec)
}
plain.sort((a, b) => a - b)
console.log(
  `after the fold, ${plain.length} turns of ${REQ} requests: Redis time per call median ${plain[plain.length >> 1]} µs, largest ${plain[plain.length - 1]} µs`,
)
console.log(
  `twin slot strings whole: ${(await Promise.all(twinKeys.map((k) => admin.strlen(k)))).filter((n) => n === full).length} of ${twinKeys.length}`,
)
await store.close()
for (let s = 0; s < S; s++) {
  const p = s === 0 ? `${prefix}:{fc}:` : `${prefix}:{fc#${s}}:`
  const keys = await admin.keys(`${p}*`)
  if (keys.length > 0) await admin.del(...keys)
}
await admin.quit()
