import { GrudgeError, invalidOption } from '../errors.js'
import type { Hasher, KeyHash } from '../hash/hasher.js'
import {
  AGGREGATOR_IDS,
  DECAY_IDS,
  DEFAULT_CELLS_PER_LEVEL,
  DEFAULT_LEVELS,
  MAX_CELLS_PER_LEVEL,
  MAX_LEVELS,
  type SketchShape,
} from '../sketch/shape.js'
import { Sketch } from '../sketch/sketch.js'
import type { StoreSpec } from '../limit/store.js'
import { keyHashFor } from '../sketch/generation-seed.js'
import { assertAmnesty } from '../sketch/rotator-period.js'
import {
  autoPipelines,
  connectCluster,
  connectUrl,
  describeConnectError,
  describeTarget,
  isNoScript,
  type RedisLike,
} from './client.js'
import { blockShape, fingerprint, generationHasher, sketchFingerprintInput } from './fleet-hash.js'
import type { ParsedRedisOptions } from './options.js'
import { scriptSha } from './scripts.js'

/** Redis's largest string, in bytes: one generation of L × M × 16 bytes must fit. */
const MAX_STRING_BYTES = 512 * 1024 * 1024

/** The client shared by every store a factory builds; an owned client is closed with the last store. */
export class SharedClient {
  private client: Promise<RedisLike> | undefined
  private users = 0
  /** The last connection error ioredis reported for a client grudge created (for the startup message). */
  lastConnectError: unknown = undefined
  /** Listeners of the factory's {@link RedisStoreEvent}s. */
  readonly listeners = new Set<(event: RedisStoreEvent) => void>()
  constructor(private readonly source: RedisLike | string | readonly string[]) {}

  /** Whether the client is a Redis Cluster (a list of node URLs, or an ioredis `Cluster`). */
  get isCluster(): boolean {
    const s = this.source
    return isUrlList(s) || (typeof s === 'object' && (s as { isCluster?: unknown }).isCluster === true)
  }

  /** `host:port` (no credentials) of the Redis this client talks to. */
  get target(): string {
    return describeTarget(this.source)
  }

  /** Tell every listener; a listener that throws is not allowed to break a request. */
  emit(event: RedisStoreEvent): void {
    for (const l of this.listeners) {
      try {
        l(event)
      } catch {
        // a logger's failure is not the request's
      }
    }
  }

  /** The commands the `'autopipelining'` check ran for (once per factory and command). */
  private readonly pipeliningChecked = new Set<string>()

  /**
   * Once per factory and command (exact mode `'evalsha'` at a store's `ready()` and first call;
   * sync mode `'mget'` at its first sync): when the client the user passed as `redis`
   * auto-pipelines it ({@link autoPipelines}), one `'autopipelining'` event through the
   * listeners (the adapters' logger) with the fix. Clients grudge creates from URLs are never
   * checked (theirs ignore both: `OWNED_CLIENT_OPTIONS`).
   * @param policy the store name of the policy that noticed it (for the event)
   * @param command `'evalsha'` (exact mode's decisions) or `'mget'` (sync mode's pull)
   */
  checkPipelining(policy: string, command: 'evalsha' | 'mget'): void {
    if (this.pipeliningChecked.has(command)) return
    this.pipeliningChecked.add(command)
    const s = this.source
    if (typeof s === 'string' || isUrlList(s) || !autoPipelines(s, command)) return
    const what = this.isCluster ? 'Cluster' : 'client'
    const NAME = command.toUpperCase()
    const why =
      command === 'evalsha'
        ? 'exact mode already sends one EVALSHA per event-loop turn'
        : "sync mode's pull is one MGET per slot per sync"
    this.emit({
      type: 'autopipelining',
      policy,
      message: `grudge: ${policy}: the ioredis ${what} passed as redis (${this.target}) auto-pipelines ${NAME} (enableAutoPipelining: true without '${command}' in autoPipeliningIgnoredCommands): ${why}, and the client holds it one more turn (slower, still correct); add '${command}' to autoPipeliningIgnoredCommands on it`,
    })
  }

  /**
   * The startup failure in an operator's words: where, and why (connection refused, a
   * timeout, …), from the last connection error when there is one.
   */
  explain(err: unknown, waitedMs: number): string {
    const why =
      this.lastConnectError !== undefined
        ? describeConnectError(this.lastConnectError)
        : err instanceof RedisTimeout
          ? `no answer within ${waitedMs} ms`
          : describeConnectError(err)
    const hint = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN/.test(why)
      ? ': is Redis running there, and is this the right host and port?'
      : ''
    return `redis at ${this.target}: expected an answer within ${waitedMs} ms at startup, received ${why}${hint}`
  }

  /** The client once known (after the first {@link SharedClient.get} resolved), to skip a promise hop. */
  ready: RedisLike | undefined

  /**
   * Monotonic time (ms, `performance.now()`) before which every store of the factory skips
   * Redis after one of them failed: a request that consults several policies then waits for
   * one timeout, not one per policy.
   */
  downUntil = -Infinity

  /** The client (created on first use for a URL). */
  get(): Promise<RedisLike> {
    if (this.client === undefined) {
      const onError = (err: unknown) => (this.lastConnectError = err)
      const source = this.source
      this.client =
        typeof source === 'string'
          ? connectUrl(source, onError)
          : isUrlList(source)
            ? connectCluster(source, onError)
            : Promise.resolve(source)
      this.client.then(
        (c) => (this.ready = c),
        () => {},
      )
      // a failed import must not become an unhandled rejection before the first request
      this.client.catch(() => {})
    }
    return this.client
  }

  /** Count one more store using the client. */
  acquire(): void {
    this.users++
  }

  /** Release one user; the last one disconnects a client grudge created. */
  async release(): Promise<void> {
    this.users--
    if (this.users > 0 || !(typeof this.source === 'string' || isUrlList(this.source)) || this.client === undefined)
      return
    const pending = this.client
    this.client = undefined
    this.ready = undefined
    try {
      const c = await pending
      c.disconnect?.()
    } catch {
      // never connected: nothing to close
    }
  }
}

/**
 * What a Redis-backed store reports for logs (through `onEvent` or the factory's
 * `onEvent(listener)`): once per transition, never per request.
 *
 * - `'down'`: Redis failed or timed out; requests follow `onStoreError` (with `'local'`, the
 *   in-process fallback takes over) until it answers again;
 * - `'up'`: Redis answers again (after `downForMs`);
 * - `'schedule'`: this instance rotates on the fleet's recorded period, not its own;
 * - `'autopipelining'` (once per factory and command: exact mode at the first `ready()` or
 *   call, sync mode at the first sync): the ioredis client or Cluster passed as `redis`
 *   auto-pipelines `EVALSHA` (exact mode) or `MGET` (sync mode's pull), which holds each call
 *   one more event-loop turn; the message names the fix (add `'evalsha'` or `'mget'` to
 *   `autoPipeliningIgnoredCommands`);
 * - `'fleet-lag'` (self-sized policies, once per store): a twin this instance proposed on a load
 *   jump (early growth, spec/cluster.md "Early growth") was not recorded because another
 *   instance's adoption lag in the fleet lag record moved its switch past its generation's end;
 *   an instance whose lag (exact mode 2 × `sizing.checkEveryMs` + `timeoutMs`, sync mode
 *   `syncMs` + `timeoutMs`) reaches generations × periodMs blocks every twin of the fleet while
 *   it runs. This build refuses such options at construction (`ERR_GRUDGE_OPTION_INVALID`), so
 *   the event names another build's instance, or one on a fleet period shorter than its own;
 *   `fleetLagMs` is that lag, the message has it beside generations × periodMs.
 */
export interface RedisStoreEvent {
  /** `down`: Redis failed and onStoreError took over; `up`: it answers again; `schedule`: the fleet's period was adopted; `autopipelining`: the given client auto-pipelines EVALSHA (exact mode) or MGET (sync mode); `fleet-lag`: a twin proposed here was dropped for another instance's adoption lag. */
  readonly type: 'down' | 'up' | 'schedule' | 'autopipelining' | 'fleet-lag'
  /** The policy's store name (`spec.name`). */
  readonly policy: string
  /** One log line with figures; never a seed or a request key. */
  readonly message: string
  /** What decides meanwhile (`'down'` only). */
  readonly onStoreError?: 'open' | 'closed' | 'local'
  /** How long Redis was failing, in ms (`'up'` only). */
  readonly downForMs?: number
  /** The Redis error (`'down'` only, when one was seen). */
  readonly error?: unknown
  /** The adoption lag in ms of the instance whose field dropped the twin (`'fleet-lag'` only). */
  readonly fleetLagMs?: number
}

/** A validated policy shape for the fleet: the sketch shape, with the base hasher (each generation seeds its own). */
export interface FleetShape extends Omit<SketchShape, 'hasher'> {
  readonly base: Hasher
  readonly generations: number
  readonly periodMs: number
  readonly fingerprint: string
  /** The placement constants as Lua literals, compiled into its scripts (see `ScriptConstants`). */
  readonly scriptConstants: readonly string[]
  /** This instance's decay rate per ms, as a script argument (a policy figure: not compiled in). */
  readonly ratePerMsArg: string
  /** This instance's lower bound, as a script argument. */
  readonly loArg: string
  /** This instance's upper bound, as a script argument (see {@link adoptSchedule} for a capped one). */
  readonly hiArg: string
  /** Key prefix and fingerprint key of slot 0 (the only one in sync mode). */
  readonly fpKey: string
  readonly keyPrefix: string
  /** S, the hash slots the policy's cells are spread over. */
  readonly slots: number
  /** Cells per level of each slot's sub-sketch: ceil(M / S). */
  readonly slotCells: number
  /** Exact mode: W, cells per level in one block (spec/cluster.md, "Storage layout"); sync mode: slotCells. */
  readonly blockCells: number
  /** Exact mode: B = ceil(slotCells / W) blocks per slot; sync mode: 1. */
  readonly blocks: number
  /** Key prefix of each slot (see {@link slotKeyPrefix}): `<prefix>:{<name>}:` for slot 0, `<prefix>:{<name>#<s>}:` for the others. */
  readonly keyPrefixes: readonly string[]
  /** Fingerprint key of each slot. */
  readonly fpKeys: readonly string[]
}

/**
 * Validate a policy's {@link StoreSpec} for the fleet and derive its fingerprint and keys.
 * @param sized whether the store sizes its generations by the fleet's recorded shapes
 * (spec/cluster.md "Shapes"): the fingerprint then says so, and M is the largest shape
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option;
 * `ERR_GRUDGE_ROTATOR_AMNESTY` when linear decay cannot drain hi within (N − 1) × periodMs
 */
export function fleetShape(spec: StoreSpec, o: ParsedRedisOptions, sized = false): FleetShape {
  if (typeof spec !== 'object' || spec === null) invalidOption('spec', 'a StoreSpec object', spec)
  if (typeof spec.name !== 'string' || spec.name.length === 0 || /[{}]/.test(spec.name)) {
    invalidOption('spec.name', 'a non-empty string without { or }', spec.name)
  }
  const levels = spec.sketch?.levels ?? DEFAULT_LEVELS
  const cells = spec.sketch?.cellsPerLevel ?? DEFAULT_CELLS_PER_LEVEL
  const slots = o.slots
  if (!Number.isInteger(levels) || levels < 1 || levels > MAX_LEVELS)
    invalidOption('levels', 'an integer in [1, 2^20]', levels)
  if (!Number.isInteger(cells) || cells < 1 || cells > MAX_CELLS_PER_LEVEL)
    invalidOption('cellsPerLevel', 'an integer in [1, 2^32]', cells)
  const slotCells = Math.ceil(cells / slots)
  // exact mode lays each slot out in blocks of W cells per level (sync keeps the Sketch's layout)
  const { blockCells, blocks } = o.mode === 'exact' ? blockShape(slotCells) : { blockCells: slotCells, blocks: 1 }
  if (levels * blockCells * blocks * 16 > MAX_STRING_BYTES) {
    invalidOption('cellsPerLevel', `levels × cellsPerLevel × 16 ≤ 512 MiB (a Redis string; levels = ${levels})`, cells)
  }
  const generations = spec.generations
  if (!Number.isInteger(generations) || generations < 2) invalidOption('generations', 'an integer ≥ 2', generations)
  const periodMs = spec.periodMs
  if (typeof periodMs !== 'number' || !Number.isFinite(periodMs) || periodMs < 1)
    invalidOption('periodMs', 'a finite number ≥ 1 (ms)', periodMs)
  // The Sketch constructor is the one validator of decay, bounds, aggregator and hasher.
  const probe = new Sketch({ ...spec.sketch, levels: 1, cellsPerLevel: 1, seed: o.secret, clock: undefined })
  // the Rotator's amnesty guard holds for time-based generations too (spec/rotator.md)
  if (probe.decay.kind === 'linear') assertAmnesty(probe.hi, probe.decay.ratePerSecond, generations, periodMs)
  const fp = fingerprint(
    o.secret,
    sketchFingerprintInput(
      { ...probe, levels, cellsPerLevel: cells },
      o.mode,
      generations,
      slots,
      o.mode === 'exact' ? blockCells : undefined,
      sized,
    ),
  )
  const keyPrefixes = Array.from({ length: slots }, (_, s) => slotKeyPrefix(o.prefix, spec.name, s))
  const keyPrefix = keyPrefixes[0]
  return Object.freeze({
    levels,
    cellsPerLevel: cells,
    decay: probe.decay,
    lo: probe.lo,
    hi: probe.hi,
    aggregator: probe.aggregator,
    base: probe.hasher,
    generations,
    periodMs,
    fingerprint: fp,
    slots,
    slotCells,
    blockCells,
    blocks,
    keyPrefixes: Object.freeze(keyPrefixes),
    fpKeys: Object.freeze(keyPrefixes.map((p) => p + 'fp')),
    scriptConstants: Object.freeze([
      `'${fp}'`,
      String(generations),
      String(levels),
      String(slotCells),
      String(AGGREGATOR_IDS[probe.aggregator]),
      String(DECAY_IDS[probe.decay.kind]),
      String(blockCells),
      String(blocks),
    ]),
    ratePerMsArg: luaNumber(probe.decay.ratePerSecond / 1000),
    loArg: luaNumber(probe.lo),
    hiArg: luaNumber(probe.hi),
    fpKey: keyPrefix + 'fp',
    keyPrefix,
  })
}

/**
 * The key prefix of slot `slot` of a policy: `<prefix>:{<name>}:` for slot 0, whatever S, and
 * `<prefix>:{<name>#<slot>}:` for the others (one Redis Cluster hash tag per slot). Slot 0
 * keeps the policy's own tag, where S = 1 keeps every cell, so instances with S = 1 and S > 1
 * read one fingerprint record (slot 0's) and refuse each other instead of splitting the fleet's
 * counts between two sets of keys (spec/cluster.md, "Slots").
 * @param prefix the store's key prefix (no `{` or `}`)
 * @param name the policy's store name (no `{` or `}`)
 * @param slot the slot, an integer in [0, S)
 */
export function slotKeyPrefix(prefix: string, name: string, slot: number): string {
  return slot === 0 ? `${prefix}:{${name}}:` : `${prefix}:{${name}#${slot}}:`
}

/** The period and upper bound an instance uses once it has seen the fleet's recorded period. */
export interface Schedule {
  /** The rotation period in ms: the fleet's recorded one. */
  readonly periodMs: number
  /** The upper bound as a script argument: this policy's, or capped so the recorded period forgives no debt. */
  readonly hiArg: string
  /** The upper bound as a number. */
  readonly hi: number
  /** One log line saying what was adopted, with figures (undefined when the policy's own period is the fleet's). */
  readonly message: string | undefined
}

/**
 * The schedule of an instance whose policy period differs from the one recorded in Redis by
 * the fleet (a period derived from burst / maxDebt changes with them; spec/cluster.md,
 * "Schedule"): it rotates on the recorded period, so every instance reads the same
 * generations. With linear decay the Rotator's amnesty guard `(N − 1)·periodMs ≥ hi / rate ·
 * 1000` must hold for the recorded period too; when it does not, `hi` (maxDebt) is capped at
 * `(N − 1)·periodMs·rate / 1000`, which drains within the live generations: the debt beyond
 * it, which the retiring generation would forgive anyway, is not recorded.
 * @param shape the policy's validated shape
 * @param recordedPeriodMs the fleet's period (finite, ≥ 1)
 */
export function adoptSchedule(shape: FleetShape, recordedPeriodMs: number): Schedule {
  if (recordedPeriodMs === shape.periodMs) {
    return { periodMs: shape.periodMs, hiArg: shape.hiArg, hi: shape.hi, message: undefined }
  }
  let hi = shape.hi
  let capped = ''
  if (shape.decay.kind === 'linear') {
    const holds = ((shape.generations - 1) * recordedPeriodMs * shape.decay.ratePerSecond) / 1000
    if (holds < hi) {
      hi = holds
      capped = `; maxDebt (hi) capped from ${shape.hi} to ${hi}, what (N − 1) × ${recordedPeriodMs} ms drains at ${shape.decay.ratePerSecond}/s`
    }
  }
  return {
    periodMs: recordedPeriodMs,
    hiArg: luaNumber(hi),
    hi,
    message: `${shape.keyPrefix.slice(0, -1)}: rotating on the fleet's recorded period of ${recordedPeriodMs} ms instead of this policy's ${shape.periodMs} ms (instances with another burst or maxDebt derive another period)${capped}`,
  }
}

/** A float64 as a Lua numeric literal that reads back as the same double (shortest round-trip form). */
function luaNumber(x: number): string {
  if (!Number.isFinite(x))
    throw new GrudgeError('ERR_GRUDGE_OPTION_INVALID', `script constant: expected a finite number, received ${x}`)
  return Object.is(x, -0) ? '-0.0' : String(x)
}

/** Caches the per-generation hashers of one policy (a handful live at a time), which share one key hash. */
export class GenerationHashers {
  private readonly cache = new Map<number, Hasher>()
  private readonly keys: KeyHash
  constructor(
    private readonly base: Hasher,
    private readonly secret: Uint8Array,
  ) {
    this.keys = keyHashFor(base, secret)
  }
  /** The hasher of generation `id` (see {@link generationHasher}). */
  get(id: number): Hasher {
    let h = this.cache.get(id)
    if (h === undefined) {
      if (this.cache.size > 16) {
        for (const k of this.cache.keys()) if (k < id - 8) this.cache.delete(k)
      }
      h = generationHasher(this.base, this.secret, id, this.keys)
      this.cache.set(id, h)
    }
    return h
  }
}

/** Thrown inside a race when Redis is slower than timeoutMs (never escapes to users). */
export class RedisTimeout extends Error {
  constructor(ms: number) {
    super(`redis: expected an answer within ${ms} ms, received none`)
  }
}

/**
 * Run `task` but give up after `ms`: the returned promise rejects with {@link RedisTimeout}
 * (the command itself may still run on the server later).
 */
export function withTimeout<T>(task: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new RedisTimeout(ms)), ms)
    task.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (err: unknown) => {
        clearTimeout(timer)
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- passes the command's own rejection through unchanged
        reject(err)
      },
    )
  })
}

/**
 * EVALSHA, loading the script (SCRIPT LOAD) and retrying once on NOSCRIPT — after a
 * SCRIPT FLUSH, a restart or a failover.
 */
export function evalScript(
  client: RedisLike,
  source: string,
  sha: string,
  keys: readonly string[],
  args: (string | number | Buffer)[],
  binary: boolean,
): Promise<unknown> {
  const run = () =>
    binary && client.evalshaBuffer !== undefined
      ? client.evalshaBuffer(sha, keys.length, ...keys, ...args)
      : client.evalsha(sha, keys.length, ...keys, ...args)
  return run().catch(async (err: unknown) => {
    if (!isNoScript(err)) throw err
    // EVAL reaches the node that owns the keys (and caches the script there): on a Redis
    // Cluster, SCRIPT LOAD would reach any node
    if (binary && client.evalBuffer !== undefined) return client.evalBuffer(source, keys.length, ...keys, ...args)
    if (!binary && client.eval !== undefined) return client.eval(source, keys.length, ...keys, ...args)
    await client.script('LOAD', source)
    return run()
  })
}

function isUrlList(source: RedisLike | string | readonly string[]): source is readonly string[] {
  return Array.isArray(source)
}

/** The SHA of a script, computed once. */
export const shaOf = (() => {
  const cache = new Map<string, string>()
  return (source: string): string => {
    let s = cache.get(source)
    if (s === undefined) cache.set(source, (s = scriptSha(source)))
    return s
  }
})()

/**
 * The coded error for a fingerprint mismatch.
 * @returns `ERR_GRUDGE_CLUSTER_FINGERPRINT` naming both fingerprints
 */
export function fingerprintError(shape: FleetShape, stored: unknown): GrudgeError {
  return new GrudgeError(
    'ERR_GRUDGE_CLUSTER_FINGERPRINT',
    `${shape.fpKey}: expected fingerprint ${shape.fingerprint} (this instance's seed and policy shape), received ${String(stored)} stored by another instance: another seed, hash function, shape, decay, bounds, generations, period or mode`,
  )
}

/**
 * The coded error for a reply of an unexpected shape.
 * @returns `ERR_GRUDGE_CLUSTER_REPLY`
 */
export function replyError(what: string, reply: unknown): GrudgeError {
  let shown: string
  try {
    shown = JSON.stringify(reply)?.slice(0, 120) ?? String(reply)
  } catch {
    shown = String(reply)
  }
  return new GrudgeError('ERR_GRUDGE_CLUSTER_REPLY', `${what}: expected a grudge script reply, received ${shown}`)
}
