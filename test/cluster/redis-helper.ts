// Shared by the cluster tests: a real Redis on 127.0.0.1:6379 (`.ci/run` starts one).
// Tests that need it fail under CI (CI=true or 1) when it is missing and skip, saying why, elsewhere.
import { Socket, createServer, type AddressInfo } from 'node:net'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { Cluster, Redis } from 'ioredis'
import type { Test } from 'tap'

export const REDIS_URL = process.env.GRUDGE_REDIS_URL ?? 'redis://127.0.0.1:6379'
const target = new URL(REDIS_URL)

/** Whether a TCP connection to the Redis port (default: the one of REDIS_URL) succeeds within 500 ms. */
export function redisReachable(
  port = Number(target.port || 6379),
  host = target.hostname || '127.0.0.1',
): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket()
    const done = (ok: boolean) => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(500, () => done(false))
    s.once('error', () => done(false))
    s.connect(port, host, () => done(true))
  })
}

/**
 * The options of `t.test` for a test that needs Redis: `{ skip: reason }` outside CI when
 * Redis is down; under CI a missing Redis is a failure, not a skip.
 */
export async function needRedis(t: Test): Promise<{ skip?: string }> {
  // three tries 500 ms apart: on a loaded 2-core machine (tap runs 3 files at once) one
  // loopback connect can miss its 500 ms while Redis serves another file's burst
  for (let i = 0; i < 3; i++) {
    if (await redisReachable()) return {}
    await new Promise((r) => setTimeout(r, 500))
  }
  if (inCI()) {
    t.fail(`Redis is required in CI on ${REDIS_URL} (.ci/run starts one on 6379) but the port is closed`)
    return { skip: 'Redis missing (failed above)' }
  }
  return { skip: `Redis not running on ${REDIS_URL}: start redis-server to run the cluster tests` }
}

/** Whether the tests run under CI (CI set, and not to '', '0' or 'false'): a missing server is then a failure, not a skip. */
function inCI(): boolean {
  return process.env.CI !== undefined && !['', '0', 'false'].includes(process.env.CI)
}

/** An admin client for setup and inspection: with an offline queue (so its first command waits for the connection), one retry. */
export function client(url = REDIS_URL): Redis {
  const r = new Redis(url, { enableOfflineQueue: true, maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  return r
}

/** A key prefix no other test or helper uses. */
export function uniquePrefix(name: string): string {
  return `grudge-test:${name}:${process.pid}:${Date.now().toString(36)}`
}

/**
 * An admin {@link client} and a {@link uniquePrefix} for test `t`: at t's teardown every key
 * under the prefix is deleted and the client quits.
 */
export function adminFor(t: Test, name: string): { admin: Redis; prefix: string } {
  const admin = client()
  const prefix = uniquePrefix(name)
  t.teardown(async () => {
    await dropPrefix(admin, prefix)
    await admin.quit()
  })
  return { admin, prefix }
}

/** Delete every key under `prefix` (SCAN + UNLINK). */
export async function dropPrefix(r: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await r.unlink(...keys)
  } while (cursor !== '0')
}

/** A redis-server of this test's own on `port` (no persistence), so it can be paused, flushed, stopped and restarted without touching the shared one. */
export interface PrivateRedis {
  port: number
  url: string
  start(): Promise<void>
  stop(): Promise<void>
}

/** Whether the redis-server binary is on PATH. */
export function haveRedisServer(): boolean {
  const r = spawnSync('redis-server', ['--version'], { stdio: 'ignore' })
  return r.status === 0
}

/** A private redis-server on `port` (started by start(), killed by its pid in stop()). */
export function privateRedis(port: number): PrivateRedis {
  let child: ChildProcess | undefined
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
        {
          stdio: 'ignore',
        },
      )
      for (let i = 0; i < 100 && !(await redisReachable(port)); i++) await new Promise((r) => setTimeout(r, 20))
    },
    async stop() {
      if (child === undefined || child.exitCode !== null) return
      const c = child
      const exited = new Promise((r) => c.once('exit', r))
      c.kill('SIGKILL')
      await exited
      child = undefined
    },
  }
}

/** A Redis Cluster for the tests: its node URLs, and a stop() for one this helper started. */
export interface TestCluster {
  urls: string[]
  /** The redis-server children this helper started, by port (empty for GRUDGE_REDIS_CLUSTER). */
  pids: Map<number, ChildProcess>
  /** The node ports (of a cluster this helper started; empty for GRUDGE_REDIS_CLUSTER). */
  ports: number[]
  /** SIGKILL the node on `port` that this helper started (its PID only). */
  kill(port: number): Promise<void>
  /** Start the node on `port` again with its own dir and nodes.conf: it rejoins with its slots. */
  restart(port: number): Promise<void>
  stop(): Promise<void>
}

/** A loopback port the OS reports free (bound and released at once, so another file's server will not pick it by the same rule). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * A private redis-server of test `t` ({@link privateRedis}) on a free loopback port, started
 * unless `start` is false (the test starts it late), stopped by its PID at t's teardown.
 * Undefined when the redis-server binary is missing: t then fails under CI and is skipped
 * elsewhere, saying that it needs one to `why` (e.g. 'pause it').
 */
export async function ownRedis(
  t: Test,
  why: string,
  options: { start?: boolean } = {},
): Promise<PrivateRedis | undefined> {
  if (!haveRedisServer()) {
    const reason = `redis-server not on PATH: this test runs a private one to ${why}`
    if (inCI()) t.fail(`${reason} (.ci/run installs it)`)
    else t.plan(0, `skip: ${reason}`)
    return undefined
  }
  const server = privateRedis(await freePort())
  t.teardown(() => server.stop())
  if (options.start !== false) await server.start()
  return server
}

/**
 * The Redis Cluster of test `t` ({@link testCluster}: GRUDGE_REDIS_CLUSTER's, or one of its
 * own, always with `own`), stopped at t's teardown (only what it started). Undefined when
 * neither is possible: t then fails under CI and is skipped elsewhere, saying why.
 */
export async function clusterFor(t: Test, options: { own?: boolean } = {}): Promise<TestCluster | undefined> {
  const cluster = await testCluster(options)
  if (cluster === undefined) {
    const needs =
      options.own === true
        ? 'redis-server and redis-cli, to start a Redis Cluster of the test’s own'
        : 'a Redis Cluster (GRUDGE_REDIS_CLUSTER, which .ci/run sets, or redis-server and redis-cli to start one)'
    if (inCI()) t.fail(`CI requires ${needs}`)
    else t.plan(0, `skip: no ${needs}`)
    return undefined
  }
  t.teardown(() => cluster.stop())
  return cluster
}

/** An ioredis Cluster client of `cluster`'s nodes, for setup and inspection (offline queue on, errors swallowed), disconnected at t's teardown. */
export function clusterClient(t: Test, cluster: TestCluster): Cluster {
  const c = new Cluster(
    cluster.urls.map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) })),
    { enableOfflineQueue: true },
  )
  c.on('error', () => {})
  t.teardown(() => c.disconnect())
  return c
}

/** Whether `port` and its cluster bus port (port + 10000) are both closed on 127.0.0.1. */
async function freeForCluster(port: number): Promise<boolean> {
  return !(await redisReachable(port)) && !(await redisReachable(port + 10000))
}

/**
 * The cluster named by `GRUDGE_REDIS_CLUSTER` (comma-separated host:port list; `.ci/run` sets
 * it), or a 3-master cluster of this test's own on free loopback ports (redis-server 7
 * `--cluster-enabled yes`, each with its own nodes.conf, then `redis-cli --cluster create`);
 * undefined when neither is possible. Only the PIDs started here are ever stopped.
 */
export async function testCluster(options: { own?: boolean } = {}): Promise<TestCluster | undefined> {
  const env = process.env.GRUDGE_REDIS_CLUSTER
  if (env !== undefined && env !== '' && options.own !== true) {
    const none = async () => {}
    return {
      urls: env.split(',').map((h) => `redis://${h.trim()}`),
      pids: new Map(),
      ports: [],
      kill: none,
      restart: none,
      stop: none,
    }
  }
  if (!haveRedisServer() || spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined
  const ports: number[] = []
  for (let p = 21000 + (process.pid % 2000) * 3; ports.length < 3 && p < 31000; p++) {
    if (await freeForCluster(p)) ports.push(p)
  }
  const pids = new Map<number, ChildProcess>()
  const argsOf = new Map<number, string[]>()
  for (const port of ports) {
    const dir = mkdtempSync(join(tmpdir(), `grudge-cluster-${port}-`))
    argsOf.set(port, [
        '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
        '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'),
        '--cluster-node-timeout', '2000', '--cluster-require-full-coverage', 'no', '--loglevel', 'warning',
      ]) // prettier-ignore
  }
  const start = async (port: number) => {
    pids.set(port, spawn('redis-server', argsOf.get(port)!, { stdio: 'ignore' }))
    for (let i = 0; i < 100 && !(await redisReachable(port)); i++) await new Promise((r) => setTimeout(r, 20))
  }
  const kill = async (port: number) => {
    const c = pids.get(port)
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return
    const exited = new Promise((r) => c.once('exit', r))
    c.kill('SIGKILL')
    await exited
  }
  for (const port of ports) await start(port)
  const stop = async () => {
    for (const port of pids.keys()) await kill(port)
  }
  const created = spawnSync(
    'redis-cli',
    ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
    { stdio: 'ignore', timeout: 20_000 },
  )
  if (created.status !== 0) {
    await stop()
    return undefined
  }
  // wait until every node agrees the cluster is up
  for (let i = 0; i < 100; i++) {
    const ok = ports.every((p) =>
      /cluster_state:ok/.test(
        spawnSync('redis-cli', ['-p', String(p), 'cluster', 'info'], { encoding: 'utf8' }).stdout,
      ),
    )
    if (ok) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return { urls: ports.map((p) => `redis://127.0.0.1:${p}`), pids, ports, kill, restart: start, stop }
}
