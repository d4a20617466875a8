// `node --import tsx --expose-gc examples/bench/sync-store-memory.ts [--quick]`: the bytes a Redis
// sync store really holds per cell in this process, beside an in-process Rotator's, measured
// with process.memoryUsage() after GC (heapUsed + arrayBuffers, the typed arrays' backing
// stores). The budget counts SYNC_BYTES_PER_CELL (45) for a sync store and 16 for a Sketch
// (spec/sizing.md §5); this prints what they hold. Rounds alternate sync / local and the
// script prints each one's median and spread over the rounds. It needs Redis on
// GRUDGE_REDIS_URL (default 127.0.0.1:6379) only to build the client: nothing is written.
import { redisStore } from '../../src/cluster/redis-store.js'
import { SYNC_BYTES_PER_CELL } from '../../src/cluster/sync-store.js'
import { localStore, type StoreFactory, type StoreSpec } from '../../src/limit/store.js'
import { linear } from '../../src/sketch/decay.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const quick = process.argv.includes('--quick')
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc (see the header of this script)')

const LEVELS = 4
const CELLS = quick ? 16_384 : 131_072
const GENERATIONS = 2
const ROUNDS = quick ? 5 : 9
const cells = LEVELS * CELLS * GENERATIONS

function held(): number {
  gc!()
  gc!()
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

function spec(): StoreSpec {
  const clock = new FakeClock(0)
  return {
    name: 'memory',
    sketch: { levels: LEVELS, cellsPerLevel: CELLS, decay: linear(1), lo: 0, hi: 100, aggregator: 'min', clock },
    generations: GENERATIONS,
    periodMs: 120_000,
    clock,
    ticker: new FakeTicker(),
  }
}

async function bytesPerCell(factory: StoreFactory): Promise<number> {
  const before = held()
  const store = factory(spec())
  const after = held()
  const perCell = (after - before) / cells
  await store.close()
  return perCell
}

const sync = redisStore({
  redis: process.env.GRUDGE_REDIS_URL ?? 'redis://127.0.0.1:6379',
  seed: '0123456789abcdef0123456789abcdef',
  prefix: `grudge-memory-script:${process.pid}`,
  mode: 'sync',
  ticker: new FakeTicker(),
})
const local = localStore()
const runs = { sync: [] as number[], local: [] as number[] }
for (let r = 0; r < ROUNDS; r++) {
  runs.sync.push(await bytesPerCell(sync))
  runs.local.push(await bytesPerCell(local))
}

function summary(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b)
  const median = s[Math.floor(s.length / 2)]
  return `median ${median.toFixed(2)} B/cell, spread ${s[0].toFixed(2)}–${s[s.length - 1].toFixed(2)}`
}

console.log(`${LEVELS} levels × ${CELLS} cells × ${GENERATIONS} generations = ${cells} cells, ${ROUNDS} rounds each`)
console.log(`  redis sync store   ${summary(runs.sync)} (the budget counts ${SYNC_BYTES_PER_CELL})`)
console.log(`  in-process Rotator ${summary(runs.local)} (the budget counts 16)`)
