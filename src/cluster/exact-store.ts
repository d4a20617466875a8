import { systemClock, type Clock } from '../clock.js'
import { GrudgeError } from '../errors.js'
import type { Hasher } from '../hash/hasher.js'
import { keyBytes, keyLength, keyView } from '../hash/key-bytes.js'
import { checkFinite } from '../sketch/sketch.js'
import { Rotator } from '../sketch/rotator.js'
import type { ScoreStore, StoreResult, StoreSpec } from '../limit/store.js'
import { describeConnectError, type RedisLike } from './client.js'
import {
  GenerationHashers,
  adoptSchedule,
  evalScript,
  fingerprintError,
  fleetShape,
  replyError,
  shaOf,
  withTimeout,
  type FleetShape,
  type Schedule,
  type SharedClient,
} from './connection.js'
import type { ParsedRedisOptions } from './options.js'
import { exactScript } from './scripts.js'
import { blockedIndexes, slotHasher } from './fleet-hash.js'

const OP_TRY = 0
const OP_ADD = 1
const OP_READ = 2
const OP_CHECK = 3
/** An offset o in a block travels as the letter of code 97 + o (the exact script's `string.byte(…) − 97`). */
const OFFSET_LETTERS = Array.from({ length: 16 }, (_, o) => String.fromCharCode(97 + o))

/** The startup check is off the request path: it may also wait for the first connection (at least 2 s). */
export const READY_TIMEOUT_MS = (timeoutMs: number): number => Math.max(timeoutMs, 2000)

/** A decoded script reply. */
interface Reply {
  status: number
  score: number
  nowMs: number
  /** The newest live generation id the script used. */
  newest: number
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
  /** Per slot: the KEYS of the last window (gb) it was called with. */
  private readonly keysCache: { gb: number; keys: readonly string[] }[] = []
  /** Picks a key's slot (the same for every generation). */
  private readonly slotHash: Hasher
  /** Server time minus local time in ms, from the last reply. */
  private offsetMs = 0
  private readonly local: Clock
  private down = false
  /** The slots whose calls are failing (−1: the whole store, on one node or at startup). */
  private readonly downSlots = new Set<number>()
  /** A Redis Cluster: failures are tracked per slot (a dead master stops its slots only). */
  private readonly perSlot: boolean
  /** Per slot, on a Redis Cluster: performance.now() before which its calls skip Redis. */
  private readonly slotDownUntil: Float64Array
  /** performance.now() when Redis started failing (for the 'up' event). */
  private downSinceMs = 0
  private fallback: Rotator | undefined
  private closed = false
  /** The period and hi in use: the policy's, or the fleet's recorded period (spec/cluster.md, "Schedule"). */
  private schedule: Schedule
  /** The newest generation id a reply named: requests never start below it (a server clock stepping back). */
  private newest = -Infinity

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
    this.idx = new Uint32Array(this.shape.levels + 1)
    this.slotHash = slotHasher(this.shape.base, o.secret)
    this.schedule = adoptSchedule(this.shape, this.shape.periodMs)
    this.local = o.clock ?? systemClock
    this.perSlot = shared.isCluster && this.shape.slots > 1
    this.slotDownUntil = new Float64Array(this.shape.slots).fill(-Infinity)
    shared.acquire()
    // start connecting now so the first request does not pay for it
    shared.get().catch(() => {})
  }

  /**
   * Check Redis once, without a failure mode: the fingerprint is compared (and stored with
   * the period when absent; a recorded period is adopted). Call it at startup to refuse to
   * start beside an incompatible fleet. Waits up to max(timeoutMs, 2000) ms, which covers the
   * first connection. With `onStoreError: 'local'` an unreachable Redis does not refuse the
   * start: the store emits a `'down'` event and decides in process until Redis answers
   * (a fingerprint mismatch found later still rejects every request). With `'open'` or
   * `'closed'` it does refuse, since every request would be admitted or denied unchecked.
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT` on a mismatch;
   * `ERR_GRUDGE_CLUSTER_UNAVAILABLE` when Redis does not answer in time (naming host, port
   * and the cause, e.g. connection refused), except with `onStoreError: 'local'`;
   * `ERR_GRUDGE_CLUSTER_CLIENT` when ioredis cannot be loaded
   */
  async ready(): Promise<void> {
    this.assertOpen()
    const waitMs = READY_TIMEOUT_MS(this.o.timeoutMs)
    try {
      // every slot has its own record (on a cluster, on its own master)
      await Promise.all(this.shape.fpKeys.map((_, slot) => this.call(OP_CHECK, '', 0, 0, waitMs, slot)))
      this.recovered(-1)
    } catch (err) {
      if (err instanceof GrudgeError) throw err
      const message = this.shared.explain(err, waitMs)
      if (this.o.onStoreError === 'local') {
        this.failed(err, `${message}; starting on the in-process fallback`, -1)
        return
      }
      throw new GrudgeError('ERR_GRUDGE_CLUSTER_UNAVAILABLE', message, { cause: err })
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
    if (limit > this.schedule.hi && this.schedule.hi !== this.shape.hi) throw this.scheduleError(limit)
    const slot = this.slotOf(key)
    if (!this.skipRedis(slot)) {
      try {
        const r = await this.call(OP_TRY, key, cost, limit, this.o.timeoutMs, slot)
        this.recovered(slot)
        return { admitted: r.status === 1, score: r.score }
      } catch (err) {
        this.failed(err, undefined, slot)
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
    const slot = this.slotOf(key)
    if (!this.skipRedis(slot)) {
      try {
        const r = await this.call(OP_ADD, key, delta, 0, this.o.timeoutMs, slot)
        this.recovered(slot)
        return r.score
      } catch (err) {
        this.failed(err, undefined, slot)
      }
    }
    return this.o.onStoreError === 'local' ? this.localRotator().updateAndEstimate(key, delta) : NaN
  }

  /** The key's aggregate in the oldest live generation (NaN or the local answer on failure, as {@link RedisExactStore.add}). */
  async read(key: string): Promise<number> {
    this.assertOpen()
    const slot = this.slotOf(key)
    if (!this.skipRedis(slot)) {
      try {
        const r = await this.call(OP_READ, key, 0, 0, this.o.timeoutMs, slot)
        this.recovered(slot)
        return r.score
      } catch (err) {
        this.failed(err, undefined, slot)
      }
    }
    return this.o.onStoreError === 'local' ? this.localRotator().estimate(key) : NaN
  }

  /** Cells held in this process: 0, or the local fallback Rotator's while Redis is failing. */
  sizeBytes(): number {
    return this.fallback?.sizeBytes() ?? 0
  }

  /**
   * Whether a write of `key` now goes to the in-process fallback only (`onStoreError:
   * 'local'` while the key's slot, or the whole store, is failing): that copy is dropped when
   * Redis answers again, so what it lowered is lowered for the outage only.
   * @internal
   */
  writesLocally(key: string): boolean {
    if (this.o.onStoreError !== 'local' || !this.down) return false
    return this.downSlots.has(-1) || (this.perSlot && this.downSlots.has(this.slotOf(key)))
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

  /** The slot (0..S−1) of a request key: its sub-sketch, one Redis Cluster hash tag. */
  private slotOf(key: string): number {
    if (this.shape.slots === 1) return 0
    keyBytes(key)
    const sh = this.slotHash
    sh.hashInto(keyView, keyLength)
    return (sh.hashLo >>> 0) % this.shape.slots
  }

  private skipRedis(slot: number): boolean {
    // the factory's stores share one client: a failure seen by any of them holds for all; on a
    // Redis Cluster a failure holds for the slot that failed only (its master may be the only one down)
    const now = performance.now()
    if (now >= this.shared.downUntil && (!this.perSlot || now >= this.slotDownUntil[slot])) return false
    if (!this.downSlots.has(slot)) this.wentDown(undefined, undefined, slot)
    return true
  }

  /** A Redis failure of a call to `slot` (−1: every slot, e.g. at startup). */
  private failed(err: unknown, message: string | undefined, slot: number): void {
    if (isCoded(err)) throw err
    if (!this.downSlots.has(slot)) this.wentDown(err, message, slot)
    const until = performance.now() + this.o.retryMs
    if (this.perSlot && slot >= 0) this.slotDownUntil[slot] = Math.max(this.slotDownUntil[slot], until)
    else this.shared.downUntil = Math.max(this.shared.downUntil, until)
    this.o.onError?.(err)
  }

  /** Which keys a failure of `slot` concerns, for the log line (a Redis Cluster: that slot's hash tag only). */
  private scope(slot: number): string {
    if (!this.perSlot || slot < 0) return ''
    const tag = /\{[^}]*\}/.exec(this.shape.keyPrefixes[slot])?.[0] ?? ''
    return ` for the keys of slot ${slot} of ${this.shape.slots} (Redis Cluster hash tag ${tag}; the other slots keep deciding on Redis)`
  }

  /** The transition of `slot` to failing: one 'down' event per slot and outage (never per request). */
  private wentDown(err: unknown, message: string | undefined, slot: number): void {
    // on one node every slot shares the client: the first failure is the store's outage
    const s = this.perSlot ? slot : -1
    if (this.downSlots.has(s)) return
    this.downSlots.add(s)
    this.down = true
    if (this.downSlots.size === 1) this.downSinceMs = performance.now()
    const mode = this.o.onStoreError
    const what =
      mode === 'local'
        ? 'deciding on the in-process fallback (a Rotator of the same shape, per instance)'
        : mode === 'open'
          ? 'admitting every request unchecked (onStoreError: open)'
          : 'denying every request (onStoreError: closed)'
    const cause = message ?? (err === undefined ? 'failing' : describeConnectError(err))
    this.shared.emit({
      type: 'down',
      policy: this.spec.name,
      onStoreError: mode,
      error: err,
      message: `grudge: ${this.spec.name}: redis at ${this.shared.target}: ${cause}; ${what}${this.scope(s)} until Redis answers (retry every ${this.o.retryMs} ms)`,
    })
  }

  /** A success of a call to `slot` (−1: every slot answered): ends that slot's outage; the last one ends the store's. */
  private recovered(slot: number): void {
    if (!this.down) return
    if (slot < 0 || !this.perSlot) this.downSlots.clear()
    else {
      this.downSlots.delete(slot)
      this.slotDownUntil[slot] = -Infinity
      if (this.downSlots.size > 0) return
    }
    this.down = false
    // the local insurance covered the outage only; Redis is the truth again
    this.fallback?.close()
    this.fallback = undefined
    const downForMs = Math.round(performance.now() - this.downSinceMs)
    this.shared.emit({
      type: 'up',
      policy: this.spec.name,
      downForMs,
      message: `grudge: ${this.spec.name}: redis at ${this.shared.target} answers again after ${downForMs} ms; deciding on the shared cells`,
    })
  }

  /** Rotate on the fleet's recorded period from now on (one 'schedule' event). */
  private adopt(recordedPeriodMs: number): void {
    if (!Number.isFinite(recordedPeriodMs) || recordedPeriodMs < 1) {
      throw replyError('redis exact script (recorded period)', recordedPeriodMs)
    }
    this.schedule = adoptSchedule(this.shape, recordedPeriodMs)
    this.newest = -Infinity
    this.keysCache.length = 0
    if (this.schedule.message !== undefined) {
      this.shared.emit({ type: 'schedule', policy: this.spec.name, message: `grudge: ${this.schedule.message}` })
    }
  }

  private scheduleError(limit: number): GrudgeError {
    return new GrudgeError(
      'ERR_GRUDGE_CLUSTER_SCHEDULE',
      `${this.shape.keyPrefix.slice(0, -1)}: expected a limit ≤ ${this.schedule.hi}, what the fleet's recorded period of ${this.schedule.periodMs} ms can hold at this policy's rate (${this.shape.decay.ratePerSecond}/s × (N − 1) periods), received ${limit}`,
    )
  }

  private localRotator(): Rotator {
    if (this.fallback === undefined) {
      this.fallback = new Rotator({
        sketch: {
          ...this.spec.sketch,
          levels: this.shape.levels,
          cellsPerLevel: this.shape.cellsPerLevel,
          hi: this.schedule.hi,
        },
        generations: this.shape.generations,
        periodMs: this.schedule.periodMs,
        clock: this.spec.clock,
        ticker: this.spec.ticker,
      })
    }
    return this.fallback
  }

  /** One operation: one EVALSHA (another only after NOSCRIPT, a clock far off or a new schedule), within timeoutMs. */
  private call(
    op: number,
    key: string,
    delta: number,
    limit: number,
    timeoutMs = this.o.timeoutMs,
    slot = -1,
  ): Promise<Reply> {
    const c = this.shared.ready
    const task =
      c !== undefined
        ? this.exec(c, op, key, delta, limit, slot)
        : this.shared.get().then((c) => this.exec(c, op, key, delta, limit, slot))
    return withTimeout(task, timeoutMs)
  }

  private async exec(
    client: RedisLike,
    op: number,
    key: string,
    delta: number,
    limit: number,
    slot: number,
  ): Promise<Reply> {
    const explicit = this.o.clock !== undefined
    const estimate = explicit ? this.local.now() : this.local.now() + this.offsetMs
    let gb = NaN
    for (let attempt = 0; ; attempt++) {
      const { keys, args } = this.request(op, key, delta, limit, estimate, explicit, gb, slot)
      const raw = await evalScript(client, this.script, this.sha, keys, args, false)
      const r = decode(raw)
      if (!explicit) this.offsetMs = r.nowMs - this.local.now()
      if (r.status === -1) throw fingerprintError(this.shape, (raw as unknown[])[1])
      if (attempt > 2) throw replyError('redis exact script (generation window)', raw)
      if (r.status === -3) {
        this.adopt(Number(String((raw as unknown[])[1])))
        continue
      }
      if (r.newest > this.newest) this.newest = r.newest
      if (r.status !== -2) return r
      gb = r.newest - this.shape.generations
    }
  }

  /** KEYS of a call to `slot` for generations gb..gb+K−1: its fingerprint key, then one key per generation (cached per slot for the last gb). */
  private keysFor(slot: number, gb: number, K: number): readonly string[] {
    let c = this.keysCache[slot]
    if (c === undefined || c.gb !== gb || c.keys.length !== K + 1) {
      const prefix = this.shape.keyPrefixes[slot]
      const keys = [this.shape.fpKeys[slot]]
      for (let j = 0; j < K; j++) keys.push(prefix + 'g' + (gb + j))
      this.keysCache[slot] = c = { gb, keys }
    }
    return c.keys
  }

  /** KEYS and ARGV of one call: fixed args, time, op, and the key's cells in each candidate generation. */
  private request(
    op: number,
    key: string,
    delta: number,
    limit: number,
    estimateMs: number,
    explicit: boolean,
    gbGiven: number,
    slotGiven: number,
  ) {
    const s = this.shape
    const N = s.generations
    const L = s.levels
    const period = this.schedule.periodMs
    const gEst = Math.floor(estimateMs / period)
    // the live window O..O+N−1 (O = the oldest) is covered for O = gEst or gEst − 1: the
    // estimate runs ahead of the server by about half a round trip, so near a boundary it
    // may already be in the next period; further off, the script says so and we retry with
    // its window. Never below the newest generation seen: a clock that stepped back stays there.
    const gb = Number.isNaN(gbGiven) ? Math.max(gEst - 1, this.newest - N) : gbGiven
    const K = N + 1
    // per generation one argument: the L offsets as letters, then the block id (decimal); an
    // all-string command is written to the socket in one piece (a Buffer argument would split it)
    const args: (string | number)[] = [
      explicit ? String(estimateMs) : '',
      String(period),
      s.ratePerMsArg,
      s.loArg,
      this.schedule.hiArg,
      op,
      delta,
      limit,
      gb,
    ]
    if (op === OP_CHECK) {
      for (let j = 0; j < K; j++) args.push('')
      return { keys: this.keysFor(slotGiven < 0 ? 0 : slotGiven, gb, K), args }
    }
    // hashers first: deriving one hashes its seed through the shared key scratch buffer
    const hs = this.genHashers
    for (let j = 0; j < K; j++) hs[j] = this.hashers.get(gb + j)
    // the slot was picked by the caller (slotOf), before the failure check
    keyBytes(key)
    const keys = this.keysFor(slotGiven, gb, K)
    const idx = this.idx
    for (let j = 0; j < K; j++) {
      const h = hs[j]
      h.hashInto(keyView, keyLength)
      blockedIndexes(h.hashHi, h.hashLo, L, s.blockCells, s.blocks, idx)
      let a = ''
      for (let i = 1; i <= L; i++) a += OFFSET_LETTERS[idx[i]]
      args.push(a + idx[0])
    }
    return { keys, args }
  }
}

/** A grudge error (bad key, mismatch, closed…): thrown to the caller, never absorbed by a failure mode. */
export function isCoded(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return typeof code === 'string' && code.startsWith('ERR_GRUDGE_')
}

/** The score's two 32-bit words (the exact script's reply) read back as one float64. */
const scoreWords = new Int32Array(2)
const scoreValue = new Float64Array(scoreWords.buffer)

function decode(raw: unknown): Reply {
  if (!Array.isArray(raw) || typeof raw[0] !== 'number') throw replyError('redis exact script', raw)
  const status = raw[0]
  if (status === -1 || status === -3) {
    // the prologue's replies: the stored record or period as text, then now
    const nowMs = Number(raw[2])
    if (raw.length !== 4 || !Number.isFinite(nowMs)) throw replyError('redis exact script', raw)
    return { status, score: NaN, nowMs, newest: NaN }
  }
  if (raw.length !== 5 || typeof raw[1] !== 'number' || typeof raw[2] !== 'number') {
    throw replyError('redis exact script', raw)
  }
  scoreWords[0] = raw[1]
  scoreWords[1] = raw[2]
  const nowMs = raw[3] as number
  const newest = raw[4] as number
  if (!Number.isFinite(nowMs) || !Number.isFinite(newest)) throw replyError('redis exact script', raw)
  return { status, score: status < 0 ? NaN : scoreValue[0], nowMs, newest }
}
