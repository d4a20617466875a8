// `node --import tsx examples/bench/sync-store-cost.ts [--quick] [--keys=N]`: what a Redis
// sync store adds per request over grudge's in-process store (issue #15: "sync mode stays
// within 5% of in-process grudge"), in ONE process, alternating rounds, with the sync loop
// live on a private redis-server (started on a free port, killed by its PID at the end).
// The policy and the key stream are those of `npm run bench:fleet`'s servers
// (examples/bench/fleet-server.ts: L = 4, M = 4096, N = 2, linear decay at 20/s, burst 10,
// hi 100; keys k0…k19 in turn, examples/bench/fleet-http.ts), called as the servers call it
// (`store.tryConsume(key, 1, burst)`).
//
// Three phases, each ≥ 5 alternating rounds (local, sync, then sync, local, …), medians with
// the spread of the rounds:
// 1. decide: the store's decision alone, in batches of 256 per event-loop turn (so the sync
//    timer and its socket run between batches): ns per decision, the median batch's.
// 2. paced: decisions at the fleet bench's rate per server (RATE_PER_S) for
//    PACED_MS (in ticks of TICK_MS), this process's CPU time (process.cpuUsage, user + sys,
//    every thread) and the private Redis server's (INFO cpu) per request: what the sync loop
//    (push, pull, merge of the fleet's cells every syncMs) costs per request at that rate,
//    beside the decisions. Each round builds its store and closes it after (a sync store's
//    loop never runs in a local round).
// 3. cycles: PER_SYNC decisions (the fleet rate's requests per syncMs) then one sync, CYCLES
//    times: µs of CPU per cycle in this process and in Redis, and the difference per request.
// On a shared machine timings are provisional: ratios within one run are what count; the
// load average is printed.
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import { redisStore } from '../../src/cluster/redis-store.js'
import { localStore, type ScoreStore, type StoreSpec } from '../../src/limit/store.js'
import { linear } from '../../src/sketch/decay.js'
import { privateRedisServer } from './redis-time.js'

const quick = process.argv.includes('--quick')
const keysArg = process.argv.find((a) => a.startsWith('--keys='))
const KEYS = keysArg !== undefined ? Number(keysArg.slice(7)) : 20
const ROUNDS = quick ? 5 : 7
const DECIDE_CALLS = quick ? 200_000 : 500_000
const BATCH = 256
const PACED_MS = quick ? 1500 : 3000
/** The paced phase's tick: RATE_PER_S × TICK_MS / 1000 requests per event-loop turn. */
const TICK_MS = 10
/** Requests per second per server in the quiet bench:fleet of BENCHMARKS.md (30,616 req/s over 4 sync servers). */
const RATE_PER_S = 7600
const BURST = 10
/** Phase 3: requests per sync at RATE_PER_S and syncMs 100. */
const PER_SYNC = RATE_PER_S / 10
const CYCLES = quick ? 100 : 200
const SEED = '5eed5eed5eed5eed5eed5eed5eed5eed'

const spec: StoreSpec = {
  name: 'fleet-bench',
  sketch: { levels: 4, cellsPerLevel: 4096, decay: linear(20), lo: 0, hi: 10 * BURST },
  generations: 2,
  periodMs: 3_600_000,
}
const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`)

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const spread = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`
const turn = () => new Promise<void>((r) => setImmediate(r))
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

let sink = 0
let next = 0

/**
 * Phase 1: ns per decision, timed around batches of BATCH calls, one batch per event-loop
 * turn; the round's figure is the median batch (a batch the scheduler preempted, on a shared
 * machine, is an outlier that a sum would keep).
 */
async function decide(store: ScoreStore): Promise<number> {
  const batches: number[] = []
  for (let done = 0; done < DECIDE_CALLS; done += BATCH) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < BATCH; i++) {
      const r = store.tryConsume(keys[next++ % KEYS], 1, BURST) as { admitted: boolean }
      if (r.admitted) sink++
    }
    batches.push(Number(process.hrtime.bigint() - t0) / BATCH)
    await turn()
  }
  return median(batches)
}

async function redisCpuUs(r: Redis): Promise<number> {
  const cpu = await r.info('cpu')
  const user = Number(/used_cpu_user:([\d.]+)/.exec(cpu)?.[1] ?? NaN)
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(cpu)?.[1] ?? NaN)
  return (user + sys) * 1e6
}

/** Phase 2: RATE_PER_S decisions per second for PACED_MS; µs of CPU per request here and in Redis. */
async function paced(store: ScoreStore, admin: Redis): Promise<{ node: number; redis: number; n: number }> {
  const redis0 = await redisCpuUs(admin)
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let n = 0
  for (;;) {
    const elapsed = performance.now() - t0
    if (elapsed >= PACED_MS) break
    const due = Math.floor((elapsed * RATE_PER_S) / 1000)
    for (; n < due; n++) {
      const r = store.tryConsume(keys[next++ % KEYS], 1, BURST) as { admitted: boolean }
      if (r.admitted) sink++
    }
    await sleep(TICK_MS)
  }
  const cpu = process.cpuUsage(cpu0)
  const redis1 = await redisCpuUs(admin)
  return { node: (cpu.user + cpu.system) / n, redis: (redis1 - redis0) / n, n }
}

/**
 * Phase 3: CYCLES cycles of PER_SYNC decisions then one sync (the sync store's own `sync()`,
 * its ticker idle; the local store: one event-loop turn): µs of CPU per cycle here and in
 * Redis. The sync loop's cost without the paced phase's timer noise.
 */
async function cycles(store: ScoreStore, admin: Redis): Promise<{ node: number; redis: number }> {
  const sync = (store as { sync?: () => Promise<void> }).sync?.bind(store)
  const redis0 = await redisCpuUs(admin)
  const cpu0 = process.cpuUsage()
  for (let c = 0; c < CYCLES; c++) {
    for (let i = 0; i < PER_SYNC; i++) {
      const r = store.tryConsume(keys[next++ % KEYS], 1, BURST) as { admitted: boolean }
      if (r.admitted) sink++
    }
    if (sync !== undefined) await sync()
    else await turn()
  }
  const cpu = process.cpuUsage(cpu0)
  const redis1 = await redisCpuUs(admin)
  return { node: (cpu.user + cpu.system) / CYCLES, redis: (redis1 - redis0) / CYCLES }
}

const server = await privateRedisServer()
if (server === undefined) throw new Error('redis-server not found on PATH')
const admin = new Redis(server.url)
try {
  const build = async (kind: 'local' | 'sync', syncMs = 100): Promise<ScoreStore> => {
    if (kind === 'local') return localStore()(spec)
    const factory = redisStore({
      redis: server.url,
      seed: SEED,
      prefix: 'cost',
      mode: 'sync',
      timeoutMs: 500,
      syncMs,
      onStoreError: 'closed',
    })
    const store = factory(spec)
    await factory.ready()
    return store
  }
  const d: Record<'local' | 'sync', number[]> = { local: [], sync: [] }
  const p: Record<'local' | 'sync', { node: number; redis: number }[]> = { local: [], sync: [] }
  let syncs = 0
  const load0 = loadavg()
  const round = async <T>(kind: 'local' | 'sync', run: (s: ScoreStore) => Promise<T>, syncMs?: number): Promise<T> => {
    const s = await build(kind, syncMs)
    // warm-up (JIT, and the sync store's first pulls)
    for (let i = 0; i < 20_000; i++) void s.tryConsume(keys[i % KEYS], 1, BURST)
    await sleep(150)
    const v = await run(s)
    if (kind === 'sync') syncs += (s as unknown as { syncs: number }).syncs
    await s.close()
    return v
  }
  for (let r = 0; r < ROUNDS; r++) {
    const order: ('local' | 'sync')[] = r % 2 === 0 ? ['local', 'sync'] : ['sync', 'local']
    for (const k of order) d[k].push(await round(k, decide))
  }
  for (let r = 0; r < ROUNDS; r++) {
    const order: ('local' | 'sync')[] = r % 2 === 0 ? ['local', 'sync'] : ['sync', 'local']
    for (const k of order) p[k].push(await round(k, (s) => paced(s, admin)))
  }
  const cy: Record<'local' | 'sync', { node: number; redis: number }[]> = { local: [], sync: [] }
  for (let r = 0; r < ROUNDS; r++) {
    const order: ('local' | 'sync')[] = r % 2 === 0 ? ['local', 'sync'] : ['sync', 'local']
    // the ticker never fires (syncMs of an hour): each cycle's sync is called by the loop
    for (const k of order) cy[k].push(await round(k, (s) => cycles(s, admin), 3_600_000))
  }
  const load1 = loadavg()
  const cycleDiff = cy.sync.map((v, i) => (v.node - cy.local[i].node) / PER_SYNC)
  const ratio = d.sync.map((v, i) => v / d.local[i])
  const nodeDiff = p.sync.map((v, i) => v.node - p.local[i].node)
  const redisPer = p.sync.map((v) => v.redis)
  console.log(
    `sync-store-cost: ${KEYS} keys in turn, L = 4, M = 4096, N = 2, syncMs 100, ${ROUNDS} alternating rounds; ` +
      `decide: ${DECIDE_CALLS} calls per round in batches of ${BATCH}; paced: ${RATE_PER_S}/s for ${PACED_MS} ms per round; ` +
      `cycles: ${CYCLES} × (${PER_SYNC} decisions + 1 sync) per round`,
  )
  console.table({
    'decide ns/decision': {
      local: median(d.local).toFixed(0),
      'local spread': spread(d.local, 0),
      sync: median(d.sync).toFixed(0),
      'sync spread': spread(d.sync, 0),
      'sync ÷ local': median(ratio).toFixed(2),
      'ratio spread': spread(ratio, 2),
    },
    'paced node CPU µs/request': {
      local: median(p.local.map((v) => v.node)).toFixed(2),
      'local spread': spread(
        p.local.map((v) => v.node),
        2,
      ),
      sync: median(p.sync.map((v) => v.node)).toFixed(2),
      'sync spread': spread(
        p.sync.map((v) => v.node),
        2,
      ),
      'sync − local': median(nodeDiff).toFixed(2),
      'diff spread': spread(nodeDiff, 2),
    },
    [`cycle node CPU µs/(${PER_SYNC} requests + 1 sync)`]: {
      local: median(cy.local.map((v) => v.node)).toFixed(0),
      'local spread': spread(
        cy.local.map((v) => v.node),
        0,
      ),
      sync: median(cy.sync.map((v) => v.node)).toFixed(0),
      'sync spread': spread(
        cy.sync.map((v) => v.node),
        0,
      ),
      'sync − local': `${median(cycleDiff).toFixed(2)} /request`,
      'diff spread': spread(cycleDiff, 2),
    },
    [`cycle redis CPU µs/(${PER_SYNC} requests + 1 sync)`]: {
      local: median(cy.local.map((v) => v.redis)).toFixed(0),
      'local spread': spread(
        cy.local.map((v) => v.redis),
        0,
      ),
      sync: median(cy.sync.map((v) => v.redis)).toFixed(0),
      'sync spread': spread(
        cy.sync.map((v) => v.redis),
        0,
      ),
      'sync − local': `${(median(cy.sync.map((v) => v.redis)) / PER_SYNC).toFixed(2)} /request`,
    },
    'paced redis CPU µs/request': {
      local: median(p.local.map((v) => v.redis)).toFixed(2),
      'local spread': spread(
        p.local.map((v) => v.redis),
        2,
      ),
      sync: median(redisPer).toFixed(2),
      'sync spread': spread(redisPer, 2),
    },
  })
  console.log(
    `syncs: ${syncs}; load average ${load0.map((x) => x.toFixed(2)).join(' ')} before, ${load1.map((x) => x.toFixed(2)).join(' ')} after (${sink > 0 ? 'ok' : '-'})`,
  )
} finally {
  admin.disconnect()
  server.child.kill('SIGKILL')
}
