import { systemClock, type Clock } from '../clock.js'
import { GrudgeError } from '../errors.js'
import type { Hasher } from '../hash/hasher.js'
import { keyBytes, keyLength, keyView } from '../hash/key-bytes.js'
import { kmIndexes } from '../hash/indexes.js'
import { checkFinite } from '../sketch/sketch.js'
import { Rotator } from '../sketch/rotator.js'
import type { ScoreStore, StoreResult, StoreSpec } from '../limit/store.js'
import type { RedisLike } from './client.js'
import {
  GenerationHashers,
  evalScript,
  fingerprintError,
  fleetShape,
  replyError,
  shaOf,
  withTimeout,
  type FleetShape,
  type SharedClient,
} from './connection.js'
import type { ParsedRedisOptions } from './options.js'
import { exactScript } from './scripts.js'

const OP_TRY = 0
const OP_ADD = 1
const OP_READ = 2
const OP_CHECK = 3

/** The startup check is off the request path: it may also wait for the first connection (at least 2 s). */
export const READY_TIMEOUT_MS = (timeoutMs: number): number => Math.max(timeoutMs, 2000)

/** A decoded script reply. */
interface Reply {
  status: number
  score: number
  nowMs: number
}

/**
 * Exact mode: the cells of every generation live in Redis and each operation is one
 * EVALSHA of the exact script ({@link exactScript}), which applies the Sketch's semantics atomically on the
 * server (spec/cluster.md). Built by {@link redisStore}; not constructed directly.
 */
export class RedisExactStore implements ScoreStore {
  /** The validated shape and keys of the policy. */
  readonly shape: FleetShape
  private readonly hashers: GenerationHashers
  private readonly script: string
  private readonly sha: string
  private readonly idx: Uint32Array
  private readonly genHashers: Hasher[] = []
  private keys: readonly string[] = []
  private keysGb = NaN
  /** Server time minus local time in ms, from the last reply. */
  private offsetMs = 0
  private readonly local: Clock
  private down = false
  private fallback: Rotator | undefined
  private closed = false

  /** @internal built by {@link redisStore} */
  constructor(
    private readonly spec: StoreSpec,
    private readonly o: ParsedRedisOptions,
    private readonly shared: SharedClient,
  ) {
    this.shape = fleetShape(spec, o)
    this.script = exactScript(this.shape.scriptConstants)
    this.sha = shaOf(this.script)
    this.hashers = new GenerationHashers(this.shape.base, o.secret)
    this.idx = new Uint32Array(this.shape.levels)
    this.local = o.clock ?? systemClock
    shared.acquire()
    // start connecting now so the first request does not pay for it
    shared.get().catch(() => {})
  }

  /**
   * Check Redis once, without a failure mode: the fingerprint is compared (and stored when
   * absent). Call it at startup to refuse to start beside an incompatible fleet. Waits up to
   * max(timeoutMs, 2000) ms, which covers the first connection.
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT` on a mismatch;
   * `ERR_GRUDGE_CLUSTER_UNAVAILABLE` when Redis does not answer in time;
   * `ERR_GRUDGE_CLUSTER_CLIENT` when ioredis cannot be loaded
   */
  async ready(): Promise<void> {
    this.assertOpen()
    try {
      await this.call(OP_CHECK, '', 0, 0, READY_TIMEOUT_MS(this.o.timeoutMs))
    } catch (err) {
      if (err instanceof GrudgeError) throw err
      throw new GrudgeError(
        'ERR_GRUDGE_CLUSTER_UNAVAILABLE',
        `redis: expected an answer within ${READY_TIMEOUT_MS(this.o.timeoutMs)} ms at startup, received ${(err as Error).message}`,
        { cause: err },
      )
    }
  }

  /**
   * Admit iff `score + cost ≤ limit` on the oldest live generation, atomically in Redis;
   * if admitted, add `cost` to every live generation. Resolves within timeoutMs: on a
   * Redis failure it follows `onStoreError`.
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` (as a rejection)
   * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` (as a rejection)
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT`, `ERR_GRUDGE_CLUSTER_CLOSED`
   */
  async tryConsume(key: string, cost: number, limit: number): Promise<StoreResult> {
    checkFinite('cost', cost)
    checkFinite('limit', limit)
    this.assertOpen()
    if (!this.skipRedis()) {
      try {
        const r = await this.call(OP_TRY, key, cost, limit)
        this.recovered()
        return { admitted: r.status === 1, score: r.score }
      } catch (err) {
        this.failed(err)
      }
    }
    const mode = this.o.onStoreError
    if (mode === 'open') return { admitted: true, score: NaN, failure: 'open' }
    if (mode === 'closed') return { admitted: false, score: NaN, failure: 'closed' }
    const rot = this.localRotator()
    const admitted = rot.tryUpdate(key, cost, limit)
    return { admitted, score: rot.estimate(key) }
  }

  /**
   * Add `delta` to the key in every live generation; resolves to the oldest generation's
   * aggregate after. On a Redis failure: NaN (`'open'`, `'closed'`) or the local Rotator's
   * answer (`'local'`).
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE` (as a rejection)
   */
  async add(key: string, delta: number): Promise<number> {
    checkFinite('delta', delta)
    this.assertOpen()
    if (!this.skipRedis()) {
      try {
        const r = await this.call(OP_ADD, key, delta, 0)
        this.recovered()
        return r.score
      } catch (err) {
        this.failed(err)
      }
    }
    return this.o.onStoreError === 'local' ? this.localRotator().updateAndEstimate(key, delta) : NaN
  }

  /** The key's aggregate in the oldest live generation (NaN or the local answer on failure, as {@link RedisExactStore.add}). */
  async read(key: string): Promise<number> {
    this.assertOpen()
    if (!this.skipRedis()) {
      try {
        const r = await this.call(OP_READ, key, 0, 0)
        this.recovered()
        return r.score
      } catch (err) {
        this.failed(err)
      }
    }
    return this.o.onStoreError === 'local' ? this.localRotator().estimate(key) : NaN
  }

  /** Cells held in this process: 0, or the local fallback Rotator's while Redis is failing. */
  sizeBytes(): number {
    return this.fallback?.sizeBytes() ?? 0
  }

  /** Whether the last Redis call failed (requests follow onStoreError). */
  get failing(): boolean {
    return this.down
  }

  /** Release the fallback and the shared client (closed with the last store if grudge created it); idempotent. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.fallback?.close()
    this.fallback = undefined
    await this.shared.release()
  }

  private assertOpen(): void {
    if (this.closed)
      throw new GrudgeError(
        'ERR_GRUDGE_CLUSTER_CLOSED',
        'redis store: expected an open store, received one that was closed',
      )
  }

  private skipRedis(): boolean {
    // the factory's stores share one client: a failure seen by any of them holds for all
    if (performance.now() >= this.shared.downUntil) return false
    this.down = true
    return true
  }

  private failed(err: unknown): void {
    if (isCoded(err)) throw err
    this.down = true
    this.shared.downUntil = Math.max(this.shared.downUntil, performance.now() + this.o.retryMs)
    this.o.onError?.(err)
  }

  private recovered(): void {
    if (!this.down) return
    this.down = false
    // the local insurance covered the outage only; Redis is the truth again
    this.fallback?.close()
    this.fallback = undefined
  }

  private localRotator(): Rotator {
    if (this.fallback === undefined) {
      this.fallback = new Rotator({
        sketch: { ...this.spec.sketch, levels: this.shape.levels, cellsPerLevel: this.shape.cellsPerLevel },
        generations: this.shape.generations,
        periodMs: this.shape.periodMs,
        clock: this.spec.clock,
        ticker: this.spec.ticker,
      })
    }
    return this.fallback
  }

  /** One operation: one EVALSHA (a second only after NOSCRIPT or a clock far off), within timeoutMs. */
  private call(op: number, key: string, delta: number, limit: number, timeoutMs = this.o.timeoutMs): Promise<Reply> {
    const c = this.shared.ready
    const task =
      c !== undefined
        ? this.exec(c, op, key, delta, limit)
        : this.shared.get().then((c) => this.exec(c, op, key, delta, limit))
    return withTimeout(task, timeoutMs)
  }

  private async exec(client: RedisLike, op: number, key: string, delta: number, limit: number): Promise<Reply> {
    const explicit = this.o.clock !== undefined
    let estimate = explicit ? this.local.now() : this.local.now() + this.offsetMs
    for (let attempt = 0; ; attempt++) {
      const { keys, args } = this.request(op, key, delta, limit, estimate, explicit)
      const raw = await evalScript(client, this.script, this.sha, keys, args, false)
      const r = decode(raw)
      if (!explicit) this.offsetMs = r.nowMs - this.local.now()
      if (r.status === -1) throw fingerprintError(this.shape, (raw as unknown[])[1])
      if (r.status !== -2) return r
      if (attempt > 0) throw replyError('redis exact script (generation window)', raw)
      estimate = r.nowMs
    }
  }

  /** KEYS of a call for generations gb..gb+K−1: the fingerprint key, then one key per generation (cached for the last gb). */
  private keysFor(gb: number, K: number): readonly string[] {
    if (this.keysGb !== gb || this.keys.length !== K + 1) {
      const keys = [this.shape.fpKey]
      for (let j = 0; j < K; j++) keys.push(this.shape.keyPrefix + 'g' + (gb + j))
      this.keys = keys
      this.keysGb = gb
    }
    return this.keys
  }

  /** KEYS and ARGV of one call: fixed args, time, op, and the key's cells in each candidate generation. */
  private request(op: number, key: string, delta: number, limit: number, estimateMs: number, explicit: boolean) {
    const s = this.shape
    const N = s.generations
    const L = s.levels
    const gEst = Math.floor(estimateMs / s.periodMs)
    // the live window O..O+N−1 (O = the oldest) is covered for O = gEst or gEst − 1: the
    // estimate runs ahead of the server by about half a round trip, so near a boundary it
    // may already be in the next period; further off, the script says so and we retry once
    const gb = gEst - 1
    const K = N + 1
    const keys = this.keysFor(gb, K)
    // the K×L indexes travel as one argument, decimal and comma-separated: an all-string
    // command is written to the socket in one piece (a Buffer argument would split it)
    if (op === OP_CHECK) {
      const args: (string | number)[] = [explicit ? String(estimateMs) : '', op, delta, limit, gb, K, '']
      return { keys, args }
    }
    // hashers first: deriving one hashes its seed through the shared key scratch buffer
    const hs = this.genHashers
    for (let j = 0; j < K; j++) hs[j] = this.hashers.get(gb + j)
    keyBytes(key)
    const idx = this.idx
    let list = ''
    for (let j = 0; j < K; j++) {
      const h = hs[j]
      h.hashInto(keyView, keyLength)
      kmIndexes(h.hashHi, h.hashLo, L, s.cellsPerLevel, idx)
      for (let i = 0; i < L; i++) list += (j === 0 && i === 0 ? '' : ',') + idx[i]
    }
    const args: (string | number)[] = [explicit ? String(estimateMs) : '', op, delta, limit, gb, K, list]
    return { keys, args }
  }
}

/** A grudge error (bad key, mismatch, closed…): thrown to the caller, never absorbed by a failure mode. */
export function isCoded(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return typeof code === 'string' && code.startsWith('ERR_GRUDGE_')
}

function decode(raw: unknown): Reply {
  if (!Array.isArray(raw) || raw.length !== 3 || typeof raw[0] !== 'number') throw replyError('redis exact script', raw)
  const status = raw[0]
  const score = status === -1 || status === -2 ? NaN : Number(raw[1])
  const nowMs = Number(raw[2])
  if (!Number.isFinite(nowMs)) throw replyError('redis exact script', raw)
  return { status, score, nowMs }
}
