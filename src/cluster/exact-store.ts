import { systemClock, type Clock } from '../clock.js'
import { GrudgeError } from '../errors.js'
import type { Hasher } from '../hash/hasher.js'
import { keyBytes, keyLength, keyView } from '../hash/key-bytes.js'
import { Sketch, checkFinite } from '../sketch/sketch.js'
import { Rotator } from '../sketch/rotator.js'
import { DEFAULT_LEVELS } from '../sketch/shape.js'
import {
  LoadMeter,
  METER_BYTES,
  checkSizing,
  type EarlyGeneration,
  type ResolvedSizing,
} from '../sketch/rotator-sizing.js'
import type { GenerationShapes, ScoreStore, StoreResult, StoreSpec } from '../limit/store.js'
import { describeConnectError, type RedisLike } from './client.js'
import {
  GenerationHashers,
  RedisTimeout,
  adoptSchedule,
  evalScript,
  fingerprintError,
  replyError,
  shaOf,
  withTimeout,
  type FleetShape,
  type Schedule,
  type SharedClient,
} from './connection.js'
import type { ParsedRedisOptions } from './options.js'
import { exactScript } from './scripts.js'
import { BLOCK_CELLS, blockFoldable, blockShape, blockedIndexes, slotHasher } from './fleet-hash.js'
import {
  TWIN_SUFFIX,
  checkAdoptionLag,
  fleetWindowRate,
  policyFleetShape,
  promotionAgeMs,
  proposeCells,
  proposeEarlyCells,
  reportLagDrops,
  runShapeRound,
  shapeRecord,
  twinKey,
  twinRecord,
  type FleetWindowMark,
  type LagNotice,
  type ShapeAsk,
} from './fleet-sizing.js'

const OP_TRY = 0
const OP_ADD = 1
const OP_READ = 2
const OP_CHECK = 3
/** An offset o in a block travels as the letter of code 97 + o (the exact script's `string.byte(…) − 97`). */
const OFFSET_LETTERS = Array.from({ length: 16 }, (_, o) => String.fromCharCode(97 + o))

/**
 * The longest a caller's calls skip the fingerprint record, in ms of its clock (1000): a call
 * at least this long after the last one that read it reads it again (spec/cluster.md, "The
 * record check"). So a record changed under a running instance — another fleet's fingerprint
 * or period, after a FLUSHALL or an expiry — is refused (`ERR_GRUDGE_CLUSTER_FINGERPRINT`) or
 * adopted at its first call RECORD_CHECK_MS or more after its last check; the calls between
 * read it only when their generation is newer than any reply named to this caller.
 */
export const RECORD_CHECK_MS = 1000

/** The startup check is off the request path: it may also wait for the first connection (at least 2 s). */
export const READY_TIMEOUT_MS = (timeoutMs: number): number => Math.max(timeoutMs, 2000)

/** A generation's recorded shape (self-sized policy): M_k and its slot strings' blocked layout. */
interface GenShape {
  /** M_k, cells per level of the whole generation (a power of two). */
  readonly cells: number
  /** W_k = min(BLOCK_CELLS, ceil(M_k / S)), cells per level in one block. */
  readonly blockCells: number
  /** B_k = ceil(ceil(M_k / S) / W_k), blocks per slot string. */
  readonly blocks: number
}

/**
 * A twin as adopted (early growth, spec/cluster.md "Early growth"): its shape, the server ms
 * from which it decides in its base's place, and whether it folds its base then (`fold`: not
 * written before its switch, made of its base's cells at it) or is written beside it from its
 * start.
 */
interface Twin {
  readonly shape: GenShape
  readonly switchAtMs: number
  readonly fold: boolean
}

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
 * server (spec/cluster.md). A self-sized policy (`spec.sizing`) runs the sized variant of the
 * script on each generation's recorded shape (spec/cluster.md "Shapes"): the store learns the
 * shapes of a call's generations before the call (one shared shape round when one is unknown,
 * within the call's timeoutMs) and proposes the next generation's from its load meter. Built by
 * {@link redisStore}; not constructed directly.
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
  /** The batches collecting this turn's requests until sent: [0] on one node, one per slot on a Redis Cluster (see {@link RedisExactStore.call}). */
  private readonly batches: (Batch | undefined)[] = []
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
  /** The resolved sizing (a self-sized policy: spec/cluster.md "Shapes"), or undefined for a fixed shape. */
  private readonly sizing: ResolvedSizing | undefined
  /** The youngest generation's load meter (self-sized only). */
  private readonly meter: LoadMeter | null
  /** The generation id the meter measures: the newest G a reply named (NaN before the first). */
  private meterGen = NaN
  /** [0] the fleet's admitted cost of generation meterGen as last read from Redis, [1] this instance's cost not yet reported. */
  private readonly fleetCost = new Float64Array(2)
  /** Recorded shapes by generation id: the fleet's, adopted (self-sized only). */
  private readonly shapes = new Map<number, GenShape>()
  /** This instance's proposal by generation id, decided once from its meter (for a generation not yet recorded). */
  private readonly proposals = new Map<number, number>()
  /** Cells per level this instance proposes for a generation it finds unrecorded with nothing recorded before it. */
  private readonly initialCells: number
  /** Whether onSizingLimit heard each kind already. */
  private readonly limitReported = { budget: false, invalid: false }
  /** Whether the `'fleet-lag'` event was emitted (once per store, `reportLagDrops`). */
  private readonly lagNotice: LagNotice = { reported: false }
  /** The shape round in flight, shared by every call that waits for a record. */
  private round: Promise<void> | undefined
  /** Server time in ms (estimate) of the next fire-and-forget cost report. */
  private nextReportMs = -Infinity
  /** Per slot (each has its own record): local clock ms of the last call sent that reads the fingerprint record (see {@link RECORD_CHECK_MS}). */
  private readonly recordCheckedMs: Float64Array
  /** Twins by generation id (early growth): the fleet's, adopted (self-sized only). */
  private readonly twins = new Map<number, Twin>()
  /** Per generation id without a twin here: the server time estimate at which the last shape round that read its early record was sent. */
  private readonly twinsReadMs = new Map<number, number>()
  /** Server ms of the last early-growth check (one per `sizing.checkEveryMs`, at a shape round). */
  private lastEarlyCheckMs = -Infinity
  /** Cells per level the last early check wanted for a twin (0: none): a twin is proposed at the second check in a row that wants one. */
  private earlyWanted = 0
  /** The fleet's cost of the youngest at the last early check (the fleet's window rate, `fleetWindowRate`). */
  private readonly earlyMark: FleetWindowMark = { gen: NaN, ms: NaN, cost: 0 }
  /** performance.now() before which a call does not wait for fresh early records (a shape round failed). */
  private twinReadsDownUntil = -Infinity
  /** Twins adopted here. */
  earlyGrowths = 0
  /** Recorded generations adopted here whose shape differs from the generation's before it. */
  private resizeCount = 0
  /** The window indexes of the twins of the call being built (scratch, see {@link RedisExactStore.request}). */
  private readonly windowTwins: number[] = []

  /** @internal built by {@link redisStore} */
  constructor(
    private readonly spec: StoreSpec,
    private readonly o: ParsedRedisOptions,
    private readonly shared: SharedClient,
  ) {
    this.sizing =
      spec.sizing === undefined
        ? undefined
        : checkSizing(
            spec.sizing,
            spec.sketch?.levels ?? DEFAULT_LEVELS,
            spec.generations,
            spec.periodMs,
            new Sketch({ ...spec.sketch, levels: 1, cellsPerLevel: 1, clock: undefined }).decay,
          )
    // a twin's adoption lag D = 2·checkEveryMs + timeoutMs must end within a generation's life,
    // or this instance's field in the fleet lag record drops every twin (spec/cluster.md "Early growth")
    if (this.sizing !== undefined) {
      const c = this.sizing.checkEveryMs
      checkAdoptionLag(
        2 * c + o.timeoutMs,
        spec.generations,
        spec.periodMs,
        '"sizing.checkEveryMs" and "timeoutMs"',
        `2 × sizing.checkEveryMs + timeoutMs = 2 × ${c} + ${o.timeoutMs}`,
      )
    }
    // a self-sized policy's shape in the fingerprint is its largest, the text gains |sized; its
    // cells live in Redis, so this process holds only the fallback: no budget to adjust here
    const { shape, initialCells } = policyFleetShape(spec, o, this.sizing)
    this.shape = shape
    this.initialCells = initialCells
    this.meter = this.sizing === undefined ? null : new LoadMeter(0)
    this.script = exactScript(this.shape.scriptConstants, this.sizing !== undefined)
    this.sha = shaOf(this.script)
    this.hashers = new GenerationHashers(this.shape.base, o.secret)
    this.idx = new Uint32Array(this.shape.levels + 1)
    this.slotHash = slotHasher(this.shape.base, o.secret)
    this.schedule = adoptSchedule(this.shape, this.shape.periodMs)
    this.local = o.clock ?? systemClock
    this.perSlot = shared.isCluster && this.shape.slots > 1
    this.slotDownUntil = new Float64Array(this.shape.slots).fill(-Infinity)
    this.recordCheckedMs = new Float64Array(this.shape.slots).fill(-Infinity)
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
   * Self-sized, it also records (if absent) and adopts the shapes of the live generations.
   * A client passed as `redis` that auto-pipelines `EVALSHA` is reported once per factory with
   * an `'autopipelining'` event (see `RedisStoreEvent`).
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT` on a mismatch (also a self-sized
   * instance beside a fixed-shape one of the same policy); `ERR_GRUDGE_CLUSTER_SHAPE` for a shape
   * record this instance cannot adopt;
   * `ERR_GRUDGE_CLUSTER_UNAVAILABLE` when Redis does not answer in time (naming host, port
   * and the cause, e.g. connection refused), except with `onStoreError: 'local'`;
   * `ERR_GRUDGE_CLUSTER_CLIENT` when ioredis cannot be loaded
   */
  async ready(): Promise<void> {
    this.assertOpen()
    // a client of the user's that auto-pipelines EVALSHA: one 'autopipelining' event (the logger's)
    this.shared.checkPipelining(this.spec.name, 'evalsha')
    const waitMs = READY_TIMEOUT_MS(this.o.timeoutMs)
    try {
      // every slot has its own record (on a cluster, on its own master)
      await Promise.all(this.shape.fpKeys.map((_, slot) => this.call(OP_CHECK, '', 0, 0, waitMs, slot)))
      // self-sized: the live generations' records, so a request does not wait for them
      if (this.sizing !== undefined) {
        const task = this.shared.get().then((c) => this.knowShapes(c, this.windowStart(this.estimateNow()), waitMs))
        await withTimeout(task, waitMs)
      }
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
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT`, `ERR_GRUDGE_CLUSTER_CLOSED`;
   * `ERR_GRUDGE_CLUSTER_SHAPE` (self-sized: a generation's shape record it cannot adopt)
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

  /** Bytes held in this process: the 2 KiB load meter when self-sized, plus the local fallback Rotator's while Redis is failing. */
  sizeBytes(): number {
    return (this.meter === null ? 0 : METER_BYTES) + (this.fallback?.sizeBytes() ?? 0)
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
    if (this.closed) throw this.closedError()
  }

  private closedError(): GrudgeError {
    return new GrudgeError(
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
    // generation ids are by period: what was recorded or proposed under this policy's own is void
    this.shapes.clear()
    this.proposals.clear()
    this.twins.clear()
    this.twinsReadMs.clear()
    this.lastEarlyCheckMs = -Infinity
    this.meterGen = NaN
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
          cellsPerLevel: this.sizing === undefined ? this.shape.cellsPerLevel : this.fallbackCells(this.sizing),
          hi: this.schedule.hi,
        },
        generations: this.shape.generations,
        periodMs: this.schedule.periodMs,
        clock: this.spec.clock,
        ticker: this.spec.ticker,
        // self-sized: the fallback sizes its own generations too, from the youngest recorded size
        ...(this.spec.sizing === undefined ? {} : { sizing: this.spec.sizing }),
      })
    }
    return this.fallback
  }

  /** The fallback's first generation: the youngest recorded shape (else the initial size), within [min, max]. */
  private fallbackCells(sizing: ResolvedSizing): number {
    let best = -Infinity
    let cells = this.initialCells
    for (const [id, g] of this.shapes) {
      if (id > best && !(id > this.meterGen)) {
        best = id
        cells = g.cells
      }
    }
    return Math.max(sizing.minCellsPerLevel, Math.min(sizing.maxCellsPerLevel, cells))
  }

  /**
   * The live generations' shapes for telemetry (`stats().perPolicy`, Prometheus), oldest
   * (deciding) first: a fixed shape's N × cellsPerLevel; self-sized, the fleet's recorded shapes
   * as this instance last saw them (this instance's proposal for one not read yet, before the
   * first reply for all N), the oldest's twin in its place
   * once it decides, and a younger generation's folding twin in its place from its switch. `early` lists the window's twins (early growth, spec/cluster.md "Early
   * growth": `twin: true`, `decidesAtMs` the fleet's switch time in server ms, `deciding` from
   * then, by this instance's server-time estimate); `resizes` counts recorded generations whose
   * shape differs from the one before plus the twins adopted (`earlyGrowths`). Allocates.
   */
  generationShapes(): GenerationShapes {
    const N = this.shape.generations
    if (this.sizing === undefined) {
      return { generationCellsPerLevel: Array.from({ length: N }, () => this.shape.cellsPerLevel), resizes: 0 }
    }
    const cells: number[] = []
    const early: EarlyGeneration[] = []
    if (Number.isNaN(this.meterGen)) {
      // no reply yet (before ready(), or Redis down since startup): what this instance proposes
      for (let j = 0; j < N; j++) cells.push(this.initialCells)
    } else {
      const now = this.estimateNow()
      for (let id = this.meterGen - N + 1; id <= this.meterGen; id++) {
        const tw = this.twins.get(id)
        const deciding = tw !== undefined && cells.length === 0 && now >= tw.switchAtMs
        if (tw !== undefined) {
          early.push({
            generation: cells.length,
            cellsPerLevel: tw.shape.cells,
            twin: true,
            decidesAtMs: tw.switchAtMs,
            deciding,
          })
        }
        // a generation not read yet: this instance's proposal for it; a folding twin past its
        // switch replaces its base in a younger generation too (the base is no longer written)
        const base = this.shapes.get(id)?.cells ?? this.proposals.get(id) ?? this.initialCells
        const replaced = deciding || (tw !== undefined && tw.fold && now >= tw.switchAtMs)
        cells.push(replaced ? tw.shape.cells : base)
      }
    }
    return {
      generationCellsPerLevel: cells,
      resizes: this.resizeCount + this.earlyGrowths,
      early,
      earlyGrowths: this.earlyGrowths,
    }
  }

  /**
   * Self-sized: the recorded shapes of the live generations as this instance last saw them
   * (the youngest a reply named and the N − 1 before it), oldest first, with each one's twin
   * (early growth: its cells per level and the server ms from which it decides in the base's
   * place, when it is the oldest) (tests of the fleet's agreement). Allocates.
   * @internal
   */
  liveShapes(): { id: number; cellsPerLevel: number; provisional: boolean; twin?: number; switchAtMs?: number }[] {
    const out: { id: number; cellsPerLevel: number; provisional: boolean; twin?: number; switchAtMs?: number }[] = []
    if (Number.isNaN(this.meterGen)) return out
    for (let id = this.meterGen - this.shape.generations + 1; id <= this.meterGen; id++) {
      const g = this.shapes.get(id)
      const tw = this.twins.get(id)
      if (g !== undefined) {
        out.push({
          id,
          cellsPerLevel: g.cells,
          provisional: false,
          ...(tw === undefined ? {} : { twin: tw.shape.cells, switchAtMs: tw.switchAtMs }),
        })
      }
    }
    return out
  }

  /**
   * Self-sized: resolves once the shape round in flight (a cost report, an early check) is done,
   * whatever its outcome (tests on a fake clock, which make the fleet's rounds deterministic).
   * @internal
   */
  async settled(): Promise<void> {
    await this.round?.catch(() => {})
  }

  /**
   * One operation, within timeoutMs. A check runs alone; a request joins the batch collecting
   * for its slot: the requests a process issues in one event-loop turn (those of the I/O events
   * it handles in one poll) leave in one EVALSHA at the turn's check phase (`setImmediate`),
   * decided one after the other inside one script (spec/cluster.md, "Batches"), at most
   * {@link MAX_BATCH} per call. The batch's timer starts with its first request.
   */
  private call(
    op: number,
    key: string,
    delta: number,
    limit: number,
    timeoutMs = this.o.timeoutMs,
    slot = -1,
  ): Promise<Reply> {
    if (op === OP_CHECK) {
      const s = slot < 0 ? 0 : slot
      const item = new Pending(op, key, delta, limit, s)
      const b = new Batch(-1, this.o.clock !== undefined ? this.local.now() : NaN)
      b.items.push(item)
      b.slots.push(s)
      this.send(b, timeoutMs)
      return item.promise
    }
    const explicit = this.o.clock !== undefined
    // one node holds every slot: one batch for all; on a Redis Cluster one per slot (its master)
    const at = this.shared.isCluster ? slot : 0
    let b = this.batches[at]
    // an explicit clock that moved since the batch opened: the request decides at its own time
    if (b === undefined || b.items.length >= MAX_BATCH || (explicit && b.nowMs !== this.local.now())) {
      b = new Batch(at, explicit ? this.local.now() : NaN)
      this.batches[at] = b
      this.send(b, timeoutMs)
    }
    const item = new Pending(op, key, delta, limit, slot)
    b.items.push(item)
    if (!b.slots.includes(slot)) b.slots.push(slot)
    return item.promise
  }

  /** Start `b`'s timer now and its EVALSHA at this turn's check phase (its requests join it until then). */
  private send(b: Batch, timeoutMs: number): void {
    const timer = setTimeout(() => b.fail(new RedisTimeout(timeoutMs)), timeoutMs)
    setImmediate(() => {
      if (b.at >= 0 && this.batches[b.at] === b) this.batches[b.at] = undefined
      const c = this.shared.ready
      if (c === undefined && this.closed) {
        // closed meanwhile and the client released (e.g. after a failed ready() whose other
        // checks were still due): asking for it would create one anew, never disconnected
        clearTimeout(timer)
        b.fail(this.closedError())
        return
      }
      const task = c !== undefined ? this.exec(c, b) : this.shared.get().then((c) => this.exec(c, b))
      task.then(
        () => {
          clearTimeout(timer)
          b.settle()
        },
        (err: unknown) => {
          clearTimeout(timer)
          b.fail(err)
        },
      )
    })
  }

  /** Run batch `b` (its replies left in its items), repeating after a schedule adopted or a window missed. */
  private async exec(client: RedisLike, b: Batch): Promise<void> {
    // without ready(): the first call says it (once per factory; a flag after that)
    this.shared.checkPipelining(this.spec.name, 'evalsha')
    const explicit = this.o.clock !== undefined
    const estimate = explicit ? b.nowMs : this.estimateNow()
    const check = b.items[0].op === OP_CHECK
    let gb = NaN
    for (let attempt = 0; ; attempt++) {
      let start = Number.isNaN(gb) ? this.windowStart(estimate) : gb
      // self-sized: a generation of the window without a known shape waits for one shape round
      // (shared by the calls waiting), then the call; checked again after it, as a period
      // adopted or a newer generation seen meanwhile moves the window
      for (let round = 0; this.sizing !== undefined && !check && !this.knows(start, estimate); round++) {
        if (round > 3) throw replyError('redis shape script (generation window)', start)
        const before = this.schedule
        try {
          await this.shapeRound(client, start, this.o.timeoutMs)
        } catch (err) {
          // the early records could not be read (slot 0 failing): a call whose shapes are all
          // known goes on with the twins it knows, for retryMs (spec/cluster.md "Early growth")
          if (isCoded(err) || !this.knowsShapes(start)) throw err
        }
        if (this.schedule !== before) gb = NaN
        start = Number.isNaN(gb) ? this.windowStart(estimate) : gb
      }
      const { keys, args } = this.request(b, estimate, explicit, start)
      const raw = await evalScript(client, this.script, this.sha, keys, args, false)
      const status = decode(raw, b)
      if (!explicit) this.offsetMs = b.serverMs - this.local.now()
      if (status === -1) {
        // every call reads the record again until it is this fleet's: each one is refused
        this.recordCheckedMs.fill(-Infinity)
        throw fingerprintError(this.shape, (raw as unknown[])[1])
      }
      if (attempt > 2) throw replyError('redis exact script (generation window)', raw)
      if (status === -3) {
        this.adopt(Number(String((raw as unknown[])[1])))
        gb = NaN
        continue
      }
      if (b.newest > this.newest) this.newest = b.newest
      if (status !== -2) {
        if (this.meter !== null && !check) {
          for (const it of b.items) this.measure(b.newest, it.status, it.op, it.key, it.delta)
        }
        return
      }
      gb = b.newest - this.shape.generations
    }
  }

  /** Server time estimate in ms: the explicit clock, or local time + the offset seen in the last reply. */
  private estimateNow(): number {
    return this.o.clock !== undefined ? this.local.now() : this.local.now() + this.offsetMs
  }

  /**
   * The first generation id gb of a call's window gb..gb+N at server time `estimateMs`: the live
   * window O..O+N−1 (O = the oldest) is covered for O = gEst or gEst − 1: the estimate runs
   * ahead of the server by about half a round trip, so near a boundary it may already be in
   * the next period; further off, the script says so and the caller retries with its window.
   * Never below the newest generation seen: a clock that stepped back stays there.
   */
  private windowStart(estimateMs: number): number {
    const gEst = Math.floor(estimateMs / this.schedule.periodMs)
    return Math.max(gEst - 1, this.newest - this.shape.generations)
  }

  /**
   * Self-sized: whether the shape of every generation of the window gb..gb+N is known, and its
   * twin (early growth) is, or its early record was read at most {@link twinFreshMs} before
   * `estimateMs` (spec/cluster.md "Early growth": so no call writes a base without its twin
   * later than the adoption lag after the twin's start).
   */
  private knows(gb: number, estimateMs: number): boolean {
    if (!this.knowsShapes(gb)) return false
    // a failed shape round: the early records are not waited for until retryMs have passed
    if (performance.now() < this.twinReadsDownUntil) return true
    const fresh = estimateMs - this.twinFreshMs()
    for (let id = gb; id <= gb + this.shape.generations; id++) {
      if (!this.twins.has(id) && !((this.twinsReadMs.get(id) ?? -Infinity) >= fresh)) return false
    }
    return true
  }

  /** Self-sized: whether the recorded shape of every generation of the window gb..gb+N is known. */
  private knowsShapes(gb: number): boolean {
    for (let id = gb; id <= gb + this.shape.generations; id++) if (!this.shapes.has(id)) return false
    return true
  }

  /**
   * Self-sized: how long a read of the early records lasts for the calls after it, in ms: 2 ×
   * `sizing.checkEveryMs` (the fire-and-forget round leaves every checkEveryMs of traffic, so
   * with steady traffic no request waits for one; an instance idle longer waits one shape round).
   */
  private twinFreshMs(): number {
    return 2 * this.sizing!.checkEveryMs
  }

  /**
   * Self-sized: this instance's adoption lag D of a twin, in ms: {@link twinFreshMs} + timeoutMs
   * (a call decided at most timeoutMs after it was sent), so no call of this instance writes a
   * base later than D after the round whose read of "no twin" it relied on. Every shape round
   * registers it in the fleet lag record (`lagKey`) as its round's time + D, and a twin proposed
   * anywhere decides no sooner than (A +) the latest such time still standing, its own start + (A +)
   * D included (spec/cluster.md "Early growth", _The fleet's adoption lag_). Below N × periodMs
   * (refused at construction, `checkAdoptionLag`).
   */
  private adoptionLagMs(): number {
    return this.twinFreshMs() + this.o.timeoutMs
  }

  /**
   * Self-sized: learn the shapes of the window gb..gb+N (one shared shape round at a time; a
   * round that did not cover the window, or a period adopted meanwhile, is followed by another).
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_SHAPE`, `ERR_GRUDGE_CLUSTER_FINGERPRINT`,
   * `ERR_GRUDGE_CLUSTER_REPLY`; or the client's error (the caller's failure mode applies)
   */
  private async knowShapes(client: RedisLike, gb: number, timeoutMs: number): Promise<void> {
    for (let round = 0; !this.knows(gb, this.estimateNow()); round++) {
      if (round > 3) throw replyError('redis shape script (generation window)', gb)
      const before = this.schedule
      await this.shapeRound(client, gb, timeoutMs)
      if (this.schedule !== before) gb = this.windowStart(this.estimateNow())
    }
  }

  /** The shape round in flight, or a new one asking for the window from gb (undefined: a cost report only). */
  private shapeRound(client: RedisLike, gb: number | undefined, timeoutMs: number): Promise<void> {
    if (this.round === undefined) {
      this.round = withTimeout(this.runRound(client, gb), timeoutMs)
        .catch((err: unknown) => {
          // Redis failing (not a coded refusal): calls stop waiting for early records for retryMs
          if (!isCoded(err)) this.twinReadsDownUntil = performance.now() + this.o.retryMs
          throw err
        })
        .finally(() => {
          this.round = undefined
        })
    }
    return this.round
  }

  /**
   * One round trip of the shape script (spec/cluster.md "Shapes"), as in sync mode: reports this
   * instance's admitted cost of the youngest generation to the fleet's counter, records (if
   * absent) the shape of every generation of the window not known here, with this instance's
   * proposal, and, from the second half of the youngest's period on, its proposal for the next
   * one; reads the early record of every generation of the window without a twin here, and at
   * an early check on a load jump proposes a twin of the youngest (spec/cluster.md "Early
   * growth"); adopts what is recorded (or the fleet's period, when it is another).
   */
  private async runRound(client: RedisLike, gb: number | undefined): Promise<void> {
    const N = this.shape.generations
    const period = this.schedule.periodMs
    const now = this.estimateNow()
    const asks: ShapeAsk[] = []
    const G = this.meterGen
    let reported = 0
    let next = false
    let early = new Map<number, string>()
    if (!Number.isNaN(G)) {
      const meter = this.meter!
      early = this.earlyCheck(G, now)
      this.fleetCost[1] += meter.windowCost()
      meter.closeWindow(now)
      reported = this.fleetCost[1]
      const elapsedMs = now - (G - N + 1) * period
      if (!this.shapes.has(G + 1) && elapsedMs >= period / 2) {
        if (!this.proposals.has(G + 1)) this.proposals.set(G + 1, this.decide(G, now, elapsedMs))
        next = true
      }
    }
    const wb = gb ?? this.windowStart(now)
    if (gb !== undefined) {
      for (let id = gb; id <= gb + N; id++) {
        if (!this.shapes.has(id)) asks.push({ id, want: shapeRecord(this.shape, this.proposalFor(id)) })
      }
    }
    if (next && !asks.some((a) => a.id === G + 1)) {
      asks.push({ id: G + 1, want: shapeRecord(this.shape, this.proposalFor(G + 1)) })
    }
    // early records: every generation of the window without a twin here (and the proposals of
    // an early check, for every live generation smaller than the size it wants)
    for (let id = wb; id <= wb + N; id++) {
      if (!this.twins.has(id)) asks.push({ id, want: early.get(id) ?? '', twin: true })
    }
    for (const [id, want] of early) if (!(id >= wb && id <= wb + N)) asks.push({ id, want, twin: true })
    this.nextReportMs = now + this.sizing!.checkEveryMs
    const costGen = Number.isNaN(G) ? Math.floor(now / period) + N - 1 : G
    const clockArg = this.o.clock !== undefined ? String(this.o.clock.now()) : ''
    // every round registers this instance's adoption lag in the fleet's, and the script moves
    // this round's twin proposals past every live field's until (spec/cluster.md "Early growth")
    const lag = { ownLagMs: this.adoptionLagMs(), proposedAtMs: now }
    const answer = await runShapeRound(client, this.shape, clockArg, period, asks, reported, costGen, BLOCK_CELLS, lag)
    if (answer.periodMs !== undefined) {
      this.adopt(answer.periodMs)
      return
    }
    // a proposal dropped for another instance's lag: told once (an older build's, or other options)
    reportLagDrops((e) => this.shared.emit(e), this.lagNotice, this.shape, this.spec.name, answer.lag, period)
    // the counter holds what every instance reported for G, this one's included
    if (this.meterGen === G && !Number.isNaN(G)) {
      this.fleetCost[0] = answer.costTotal
      this.fleetCost[1] -= reported
    }
    for (let j = 0; j < asks.length; j++) {
      const id = asks[j].id
      if (asks[j].twin !== true) {
        const before = this.shapes.get(id - 1)
        if (!this.shapes.has(id) && before !== undefined && before.cells !== answer.cells[j]) this.resizeCount++
        this.shapes.set(id, genShape(answer.cells[j], this.shape.slots))
        continue
      }
      const twin = answer.twins[j]
      if (twin === undefined) {
        if (!((this.twinsReadMs.get(id) ?? -Infinity) >= now)) this.twinsReadMs.set(id, now)
      } else if (!this.twins.has(id)) {
        const tshape = genShape(twin.cellsPerLevel, this.shape.slots)
        const base = this.shapes.get(id)
        if (twin.fold && base !== undefined && !foldable(base, tshape, this.shape.slots)) {
          throw new GrudgeError(
            'ERR_GRUDGE_CLUSTER_SHAPE',
            `${twinKey(this.shape, id)}: a folding twin of ${tshape.cells} cells per level cannot fold its base of ${base.cells} over ${this.shape.slots} slot(s) (blocks of ${base.blockCells} × ${base.blocks} and ${tshape.blockCells} × ${tshape.blocks})`,
          )
        }
        this.twins.set(id, { shape: tshape, switchAtMs: twin.switchAtMs, fold: twin.fold })
        this.twinsReadMs.delete(id)
        this.earlyGrowths++
      }
    }
  }

  /**
   * Early growth (spec/cluster.md "Early growth"), at a shape round at least
   * `sizing.checkEveryMs` after the last check: the Rotator's rule (`proposeEarlyCells`) on this
   * instance's meter over the window since its last round, the cost rate the larger of its own
   * and the fleet's (`fleetWindowRate`); on a load jump the early records to propose, by
   * generation id: a twin of the sizer's size M′ for every live generation smaller than M′ and
   * without a twin here (the deciding one included, as the in-process Rotator folds every live
   * generation) — a folding twin deciding from the adoption lag ({@link adoptionLagMs}) after
   * now where its base folds into it (`blockFoldable`), else a twin written beside its base
   * deciding from A + the adoption lag after now — but none that would retire before it could
   * decide. Nothing when G's shape is not known here or G has a twin.
   */
  private earlyCheck(G: number, nowMs: number): Map<number, string> {
    const out = new Map<number, string>()
    const y = this.shapes.get(G)
    if (y === undefined || this.twins.has(G)) return out
    if (nowMs - this.lastEarlyCheckMs < this.sizing!.checkEveryMs) return out
    this.lastEarlyCheckMs = nowMs
    const meter = this.meter!
    const fleetRate = fleetWindowRate(
      this.earlyMark,
      G,
      nowMs,
      this.fleetCost[0] + this.fleetCost[1] + meter.windowCost(),
    )
    const N = this.shape.generations
    let live = 0
    for (let id = G - N + 1; id <= G; id++) {
      live += (this.shapes.get(id)?.cells ?? 0) + (this.twins.get(id)?.shape.cells ?? 0)
    }
    const cells = proposeEarlyCells(
      this.sizing!,
      meter,
      { cellsPerLevel: y.cells, decay: this.shape.decay },
      this.shape.levels,
      N,
      live,
      nowMs,
      this.limitReported,
      fleetRate,
    )
    // a jump inside the window is seen at a fraction of its rate: grow from the next window,
    // the first wholly after it, which confirms the jump and sizes the twin on the load after it
    const wanted = this.earlyWanted
    this.earlyWanted = cells
    if (cells === 0 || wanted === 0) return out
    const period = this.schedule.periodMs
    const twin = genShape(cells, this.shape.slots)
    const lag = this.adoptionLagMs()
    const age = promotionAgeMs(this.shape.decay, this.schedule.hi, N, period)
    for (let id = G - N + 1; id <= G; id++) {
      const base = this.shapes.get(id)
      if (base === undefined || base.cells >= cells || this.twins.has(id)) continue
      const fold = foldable(base, twin, this.shape.slots)
      const switchAtMs = nowMs + (fold ? 0 : age) + lag
      if (switchAtMs < (id + 1) * period) out.set(id, twinRecord(this.shape, switchAtMs, cells, fold))
    }
    return out
  }

  /** What this instance proposes for generation `id` when it finds it unrecorded: its meter's decision, else the nearest recorded older shape, else the initial size. */
  private proposalFor(id: number): number {
    const p = this.proposals.get(id)
    if (p !== undefined) return p
    let best = -Infinity
    let cells = this.initialCells
    for (const [k, g] of this.shapes) {
      if (k < id && k > best) {
        best = k
        cells = this.twins.get(k)?.shape.cells ?? g.cells
      }
    }
    return cells
  }

  /** This instance's proposal for generation G + 1: its sizer on the youngest's load, the cost rate the fleet's. */
  private decide(G: number, nowMs: number, elapsedMs: number): number {
    return proposeCells(
      this.sizing!,
      this.meter!,
      {
        cellsPerLevel: this.twins.get(G)?.shape.cells ?? this.shapes.get(G)?.cells ?? this.proposalFor(G),
        decay: this.shape.decay,
      },
      this.shape.levels,
      this.shape.generations,
      this.fleetCost[0] + this.fleetCost[1],
      nowMs,
      elapsedMs,
      this.limitReported,
    )
  }

  /**
   * Self-sized, after a reply: the meter follows the youngest generation G the reply named (a
   * newer one resets it; recorded shapes and proposals of retired generations are dropped),
   * counts the key under G's hasher and what it added (an admitted cost, an add's delta), and a
   * fire-and-forget cost report leaves every `checkEveryMs`.
   */
  private measure(G: number, status: number, op: number, key: string, delta: number): void {
    const meter = this.meter!
    if (Number.isNaN(this.meterGen) || G > this.meterGen) {
      this.meterGen = G
      meter.reset(this.estimateNow())
      this.fleetCost[0] = 0
      this.fleetCost[1] = 0
      const floor = G - this.shape.generations
      for (const id of this.shapes.keys()) if (id < floor) this.shapes.delete(id)
      for (const id of this.proposals.keys()) if (id < floor) this.proposals.delete(id)
      for (const id of this.twins.keys()) if (id < floor) this.twins.delete(id)
      for (const id of this.twinsReadMs.keys()) if (id < floor) this.twinsReadMs.delete(id)
    }
    if (G === this.meterGen && (op === OP_ADD || (op === OP_TRY && status === 1))) {
      const h = this.hashers.get(G)
      keyBytes(key)
      h.hashInto(keyView, keyLength)
      meter.record(h, delta)
    }
    if (this.round === undefined && this.estimateNow() >= this.nextReportMs) {
      const c = this.shared.ready
      if (c !== undefined) this.shapeRound(c, undefined, this.o.timeoutMs).catch(() => {})
    }
  }

  /**
   * ARGV[10] of a call to `slot`: empty (the script reads and checks the slot's fingerprint
   * record) for a check, before any reply named a generation, and once RECORD_CHECK_MS have
   * passed on the local clock since the last call to that slot that did (or the clock stepped
   * back); else the newest generation id a reply named, below which the script never goes (the
   * record's role between checks; every slot has the same generation ids).
   */
  private floorArg(op: number, slot: number): string {
    const now = this.local.now()
    const s = slot < 0 ? 0 : slot
    const last = this.recordCheckedMs[s]
    if (op === OP_CHECK || this.newest === -Infinity || now - last >= RECORD_CHECK_MS || now < last) {
      this.recordCheckedMs[s] = now
      return ''
    }
    return String(this.newest)
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

  /**
   * KEYS and ARGV of one call (spec/cluster.md, "The exact script"; {@link exactScript}): per
   * slot of the batch its record and generation keys; the fixed arguments, the slots' floors,
   * (self-sized) each generation's W and B, then per request its op and slot's group, delta,
   * limit and span arguments (none for a check).
   */
  private request(b: Batch, estimateMs: number, explicit: boolean, gb: number) {
    const s = this.shape
    const N = s.generations
    const period = this.schedule.periodMs
    const K = N + 1
    const Q = b.slots.length
    const check = b.items[0].op === OP_CHECK
    // per generation one argument: the L offsets as letters, then the first cell's byte offset (decimal); an
    // all-string command is written to the socket in one piece (a Buffer argument would split it)
    const args: (string | number)[] = [
      explicit ? String(estimateMs) : '',
      String(period),
      s.ratePerMsArg,
      s.loArg,
      this.schedule.hiArg,
      gb,
      Q,
    ]
    const sized = this.sizing !== undefined
    // self-sized: the window's twins (early growth), by window index
    const tw = this.windowTwins
    tw.length = 0
    if (sized && !check) for (let j = 0; j < K; j++) if (this.twins.has(gb + j)) tw.push(j)
    const T = tw.length
    let keys = this.keysFor(b.slots[0], gb, K)
    if (Q > 1 || T > 0) {
      const all = [...keys]
      for (let q = 1; q < Q; q++) for (const k of this.keysFor(b.slots[q], gb, K)) all.push(k)
      // then each group's twin keys, after every group's (spec/cluster.md "Early growth")
      for (let q = 0; q < Q; q++) {
        for (const j of tw) all.push(this.shape.keyPrefixes[b.slots[q]] + 'g' + (gb + j) + TWIN_SUFFIX)
      }
      keys = all
    }
    for (let q = 0; q < Q; q++) args.push(this.floorArg(check ? OP_CHECK : OP_TRY, b.slots[q]))
    if (sized) {
      args.push(T)
      for (let j = 0; j < K; j++) args.push(check ? '' : this.shapes.get(gb + j)!.blockCells)
      for (const j of tw) args.push(this.twins.get(gb + j)!.shape.blockCells)
      for (let j = 0; j < K; j++) args.push(check ? '' : this.shapes.get(gb + j)!.blocks)
      for (const j of tw) args.push(this.twins.get(gb + j)!.shape.blocks)
      for (const j of tw) {
        const x = this.twins.get(gb + j)!
        args.push(j, x.switchAtMs, x.fold ? 1 : 0)
      }
    }
    if (check) return { keys, args }
    // hashers first: deriving one hashes its seed through the shared key scratch buffer
    const hs = this.genHashers
    for (let j = 0; j < K; j++) hs[j] = this.hashers.get(gb + j)
    for (const it of b.items) {
      args.push(it.op + 4 * (Q === 1 ? 0 : b.slots.indexOf(it.slot)), it.delta, it.limit)
      this.spans(it.key, gb, K, args)
    }
    return { keys, args }
  }

  /**
   * The key's span argument in each generation gb..gb+K−1 (the hashers in genHashers), then in
   * each twin of {@link windowTwins} (its base's hasher, its own shape), pushed onto args.
   */
  private spans(key: string, gb: number, K: number, args: (string | number)[]): void {
    const s = this.shape
    const sized = this.sizing !== undefined
    const hs = this.genHashers
    const tw = this.windowTwins
    keyBytes(key)
    for (let j = 0; j < K; j++) {
      const h = hs[j]
      h.hashInto(keyView, keyLength)
      // self-sized: each generation's blocked layout is its recorded shape's (known: see exec)
      args.push(this.span(h, sized ? this.shapes.get(gb + j)! : s))
    }
    for (const j of tw) {
      const h = hs[j]
      h.hashInto(keyView, keyLength)
      args.push(this.span(h, this.twins.get(gb + j)!.shape))
    }
  }

  /** One span argument: the key's L offsets in its block as letters, then the byte offset of its first cell (block idx[0], level 0) in the string. */
  private span(h: Hasher, g: { readonly blockCells: number; readonly blocks: number }): string {
    const L = this.shape.levels
    const idx = this.idx
    blockedIndexes(h.hashHi, h.hashLo, L, g.blockCells, g.blocks, idx)
    let a = ''
    for (let i = 1; i <= L; i++) a += OFFSET_LETTERS[idx[i]]
    return a + (idx[0] * L * g.blockCells + idx[1]) * 16
  }
}

/** The most requests one EVALSHA decides (a batch that fills up is sent and the next request opens another). */
export const MAX_BATCH = 32

/** One request of a batch: its operands, then its outcome. */
class Pending implements Reply {
  status = NaN
  score = NaN
  nowMs = NaN
  newest = NaN
  resolve!: (r: Reply) => void
  reject!: (err: unknown) => void
  readonly promise: Promise<Reply>
  constructor(
    readonly op: number,
    readonly key: string,
    readonly delta: number,
    readonly limit: number,
    /** The key's slot (a check: the slot checked). */
    readonly slot: number,
  ) {
    this.promise = new Promise<Reply>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }
}

/** The requests of one EVALSHA: a check, or the requests of one turn (to one node, or one slot of a Redis Cluster). */
class Batch {
  readonly items: Pending[] = []
  /** The slots of its requests, in order of first appearance (group q of the script is slots[q]). */
  readonly slots: number[] = []
  /** The newest live generation id the reply named. */
  newest = NaN
  /** The server time the reply named (whole ms). */
  serverMs = NaN
  private done = false
  constructor(
    /** Its place in the store's open batches (−1: a check, never joined). */
    readonly at: number,
    /** An explicit clock's time when the batch opened (every request of it decides at that time), else the reply's server time. */
    public nowMs: number,
  ) {}
  /** Each request resolves with its outcome (once). */
  settle(): void {
    if (this.done) return
    this.done = true
    for (const it of this.items) it.resolve(it)
  }
  /** Each request rejects with `err` (once: a timeout and a late reply do not both answer). */
  fail(err: unknown): void {
    if (this.done) return
    this.done = true
    for (const it of this.items) it.reject(err)
  }
}

/** A recorded M_k and its slot strings' blocked layout. */
function genShape(cells: number, slots: number): GenShape {
  const { blockCells, blocks } = blockShape(Math.ceil(cells / slots))
  return { cells, blockCells, blocks }
}

/** Whether a generation of shape `base` folds into a twin of shape `twin` over `slots` slots (`blockFoldable`). */
function foldable(base: GenShape, twin: GenShape, slots: number): boolean {
  return blockFoldable(Math.ceil(base.cells / slots), Math.ceil(twin.cells / slots))
}

/** A grudge error (bad key, mismatch, closed…): thrown to the caller, never absorbed by a failure mode. */
export function isCoded(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return typeof code === 'string' && code.startsWith('ERR_GRUDGE_')
}

/** The score's two 32-bit words (the exact script's reply) read back as one float64. */
const scoreWords = new Int32Array(2)
const scoreValue = new Float64Array(scoreWords.buffer)

/**
 * Read the exact script's reply into batch `b`: each request's status and score (the first
 * request's in slots 0..2, each next one's in the next three after now and G), the batch's
 * newest G and server time. Returns the first status
 * (−1, −2, −3: the call's, with no request decided).
 * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_REPLY` for a reply of another shape
 */
function decode(raw: unknown, b: Batch): number {
  if (!Array.isArray(raw) || typeof raw[0] !== 'number') throw replyError('redis exact script', raw)
  const status = raw[0]
  if (status === -1 || status === -3) {
    // the prologue's replies: the stored record or period as text, then now
    const nowMs = Number(raw[2])
    if (raw.length !== 4 || !Number.isFinite(nowMs)) throw replyError('redis exact script', raw)
    b.serverMs = nowMs
    return status
  }
  const D = status === -2 || b.items[0].op === OP_CHECK ? 1 : b.items.length
  if (raw.length !== 5 + 3 * (D - 1)) throw replyError('redis exact script', raw)
  const nowMs = raw[3] as number
  const newest = raw[4] as number
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs) || typeof newest !== 'number' || !Number.isFinite(newest)) {
    throw replyError('redis exact script', raw)
  }
  b.newest = newest
  for (let d = 0; d < D; d++) {
    const at = d === 0 ? 0 : 2 + 3 * d
    const st: unknown = raw[at]
    const lo: unknown = raw[at + 1]
    const hi: unknown = raw[at + 2]
    if (typeof st !== 'number' || typeof lo !== 'number' || typeof hi !== 'number') {
      throw replyError('redis exact script', raw)
    }
    scoreWords[0] = lo
    scoreWords[1] = hi
    const it = b.items[d]
    it.status = st
    it.score = st < 0 ? NaN : scoreValue[0]
    it.nowMs = nowMs
    it.newest = newest
  }
  b.serverMs = nowMs
  return status
}
