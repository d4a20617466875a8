// The fleet test: 4 worker processes share a limit of R requests/s per key (a debt meter:
// linear decay at R/s, burst B, cost 1) through one Redis, under more load than R.
// Exact mode: the admitted total per key stays within 5% of B + R·T (T = the load window).
// Sync mode: within the bound of spec/cluster.md, B + R·T + (n − 1)·(B + R·(syncMs + rtt)).
import { fork } from 'node:child_process'
import { uncoveredChildEnv } from '../fixtures/child-env.js'
import { fileURLToPath } from 'node:url'
import t, { type Test } from 'tap'
import { REDIS_URL, client, clusterClient, clusterFor, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const WORKER = fileURLToPath(new URL('../fixtures/cluster-fleet-worker.ts', import.meta.url))
const N = 4
const RATE = 100 // per second per key
const BURST = 10
const KEYS = 3
const DURATION_MS = 3000
const SEED = 'a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5'

interface Report {
  admitted: number[]
  requests: number
  failures: number
  startMs: number
  endMs: number
}

/** One forked instance, reused by every run of this file: tsx starts once per instance, not per run. */
interface Instance {
  send(message: unknown): void
  /** The next message of the given type (rejects if the instance exits first). */
  next<T>(type: string): Promise<T>
}

let pool: Instance[] | undefined
/** The N instances, forked on first use and told to exit when the file's tests end. */
function instances(): Instance[] {
  if (pool !== undefined) return pool
  pool = Array.from({ length: N }, () => {
    const c = fork(WORKER, [], {
      execArgv: ['--import', 'tsx'],
      env: uncoveredChildEnv(), // keeps the child's tsx coverage out of tap's report
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const waiting = new Map<string, { resolve(m: unknown): void; reject(e: Error): void }>()
    c.on('message', (m: { type: string }) => {
      waiting.get(m.type)?.resolve(m)
      waiting.delete(m.type)
    })
    c.once('exit', (code) => {
      for (const w of waiting.values()) w.reject(new Error(`fleet worker exited with ${code}`))
      waiting.clear()
    })
    return {
      send: (m) => c.send(m as object),
      next: <T>(type: string) => new Promise<T>((resolve, reject) => waiting.set(type, { resolve: resolve, reject })),
    }
  })
  t.teardown(() => {
    for (const i of pool ?? []) i.send({ type: 'exit' })
  })
  return pool
}

async function runFleet(
  mode: 'exact' | 'sync',
  prefix: string,
  syncMs: number,
  url: string | string[] = REDIS_URL,
): Promise<{ reports: Report[]; windowMs: number }> {
  const cfg = {
    url,
    seed: SEED,
    mode,
    prefix,
    ratePerSecond: RATE,
    burst: BURST,
    keys: KEYS,
    syncMs,
    concurrency: 4,
  }
  const fleet = instances()
  const ready = fleet.map((i) => i.next('ready'))
  const done = fleet.map((i) => i.next<Report>('done'))
  for (const i of fleet) i.send({ type: 'run', cfg })
  await Promise.all(ready)
  const endAt = Date.now() + DURATION_MS
  for (const i of fleet) i.send({ type: 'start', endAt })
  const reports = await Promise.all(done)
  const windowMs = Math.max(...reports.map((r) => r.endMs)) - Math.min(...reports.map((r) => r.startMs))
  return { reports, windowMs }
}

/** Exact mode's check: every key's admitted total within 5% of B + R·T, no failure, every worker admitted. */
function checkExact(t: Test, reports: Report[], windowMs: number): void {
  const expected = BURST + (RATE * windowMs) / 1000
  const requests = reports.reduce((a, r) => a + r.requests, 0)
  t.equal(
    reports.reduce((a, r) => a + r.failures, 0),
    0,
    'no request fell back to a failure mode',
  )
  t.ok(requests > 3 * expected, `offered load ${requests} requests ≫ the limit ${expected.toFixed(0)} × ${KEYS} keys`)
  for (let k = 0; k < KEYS; k++) {
    const total = reports.reduce((a, r) => a + r.admitted[k], 0)
    const perWorker = reports.map((r) => r.admitted[k])
    t.ok(
      Math.abs(total - expected) <= 0.05 * expected,
      `key ${k}: admitted ${total} (per worker ${perWorker.join(', ')}) within 5% of B + R·T = ${expected.toFixed(1)}`,
    )
    t.ok(
      perWorker.every((a) => a > 0),
      `key ${k}: every worker got admissions`,
    )
  }
}

/** Sync mode's check: within spec/cluster.md's bound and not starved. */
function checkSync(t: Test, reports: Report[], windowMs: number, syncMs: number, rttMs: number): void {
  const single = BURST + (RATE * windowMs) / 1000
  const bound = single + (N - 1) * (BURST + (RATE * (syncMs + rttMs)) / 1000)
  for (let k = 0; k < KEYS; k++) {
    const total = reports.reduce((a, r) => a + r.admitted[k], 0)
    t.ok(total <= bound, `key ${k}: admitted ${total} ≤ B + R·T + (n−1)(B + R·(syncMs + rtt)) = ${bound.toFixed(1)}`)
    t.ok(
      total >= 0.9 * single,
      `key ${k}: admitted ${total} ≥ 90% of B + R·T = ${single.toFixed(1)} (the fleet is not starved)`,
    )
  }
}

t.test('fleet of 4 processes on a Redis Cluster', async (t) => {
  const cluster = await clusterFor(t)
  if (cluster === undefined) return
  const admin = clusterClient(t, cluster)
  const drop = async (prefix: string) => {
    // one key per UNLINK: a master holds many hash slots, and one command may not span two
    for (const m of admin.nodes('master')) {
      let cursor = '0'
      do {
        const [next, keys] = await m.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
        cursor = next
        for (const k of keys) await m.unlink(k)
      } while (cursor !== '0')
    }
  }
  t.test('exact mode (16 slots over 3 masters): within 5% of the limit', async (t) => {
    const prefix = uniquePrefix('h6-fleet-cluster-exact')
    const { reports, windowMs } = await runFleet('exact', prefix, 100, cluster.urls)
    checkExact(t, reports, windowMs)
    await drop(prefix)
  })
  t.test('sync mode (one slot, on the Cluster client): within the stated bound', async (t) => {
    const prefix = uniquePrefix('h6-fleet-cluster-sync')
    const { reports, windowMs } = await runFleet('sync', prefix, 50, cluster.urls)
    checkSync(t, reports, windowMs, 50, 50)
    await drop(prefix)
  })
})

t.test('fleet of 4 processes sharing R requests/s per key', async (t) => {
  const opts = await needRedis(t)
  t.test('exact mode: within 5% of the limit', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('fleet-exact')
    const { reports, windowMs } = await runFleet('exact', prefix, 100)
    checkExact(t, reports, windowMs)
    await dropPrefix(admin, prefix)
  })
  t.test('sync mode: within the stated bound', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('fleet-sync')
    const SYNC_MS = 50
    const RTT_MS = 50 // allowance for the sync round trip on a loaded 2-core machine
    const { reports, windowMs } = await runFleet('sync', prefix, SYNC_MS)
    checkSync(t, reports, windowMs, SYNC_MS, RTT_MS)
    await dropPrefix(admin, prefix)
  })
})
