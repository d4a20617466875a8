// `npm run bench:redis-time`: Redis time per exact-mode decision, from `INFO commandstats`
// (usec_per_call of evalsha, and the commands the script issues per call), for the exact
// script before the blocked layout (examples/bench/legacy-exact-script.ts, the level-major
// layout: 2 generations × L levels × GETRANGE/SETRANGE), the blocked layout's script in its
// looped form (per-call helpers, tables and loops), its unrolled form before issue #15 item 3
// (test/fixtures/previous-exact-build.ts: the record read on every call, whole blocks) and
// the store's current one, in alternating rounds on the same Redis in the same run, with
// @fastify/rate-limit's Redis script (INCR, PEXPIRE or PTTL) on the same client for scale.
// Figures are per decision: the store sends the decisions of one event-loop turn in one call
// (spec/cluster.md, "Batches"; calls/decision printed); the pre-#15 row gets one call each.
//
// It starts a private redis-server on a free port (so no other client's EVALSHA is counted);
// GRUDGE_BENCH_REDIS_URL=redis://… uses that Redis instead (its commandstats are reset!).
// `--quick`: 5 rounds of 2 000 decisions; default 7 rounds of 20 000.
import { Redis } from 'ioredis'
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { redisStore } from '../../src/index.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { linear } from '../../src/sketch/decay.js'
import { fleetShape } from '../../src/cluster/connection.js'
import { parseRedisOptions } from '../../src/cluster/options.js'
import { generationHasher } from '../../src/cluster/fleet-hash.js'
import { keyBytes, keyLength, keyView } from '../../src/hash/key-bytes.js'
import { kmIndexes } from '../../src/hash/indexes.js'
import { loopedExactScript, scriptSha } from '../../src/cluster/scripts.js'
import { legacyExactScript } from './legacy-exact-script.js'
import { previousBuildStore } from '../../test/fixtures/previous-exact-build.js'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const quick = process.argv.includes('--quick')
const ROUNDS = quick ? 5 : 7
const CALLS = quick ? 2000 : 20_000
const SEED = '5eed5eed5eed5eed5eed5eed5eed5eed'
const KEYS = 1000
const spec: StoreSpec = {
  name: 'bench',
  sketch: { levels: 4, cellsPerLevel: 4096, decay: linear(1e6), lo: 0, hi: 2e9 },
  generations: 2,
  periodMs: 3_600_000,
}

/** A free loopback port (bound then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })
}

/** A private redis-server (killed by its own PID at the end), or undefined when redis-server is missing. */
export async function privateRedisServer(): Promise<{ url: string; child: ChildProcess } | undefined> {
  const port = await freePort()
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  )
  const failed = await new Promise<boolean>((resolve) => {
    child.once('error', () => resolve(true))
    setTimeout(() => resolve(false), 300)
  })
  if (failed) return undefined
  return { url: `redis://127.0.0.1:${port}`, child }
}

/**
 * Per-command {calls, usec} from INFO commandstats, and the server's CPU time under the key
 * `cpu` (used_cpu_user + used_cpu_sys, in µs): commandstats' usec is wall time inside the
 * command, which a busy machine inflates whenever it preempts Redis mid-script; CPU time is not.
 */
export async function commandstats(r: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const text = await r.info('commandstats')
  const cpu = await r.info('cpu')
  const out = new Map<string, { calls: number; usec: number }>()
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) })
  }
  const user = Number(/used_cpu_user:([\d.]+)/.exec(cpu)?.[1] ?? NaN)
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(cpu)?.[1] ?? NaN)
  out.set('cpu', { calls: 0, usec: (user + sys) * 1e6 })
  return out
}

/** Redis work between two commandstats snapshots: µs per script call and commands per script call. */
export function perDecision(
  before: Map<string, { calls: number; usec: number }>,
  after: Map<string, { calls: number; usec: number }>,
  script: string[] = ['evalsha', 'eval', 'fcall'],
): { usecPerCall: number; cpuUsecPerCall: number; commandsPerCall: number; calls: number } {
  let calls = 0
  let usec = 0
  let inner = 0
  for (const [name, a] of after) {
    const b = before.get(name) ?? { calls: 0, usec: 0 }
    if (name === 'cpu') continue
    if (script.includes(name)) {
      calls += a.calls - b.calls
      usec += a.usec - b.usec
    } else if (
      !['info', 'config|resetstat', 'ping', 'script|load', 'scan', 'unlink', 'client|setname'].includes(name)
    ) {
      inner += a.calls - b.calls
    }
  }
  const cpu = (after.get('cpu')?.usec ?? NaN) - (before.get('cpu')?.usec ?? NaN)
  return {
    usecPerCall: usec / Math.max(1, calls),
    cpuUsecPerCall: cpu / Math.max(1, calls),
    commandsPerCall: inner / Math.max(1, calls),
    calls,
  }
}

async function main() {
  const own = process.env.GRUDGE_BENCH_REDIS_URL === undefined ? await privateRedisServer() : undefined
  const url = process.env.GRUDGE_BENCH_REDIS_URL ?? own?.url ?? 'redis://127.0.0.1:6379'
  const redis = new Redis(url, { enableOfflineQueue: true, maxRetriesPerRequest: 1 })
  const admin = new Redis(url, { enableOfflineQueue: true })
  const prefix = `grudge-bench-rt:${process.pid}`
  const store = redisStore({ redis, seed: SEED, prefix: `${prefix}:new`, timeoutMs: 2000 })(spec)
  await store.ready()

  // the legacy script, driven as the store before the blocked layout drove it (16 slots, level-major)
  const o = parseRedisOptions({ redis, seed: SEED, prefix: `${prefix}:old` })
  const shape = fleetShape(spec, o)
  const legacy = legacyExactScript(shape.scriptConstants)
  const legacySha = scriptSha(legacy)
  await redis.script('LOAD', legacy)
  const idx = new Uint32Array(shape.levels)
  const legacyDecide = (key: string) => {
    const N = shape.generations
    const gb = Math.floor(Date.now() / shape.periodMs) - 1
    keyBytes(key)
    const slot = 0
    const keys = [shape.fpKeys[slot]]
    let list = ''
    for (let j = 0; j < N + 1; j++) {
      keys.push(`${shape.keyPrefixes[slot]}g${gb + j}`)
      const h = generationHasher(shape.base, o.secret, gb + j)
      h.hashInto(keyView, keyLength)
      kmIndexes(h.hashHi, h.hashLo, shape.levels, shape.slotCells, idx)
      for (let i = 0; i < shape.levels; i++) list += (j === 0 && i === 0 ? '' : ',') + idx[i]
    }
    const args = ['', String(shape.periodMs), shape.ratePerMsArg, shape.loArg, shape.hiArg, 0, 1, 1e9, gb, N + 1, list]
    return redis.evalsha(legacySha, keys.length, ...keys, ...args)
  }
  // the blocked layout's script in its looped form (helpers, tables and loops per call), as the
  // store ran it before the unrolled form: the same store, its script swapped (same arguments)
  const looped = redisStore({ redis, seed: SEED, prefix: `${prefix}:looped`, timeoutMs: 2000 })(spec)
  const internals = looped as unknown as { script: string; sha: string }
  internals.script = loopedExactScript(fleetShape(spec, parseRedisOptions({ redis, seed: SEED })).scriptConstants)
  internals.sha = scriptSha(internals.script)
  await looped.ready()
  // the unrolled script before issue #15 item 3, driven as that build drove it (one call per
  // decision, no floors, block ids: test/fixtures/previous-exact-build.ts), on its own client
  const prevRedis = new Redis(url, { enableOfflineQueue: true, maxRetriesPerRequest: 1 })
  const previous = previousBuildStore({ redis: prevRedis, seed: SEED, prefix: `${prefix}:prev`, timeoutMs: 2000 }, spec)
  await previous.ready()
  // @fastify/rate-limit's Redis store script, read from its source, on the bench's client
  const frlSource = readFileSync(
    createRequire(import.meta.url).resolve('@fastify/rate-limit/store/RedisStore.js'),
    'utf8',
  )
  const frlScript = /const lua = `([\s\S]*?)`/.exec(frlSource)?.[1] ?? ''
  const frlSha = String(await redis.script('LOAD', frlScript))
  const rows: Array<[string, (key: string) => Promise<unknown>]> = [
    ['exact, level-major (before blocks)', legacyDecide],
    ['exact, blocked, looped script', async (key) => looped.tryConsume(key, 1, 1e9)],
    ['exact, unrolled, before #15 item 3', async (key) => previous.tryConsume(key, 1, 1e9)],
    ['exact, unrolled script (now)', async (key) => store.tryConsume(key, 1, 1e9)],
    [
      '@fastify/rate-limit script',
      async (key) => redis.evalsha(frlSha, 1, `${prefix}:frl:${key}`, 3_600_000, 1e9, 'false', 'false'),
    ],
  ]
  const results = rows.map(
    () => [] as Array<{ usecPerCall: number; cpuUsecPerCall: number; commandsPerCall: number; calls: number }>,
  )
  for (const [, decide] of rows) for (let i = 0; i < 200; i++) await decide(`k${i % KEYS}`) // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [j, [, decide]] of rows.entries()) {
      const before = await commandstats(admin)
      // 16 in flight, as a busy server would send them
      let next = 0
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < CALLS) await decide(`k${next++ % KEYS}`)
        }),
      )
      // per decision: the store sends a turn's decisions in one call (spec/cluster.md, "Batches")
      const p = perDecision(before, await commandstats(admin))
      results[j].push({
        usecPerCall: (p.usecPerCall * p.calls) / CALLS,
        cpuUsecPerCall: (p.cpuUsecPerCall * Math.max(1, p.calls)) / CALLS,
        commandsPerCall: (p.commandsPerCall * Math.max(1, p.calls)) / CALLS,
        calls: p.calls / CALLS,
      })
    }
  }
  console.log(
    `Redis time per exact-mode decision (INFO commandstats, ${url}${own ? ', private' : ''}), ` +
      `policy L = 4, M = 4096, N = 2, ${CALLS} decisions × ${ROUNDS} alternating rounds`,
  )
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  console.table(
    rows.map(([name], j) => {
      const us = results[j].map((r) => r.usecPerCall)
      return {
        script: name,
        'evalsha µs/decision (median)': median(us).toFixed(2),
        spread: `${Math.min(...us).toFixed(2)}–${Math.max(...us).toFixed(2)}`,
        'Redis CPU µs/decision (median)': median(results[j].map((r) => r.cpuUsecPerCall)).toFixed(2),
        'CPU spread': `${Math.min(...results[j].map((r) => r.cpuUsecPerCall)).toFixed(2)}–${Math.max(...results[j].map((r) => r.cpuUsecPerCall)).toFixed(2)}`,
        'commands/decision': median(results[j].map((r) => r.commandsPerCall)).toFixed(1),
        'calls/decision': median(results[j].map((r) => r.calls)).toFixed(2),
      }
    }),
  )
  const us = (j: number) => median(results[j].map((r) => r.usecPerCall))
  const cpu = (j: number) => median(results[j].map((r) => r.cpuUsecPerCall))
  console.log(`blocked layout, unrolled: ${(us(0) / us(3)).toFixed(2)}× less Redis time per decision than level-major`)
  console.log(
    `unrolled vs looped script: ${(us(1) / us(3)).toFixed(2)}× less command time, ${(cpu(1) / cpu(3)).toFixed(2)}× less Redis CPU`,
  )
  // per round, so that a busy machine's drift between rounds cancels out
  const ratios = results[3].map((r, i) => r.cpuUsecPerCall / results[2][i].cpuUsecPerCall)
  console.log(
    `now vs before #15 item 3: Redis CPU ×${median(ratios).toFixed(3)} per decision (median of per-round ratios; ` +
      `${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}); ` +
      `@fastify/rate-limit's script ${cpu(4).toFixed(2)} µs, ${(cpu(3) / cpu(4)).toFixed(2)}× of it`,
  )
  await store.close()
  await looped.close()
  await previous.close()
  prevRedis.disconnect()
  for (const p of [`${prefix}:*`]) {
    let cursor = '0'
    do {
      const [n, keys] = await admin.scan(cursor, 'MATCH', p, 'COUNT', 1000)
      cursor = n
      if (keys.length > 0) await admin.unlink(...keys)
    } while (cursor !== '0')
  }
  redis.disconnect()
  admin.disconnect()
  own?.child.kill('SIGKILL')
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
