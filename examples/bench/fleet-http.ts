// `npm run bench:fleet`: a fleet of 4 Fastify server processes (examples/bench/fleet-server.ts)
// behind one load generator (4 autocannon instances in this process, one per server), sharing
// one limit per key through Redis: grudge exact mode, grudge sync mode, and @fastify/rate-limit's
// Redis store (the baseline), each on a single Redis and on a 3-master Redis Cluster.
// A last row runs the same 4 servers on grudge's in-process store (no Redis; each server limits
// on its own): issue #15's baseline for sync mode, printed as sync ÷ in-process req/s per round.
//
// Per row: admitted requests against the exact limit (grudge: B + R·T per key, T the load
// window; sync mode's bound of spec/cluster.md; @fastify/rate-limit: max per fixed window times
// the windows the load touched), req/s, p99 latency, and Redis CPU time per decision (the
// servers' used_cpu_user + used_cpu_sys from INFO cpu, summed over the masters, divided by the
// requests answered) with EVALSHA's usec_per_call from INFO commandstats. Redis is private (a
// redis-server and a cluster this bench starts on free ports, killed by their PIDs at the end),
// so no other client's work is counted. Rows alternate, ≥ 5 rounds; medians with spread.
//
// `--quick`: 5 rounds of 2 s per row (about 3 minutes); default 7 rounds of 8 s.
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { Redis } from 'ioredis'
import { commandstats, perDecision, privateRedisServer } from './redis-time.js'
import { testCluster } from '../../test/cluster/redis-helper.js'

const require = createRequire(import.meta.url)
interface AutocannonResult {
  requests: { total: number }
  latency: { p99: number }
  '2xx': number
  non2xx: number
  errors: number
  timeouts: number
  duration: number
}
interface AutocannonClient {
  setHeaders(h: Record<string, string>): void
  on(e: string, f: () => void): void
}
const autocannon = require('autocannon') as (opts: {
  url: string
  connections: number
  duration: number
  setupClient: (c: AutocannonClient) => void
}) => Promise<AutocannonResult>

const quick = process.argv.includes('--quick')
const roundsArg = process.argv.find((a) => a.startsWith('--rounds='))
// --rounds=N overrides (a smoke run); the figures need ≥ 5
const ROUNDS = roundsArg !== undefined ? Number(roundsArg.slice(9)) : quick ? 5 : 7
const DURATION_S = quick ? 2 : 8
const SERVERS = 4
const CONNECTIONS = 8 // per server
const KEYS = 20
const RATE = 20 // per second per key
const BURST = 10
const FRL_WINDOW_MS = 1000
const FRL_MAX = (RATE * FRL_WINDOW_MS) / 1000
const SYNC_MS = 100
const SEED = '5eed5eed5eed5eed5eed5eed5eed5eed'
const SERVER = fileURLToPath(new URL('./fleet-server.ts', import.meta.url))

type Kind = 'exact' | 'sync' | 'frl' | 'local'
interface Row {
  kind: Kind
  where: 'redis' | 'cluster'
}

/** Fork the 4 servers of a row; resolves with their ports once each listens. */
async function startServers(kind: Kind, redis: string | string[], prefix: string) {
  const cfg = {
    kind,
    redis,
    prefix,
    seed: SEED,
    ratePerSecond: RATE,
    burst: BURST,
    frlMax: FRL_MAX,
    frlWindowMs: FRL_WINDOW_MS,
  }
  const children: ChildProcess[] = []
  const ports = await Promise.all(
    Array.from({ length: SERVERS }, () => {
      const c = fork(SERVER, [JSON.stringify(cfg)], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
      children.push(c)
      return new Promise<number>((resolve, reject) => {
        c.once('message', (m: { port: number }) => resolve(m.port))
        c.once('exit', (code) => reject(new Error(`fleet server exited with ${code}`)))
      })
    }),
  )
  const stop = async () => {
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue
      const exited = new Promise((r) => c.once('exit', r))
      c.kill('SIGKILL')
      await exited
    }
  }
  return { ports, stop }
}

/** Load all servers at once for DURATION_S; keys cycle per connection. */
async function load(ports: number[]) {
  let i = 0
  const t0 = Date.now()
  const results = await Promise.all(
    ports.map((port) =>
      autocannon({
        url: `http://127.0.0.1:${port}/`,
        connections: CONNECTIONS,
        duration: DURATION_S,
        setupClient: (c) => {
          c.setHeaders({ 'x-key': `k${i++ % KEYS}` })
          c.on('response', () => c.setHeaders({ 'x-key': `k${i++ % KEYS}` }))
        },
      }),
    ),
  )
  const windowMs = Date.now() - t0
  return {
    windowMs,
    requests: results.reduce((a, r) => a + r.requests.total, 0),
    admitted: results.reduce((a, r) => a + r['2xx'], 0),
    errors: results.reduce((a, r) => a + r.errors + r.timeouts, 0),
    p99: Math.max(...results.map((r) => r.latency.p99)),
  }
}

/** The exact limit of a row over a window of `windowMs`, summed over the keys (sync: its bound). */
function limitOf(kind: Kind, windowMs: number): number {
  if (kind === 'frl') return KEYS * FRL_MAX * (Math.ceil(windowMs / FRL_WINDOW_MS) + 1)
  const single = BURST + (RATE * windowMs) / 1000
  if (kind === 'exact') return KEYS * single
  if (kind === 'local') return SERVERS * KEYS * single // each server limits on its own
  return KEYS * (single + (SERVERS - 1) * (BURST + (RATE * (SYNC_MS + 50)) / 1000))
}

async function main() {
  const own = await privateRedisServer()
  if (own === undefined) throw new Error('bench:fleet starts its own redis-server: none on PATH')
  const cluster = await testCluster({ own: true })
  if (cluster === undefined) throw new Error('bench:fleet starts its own Redis Cluster: redis-server/redis-cli missing')
  const single = new Redis(own.url)
  const masters = cluster.urls.map((u) => new Redis(u))
  const rows: Row[] = []
  for (const where of ['redis', 'cluster'] as const)
    for (const kind of ['exact', 'sync', 'frl'] as const) rows.push({ kind, where })
  rows.push({ kind: 'local', where: 'redis' }) // no Redis: the in-process baseline of sync mode
  const runs = rows.map(() => [] as Array<ReturnType<typeof summarize>>)
  function summarize(r: Awaited<ReturnType<typeof load>>, kind: Kind, cpuUs: number, evalUs: number) {
    return {
      rps: r.requests / (r.windowMs / 1000),
      p99: r.p99,
      admitted: r.admitted,
      limit: limitOf(kind, r.windowMs),
      cpuPerDecision: cpuUs / Math.max(1, r.requests),
      evalUs,
      errors: r.errors,
    }
  }
  console.log(
    `fleet: ${SERVERS} Fastify servers × ${CONNECTIONS} connections, ${KEYS} keys, limit ${RATE}/s per key + burst ${BURST} ` +
      `(@fastify/rate-limit: ${FRL_MAX} per ${FRL_WINDOW_MS} ms), ${DURATION_S} s per row, ${ROUNDS} alternating rounds, private Redis and 3-master cluster`,
  )
  for (let round = 0; round < ROUNDS; round++) {
    for (const [j, row] of rows.entries()) {
      const clients = row.where === 'redis' ? [single] : masters
      const prefix = `grudge-bench-fleet:${process.pid}:${round}:${j}`
      const servers = await startServers(row.kind, row.where === 'redis' ? own.url : cluster.urls, prefix)
      const before = await Promise.all(clients.map((c) => commandstats(c)))
      const r = await load(servers.ports)
      const after = await Promise.all(clients.map((c) => commandstats(c)))
      await servers.stop()
      let cpu = 0
      let evalUsec = 0
      let evalCalls = 0
      for (let n = 0; n < clients.length; n++) {
        const p = perDecision(before[n], after[n])
        cpu += p.cpuUsecPerCall * Math.max(1, p.calls)
        evalUsec += p.usecPerCall * p.calls
        evalCalls += p.calls
      }
      runs[j].push(summarize(r, row.kind, cpu, evalUsec / Math.max(1, evalCalls)))
      for (const c of clients) {
        let cursor = '0'
        do {
          const [next, keys] = await c.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
          cursor = next
          for (const k of keys) await c.unlink(k)
        } while (cursor !== '0')
      }
    }
    process.stdout.write(`round ${round + 1}/${ROUNDS} done\n`)
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const spread = (xs: number[], d = 0) => `${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)}`
  const frlRps = (where: string) =>
    median(runs[rows.findIndex((r) => r.kind === 'frl' && r.where === where)].map((x) => x.rps))
  console.table(
    rows.map((row, j) => {
      const x = runs[j]
      return {
        limiter:
          row.kind === 'frl'
            ? '@fastify/rate-limit (Redis store)'
            : row.kind === 'local'
              ? 'grudge in-process'
              : `grudge ${row.kind}`,
        redis: row.kind === 'local' ? 'none' : row.where === 'redis' ? 'single' : 'cluster (3 masters)',
        'req/s': Math.round(median(x.map((v) => v.rps))),
        'req/s spread': spread(x.map((v) => v.rps)),
        'vs @fastify/rate-limit': (median(x.map((v) => v.rps)) / frlRps(row.where)).toFixed(2) + '×',
        'p99 ms': median(x.map((v) => v.p99)),
        'p99 spread': spread(x.map((v) => v.p99)),
        'admitted / limit': `${median(x.map((v) => v.admitted))} / ${Math.round(median(x.map((v) => v.limit)))}`,
        'admitted ÷ limit spread': spread(
          x.map((v) => v.admitted / v.limit),
          3,
        ),
        'Redis CPU µs/decision': median(x.map((v) => v.cpuPerDecision)).toFixed(1),
        'evalsha µs/call': median(x.map((v) => v.evalUs)).toFixed(1),
        errors: x.reduce((a, v) => a + v.errors, 0),
      }
    }),
  )
  // issue #15: sync mode within 5% of in-process grudge, per round (rows alternate, so each
  // pair of runs saw the same machine)
  const local = runs[rows.findIndex((r) => r.kind === 'local')]
  for (const where of ['redis', 'cluster'] as const) {
    const sync = runs[rows.findIndex((r) => r.kind === 'sync' && r.where === where)]
    const ratios = sync.map((x, i) => x.rps / local[i].rps)
    console.log(
      `grudge sync (${where === 'redis' ? 'single Redis' : 'cluster'}) ÷ grudge in-process, req/s per round: median ${median(ratios).toFixed(2)}, spread ${spread(ratios, 2)}`,
    )
  }
  console.log(
    'limit: grudge exact B + R·T per key; grudge sync its bound B + R·T + (n − 1)(B + R·(syncMs + 50 ms)); @fastify/rate-limit max × windows touched; grudge in-process: each of the servers B + R·T per key',
  )
  single.disconnect()
  for (const m of masters) m.disconnect()
  own.child.kill('SIGKILL')
  await cluster.stop()
}

await main()
