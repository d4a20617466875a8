import { GrudgeError } from '../errors.js'

/**
 * The part of an ioredis client grudge uses (duck-typed, so `ioredis` stays an optional
 * peer and is never imported statically). `evalshaBuffer` is needed by sync mode only.
 */
export interface RedisLike {
  /** `EVALSHA sha numKeys ...keys ...args`, resolving to the script's reply (strings decoded as UTF-8). */
  evalsha(sha: string, numKeys: number, ...args: (string | number | Buffer)[]): Promise<unknown>
  /** As {@link RedisLike.evalsha} with string replies as Buffers (binary cells); sync mode only. */
  evalshaBuffer?(sha: string, numKeys: number, ...args: (string | number | Buffer)[]): Promise<unknown>
  /**
   * `EVAL source numKeys ...keys ...args`: after a NOSCRIPT reply, runs (and caches) the script
   * on the node that owns the keys — on a Redis Cluster, `SCRIPT LOAD` would reach any node.
   */
  eval?(source: string, numKeys: number, ...args: (string | number | Buffer)[]): Promise<unknown>
  /** As {@link RedisLike.eval} with Buffer replies (sync mode). */
  evalBuffer?(source: string, numKeys: number, ...args: (string | number | Buffer)[]): Promise<unknown>
  /**
   * `MGET ...keys` with the values as Buffers (null when absent): sync mode pulls the fleet's
   * cells with it after the sync script, which costs Redis less than returning them from Lua
   * (spec/cluster.md, "Sync mode"). Optional: without it the sync script returns the cells in
   * its reply.
   */
  mgetBuffer?(...keys: string[]): Promise<(Buffer | null)[]>
  /** `SCRIPT LOAD source`, used after a NOSCRIPT reply when the client has no `eval`. */
  script(subcommand: 'LOAD', source: string): Promise<unknown>
  /** Close the connection at once (called only on clients grudge created from a URL). */
  disconnect?(): void
  /** Close the connection after pending replies (not called by grudge). */
  quit?(): Promise<unknown>
}

/** Options grudge sets on a client it creates from a URL (see spec/cluster.md). */
export const OWNED_CLIENT_OPTIONS = Object.freeze({
  /** A command issued while disconnected fails at once instead of waiting in a queue. */
  enableOfflineQueue: false,
  /** One retry of a command across a reconnect, then fail: the request path never waits for reconnects. */
  maxRetriesPerRequest: 1,
  /** Give up a connection attempt after 1 s (reconnects continue in the background). */
  connectTimeout: 1000,
  /** Reconnect forever with a capped backoff: 50 ms × attempt, at most 1 s. */
  retryStrategy: (times: number): number => Math.min(times * 50, 1000),
  /**
   * Commands issued in one event-loop turn (the decisions of concurrent requests) leave in
   * one socket write and reach Redis in one read: each write or read is a system call that
   * costs as much as a small script here (spec/cluster.md, "Redis work per decision").
   */
  enableAutoPipelining: true,
  /**
   * Except EVALSHA, written at once: exact mode already sends a turn's decisions in one call
   * (spec/cluster.md, "Batches") from the turn's check phase, and ioredis would hold it for
   * another turn (its pipeline waits for the next `setImmediate`) and wrap it once more.
   * And MGET, sync mode's pull (one per slot and sync, sent alone after the sync script's
   * reply): ioredis would build a Pipeline around it and hold it for a turn.
   */
  autoPipeliningIgnoredCommands: ['evalsha', 'mget'],
})

/**
 * Create an ioredis client for `url`, importing `ioredis` lazily.
 * @param url a `redis://` or `rediss://` URL
 * @param onConnectError called with each connection error ioredis reports (kept for the startup message)
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_CLIENT` when ioredis cannot be loaded
 */
export async function connectUrl(url: string, onConnectError?: (err: unknown) => void): Promise<RedisLike> {
  let mod: { Redis?: unknown; default?: unknown }
  try {
    mod = await import('ioredis')
  } catch (err) {
    throw new GrudgeError(
      'ERR_GRUDGE_CLUSTER_CLIENT',
      `redis: expected the optional peer "ioredis" to be installed for a URL, received an import failure (${(err as Error).message})`,
      { cause: err },
    )
  }
  const Redis = (mod.Redis ?? mod.default) as new (
    url: string,
    options: object,
  ) => RedisLike & {
    on(event: string, fn: (...args: unknown[]) => void): void
    off?(event: string, fn: (...args: unknown[]) => void): void
  }
  const client = new Redis(url, { ...OWNED_CLIENT_OPTIONS })
  // Connection errors surface per command (and as failure modes); without a listener
  // ioredis would report each reconnect attempt as an unhandled 'error' event.
  client.on('error', (err: unknown) => onConnectError?.(err))
  // Without an offline queue, commands fail until the first connection is up: hand the
  // client out once it is ready, or once connecting failed (then commands fail fast and
  // the failure mode answers, while ioredis reconnects in the background).
  await new Promise<void>((resolve) => {
    const done = () => {
      client.off?.('ready', done)
      client.off?.('error', done)
      resolve()
    }
    client.on('ready', done)
    client.on('error', done)
  })
  return client
}

/**
 * Create an ioredis `Cluster` for a list of node URLs, importing `ioredis` lazily; commands
 * fail at once while a node is unreachable (no offline queue), as for a single client.
 * @param urls the startup nodes, `redis://host:port` (credentials from the first URL)
 * @param onConnectError called with each node error ioredis reports
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_CLIENT` when ioredis cannot be loaded
 */
export async function connectCluster(
  urls: readonly string[],
  onConnectError?: (err: unknown) => void,
): Promise<RedisLike> {
  let mod: { Cluster?: unknown; default?: { Cluster?: unknown } }
  try {
    mod = await import('ioredis')
  } catch (err) {
    throw new GrudgeError(
      'ERR_GRUDGE_CLUSTER_CLIENT',
      `redis: expected the optional peer "ioredis" to be installed for a cluster, received an import failure (${(err as Error).message})`,
      { cause: err },
    )
  }
  const Cluster = (mod.Cluster ?? mod.default?.Cluster) as new (
    nodes: object[],
    options: object,
  ) => RedisLike & {
    on(event: string, fn: (...args: unknown[]) => void): void
    off?(event: string, fn: (...args: unknown[]) => void): void
  }
  const first = new URL(urls[0])
  const nodes = urls.map((u) => {
    const x = new URL(u)
    return { host: x.hostname, port: Number(x.port || 6379) }
  })
  // the Cluster has its own retry and pipelining options (below)
  const {
    retryStrategy,
    enableAutoPipelining: _pipelining,
    autoPipeliningIgnoredCommands: _ignored,
    ...redisOptions
  } = OWNED_CLIENT_OPTIONS
  const cluster = new Cluster(nodes, {
    enableOfflineQueue: false,
    // not on a Cluster: a command batched with one for an unserved hash slot waited or failed
    // with it (test/cluster/cluster-failure.test.ts), so one slot's failure spread to others
    enableAutoPipelining: false,
    clusterRetryStrategy: retryStrategy,
    // a refused node's slots fail at once; the others keep answering
    retryDelayOnClusterDown: 50,
    retryDelayOnFailover: 50,
    slotsRefreshTimeout: 1000,
    redisOptions: {
      ...redisOptions,
      ...(first.password !== '' ? { password: decodeURIComponent(first.password) } : {}),
      ...(first.username !== '' ? { username: decodeURIComponent(first.username) } : {}),
      ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  })
  cluster.on('error', (err: unknown) => onConnectError?.(err))
  await new Promise<void>((resolve) => {
    const done = () => {
      cluster.off?.('ready', done)
      cluster.off?.('error', done)
      resolve()
    }
    cluster.on('ready', done)
    cluster.on('error', done)
  })
  return cluster
}

/**
 * Whether an ioredis client or `Cluster` auto-pipelines `command`: its `options` (a `Cluster`'s
 * own, not `redisOptions`: ioredis hands a Cluster's commands to its nodes unpipelined) say
 * `enableAutoPipelining: true` and `autoPipeliningIgnoredCommands` lacks `command` (ioredis
 * compares lowercase command names, case-sensitively, so `'EVALSHA'` there does not count).
 * Exact mode already sends one `evalsha` per event-loop turn (spec/cluster.md, "Batches") and
 * sync mode pulls with one `mget` per slot; such a client holds either for one more turn.
 * Anything without those options (a duck-typed client) is false.
 * @param client the `redis` option's client
 * @param command a lowercase command name, `'evalsha'` or `'mget'`
 */
export function autoPipelines(client: unknown, command: string): boolean {
  const options = (client as { options?: { enableAutoPipelining?: unknown; autoPipeliningIgnoredCommands?: unknown } })
    ?.options
  if (typeof options !== 'object' || options === null || options.enableAutoPipelining !== true) return false
  const ignored = options.autoPipeliningIgnoredCommands
  return !(Array.isArray(ignored) && ignored.includes(command))
}

/** Whether `value` looks like an ioredis client. */
export function isRedisLike(value: unknown): value is RedisLike {
  const v = value as RedisLike
  return typeof v === 'object' && v !== null && typeof v.evalsha === 'function' && typeof v.script === 'function'
}

/** Whether a Redis error is NOSCRIPT (the script cache was flushed or the server restarted). */
export function isNoScript(err: unknown): boolean {
  return typeof (err as Error)?.message === 'string' && (err as Error).message.startsWith('NOSCRIPT')
}

/**
 * Where a client connects, for messages: `host:port` of a URL (never its password), or of
 * an ioredis client's `options`; `'the given client'` when neither says.
 */
export function describeTarget(source: RedisLike | string | readonly string[]): string {
  if (Array.isArray(source)) return `cluster ${(source as readonly string[]).map((u) => describeTarget(u)).join(',')}`
  if (typeof source === 'string') {
    try {
      const u = new URL(source)
      return `${u.hostname || '127.0.0.1'}:${u.port || '6379'}`
    } catch {
      return 'the redis URL'
    }
  }
  const nodes = (source as { startupNodes?: unknown }).startupNodes
  if (Array.isArray(nodes)) {
    const field = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : '?')
    const list = nodes.map((n: { host?: unknown; port?: unknown }) => `${field(n?.host)}:${field(n?.port)}`)
    return `cluster ${list.join(',')}`
  }
  const opts = (source as { options?: { host?: unknown; port?: unknown; path?: unknown } }).options
  if (typeof opts?.path === 'string' && opts.path !== '') return opts.path
  if (opts !== undefined && (typeof opts.host === 'string' || typeof opts.port === 'number')) {
    return `${typeof opts.host === 'string' ? opts.host : 'localhost'}:${typeof opts.port === 'number' ? opts.port : 6379}`
  }
  return 'the given client'
}

/**
 * What a connection error means to an operator, in words: `connection refused` for
 * ECONNREFUSED, and so on; otherwise the error's own message.
 */
export function describeConnectError(err: unknown): string {
  const code = (err as { code?: unknown })?.code
  const words: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed',
    ETIMEDOUT: 'connection timed out',
    ECONNRESET: 'connection reset',
    EHOSTUNREACH: 'host unreachable',
  }
  if (typeof code === 'string' && code in words) return `${words[code]} (${code})`
  const msg = (err as Error)?.message
  // ioredis's wording when a command meets a connection that is not up (refused, closed or
  // still connecting) with enableOfflineQueue: false, as grudge requires
  if (typeof msg === 'string' && msg.startsWith("Stream isn't writeable"))
    return 'not connected (the connection is down or was refused; nothing is queued while it is)'
  return typeof msg === 'string' ? msg : String(err)
}
