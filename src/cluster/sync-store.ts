import { systemClock, systemTicker, type Clock, type TickerHandle } from '../clock.js'
import { GrudgeError } from '../errors.js'
import { CELL_SCORE, CELL_STRIDE, CELL_TIME } from '../sketch/cells.js'
import { applyDecay } from '../sketch/decay.js'
import type { SketchOptions } from '../sketch/shape.js'
import { Sketch, checkFinite } from '../sketch/sketch.js'
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
import { READY_TIMEOUT_MS, isCoded } from './exact-store.js'
import type { ParsedRedisOptions } from './options.js'
import { syncScript } from './scripts.js'

/** A Sketch whose cells a sync can overwrite, and which remembers the cells of the last key it located. */
class FleetSketch extends Sketch {
  /** The cell index per level of the last key located (the sketch's own, not a copy). */
  get lastIdx(): Uint32Array {
    return this.idx
  }

  /**
   * Replace every cell by the fleet's (decayed from its server time to `serverNowMs`) plus
   * what this instance added since the push (`pending`), clamped; touched = `localNowMs`.
   */
  /** Per-level scratch: the key's decayed cells before a carried write. */
  private readonly before: Float64Array = new Float64Array(this.levels)

  /**
   * `updateWithFloor(key, delta, floor)` (the Rotator's carry-forward) that adds to the
   * generation's pending sums what each of the key's cells actually gained (after minus
   * decayed before, which may exceed `delta` when the floor raised it), so that the next
   * push carries the raise to the fleet and the pull that follows does not undo it.
   */
  updateWithFloorTracked(key: string | Uint8Array, delta: number, floor: number, gen: Generation): void {
    this.estimate(key) // decays the key's cells to now (written back) and locates them
    const M = this.cellsPerLevel
    const idx = this.lastIdx
    const before = this.before
    const cells = this.cells
    for (let i = 0; i < idx.length; i++) before[i] = cells[CELL_STRIDE * (i * M + idx[i]) + CELL_SCORE]
    this.updateWithFloor(key, delta, floor)
    for (let i = 0; i < idx.length; i++) {
      const p = i * M + idx[i]
      addPending(gen, p, cells[CELL_STRIDE * p + CELL_SCORE] - before[i])
    }
  }

  load(raw: Uint8Array | undefined, serverNowMs: number, localNowMs: number, pending: Float64Array): void {
    const n = this.levels * this.cellsPerLevel
    const inRaw = raw === undefined ? 0 : Math.min(n, Math.floor(raw.length / 16))
    const dv = raw === undefined ? undefined : new DataView(raw.buffer, raw.byteOffset, raw.byteLength)
    const cells = this.cells
    for (let p = 0; p < n; p++) {
      let s = 0
      if (p < inRaw)
        s = applyDecay(dv!.getFloat64(p * 16, true), this.decay, serverNowMs - dv!.getFloat64(p * 16 + 8, true))
      s += pending[p]
      cells[CELL_STRIDE * p + CELL_SCORE] = s < this.lo ? this.lo : s > this.hi ? this.hi : s
      cells[CELL_STRIDE * p + CELL_TIME] = localNowMs
    }
  }
}

/** One local generation: its cells and what was added to them since the last push. */
interface Generation {
  id: number
  sketch: FleetSketch
  pending: Float64Array
  mark: Uint8Array
  dirty: Uint32Array
  dirtyCount: number
}

/**
 * Sync mode: each instance decides on its own generations of cells (synchronously, zero
 * round trips) and every `syncMs` runs the sync script ({@link syncScript}) once: it pushes the per-cell
 * sums of what this instance added since the last push and pulls the fleet's merged
 * cells, which replace the local ones (plus what was added while the sync was in flight).
 * Generations rotate by time (generation id = floor(server time / periodMs)), with the same
 * derived hashers as exact mode. Built by {@link redisStore}; not constructed directly.
 *
 * The delta accumulator is this class's own (per-cell sums since the last push), not a
 * Rotator delta API.
 */
export class RedisSyncStore implements ScoreStore {
  /** The validated shape and keys of the policy. */
  readonly shape: FleetShape
  private readonly hashers: GenerationHashers
  private readonly script: string
  private readonly sha: string
  private readonly local: Clock
  private sketchConfig: SketchOptions
  /** The period and hi in use: the policy's, or the fleet's recorded period (spec/cluster.md, "Schedule"). */
  private schedule: Schedule
  /** Whether writes carry the oldest generation's aggregate forward (linear decay, as the Rotator). */
  private readonly carry: boolean
  private gens: Generation[] = []
  private offsetMs = 0
  private lastOkMs: number
  private syncing: Promise<void> | undefined
  private fatal: GrudgeError | undefined
  private readonly handle: TickerHandle
  private closed = false
  /** performance.now() when syncs started failing; undefined while they succeed. */
  private downSinceMs: number | undefined = undefined
  /** Count of successful syncs. */
  syncs = 0

  /** @internal built by {@link redisStore} */
  constructor(
    private readonly spec: StoreSpec,
    private readonly o: ParsedRedisOptions,
    private readonly shared: SharedClient,
  ) {
    this.shape = fleetShape(spec, o)
    this.script = syncScript(this.shape.scriptConstants)
    this.sha = shaOf(this.script)
    this.hashers = new GenerationHashers(this.shape.base, o.secret)
    this.local = o.clock ?? spec.clock ?? systemClock
    this.schedule = adoptSchedule(this.shape, this.shape.periodMs)
    this.sketchConfig = {
      ...spec.sketch,
      levels: this.shape.levels,
      cellsPerLevel: this.shape.cellsPerLevel,
      clock: this.local,
      seed: undefined,
    }
    this.carry = spec.sketch.decay?.kind === 'linear'
    this.lastOkMs = this.mono()
    shared.acquire()
    shared.get().catch(() => {})
    this.rotate()
    this.handle = (o.ticker ?? systemTicker).every(o.syncMs, () => {
      this.sync().catch(() => {})
    })
  }

  /**
   * Sync once without a failure mode: checks the fingerprint (storing it when absent) and
   * pulls the fleet's cells. Call it at startup.
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT`, `ERR_GRUDGE_CLUSTER_UNAVAILABLE`,
   * `ERR_GRUDGE_CLUSTER_CLIENT`
   */
  async ready(): Promise<void> {
    this.assertOpen()
    try {
      await this.sync(true, READY_TIMEOUT_MS(this.o.timeoutMs))
    } catch (err) {
      if (isCoded(err)) throw err
      // with 'local' the instance decides on its own cells anyway: starting is safe
      if (this.o.onStoreError === 'local') return
      throw new GrudgeError(
        'ERR_GRUDGE_CLUSTER_UNAVAILABLE',
        this.shared.explain(err, READY_TIMEOUT_MS(this.o.timeoutMs)),
        {
          cause: err,
        },
      )
    }
  }

  /**
   * Decide locally (as `Rotator.tryUpdate` over the live generations) and remember the cost
   * for the next push. Synchronous. While the fleet view is stale (no sync for 3 × syncMs)
   * `onStoreError: 'open' | 'closed'` answers instead.
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE`
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_FINGERPRINT` after a sync found a mismatch;
   * `ERR_GRUDGE_CLUSTER_CLOSED`
   */
  tryConsume(key: string, cost: number, limit: number): StoreResult {
    checkFinite('cost', cost)
    checkFinite('limit', limit)
    this.assertOpen()
    if (this.o.onStoreError !== 'local' && this.stale()) {
      return this.o.onStoreError === 'open'
        ? { admitted: true, score: NaN, failure: 'open' }
        : { admitted: false, score: NaN, failure: 'closed' }
    }
    this.rotate()
    const gens = this.gens
    const oldest = gens[0]
    if (!oldest.sketch.tryUpdate(key, cost, limit)) return { admitted: false, score: oldest.sketch.estimate(key) }
    record(oldest, cost)
    const score = oldest.sketch.estimate(key)
    this.writeYounger(key, cost, score)
    return { admitted: true, score }
  }

  /**
   * The write to the younger generations after the oldest took `delta` and reads `oldestAfter`:
   * with linear decay and `delta ≥ 0`, the Rotator's carry-forward (spec/rotator.md §1: each
   * cell becomes at least `oldestAfter`, so a promoted generation never reads the key lower
   * than the generation it replaces); otherwise the plain clamped addition.
   */
  private writeYounger(key: string, delta: number, oldestAfter: number): void {
    const gens = this.gens
    const carry = this.carry && delta >= 0
    for (let g = 1; g < gens.length; g++) {
      if (carry) gens[g].sketch.updateWithFloorTracked(key, delta, oldestAfter, gens[g])
      else {
        gens[g].sketch.update(key, delta)
        record(gens[g], delta)
      }
    }
  }

  /**
   * Add `delta` to the key in every live generation locally; returns the oldest's aggregate.
   * @throws {GrudgeRangeError} `ERR_GRUDGE_VALUE_NOT_FINITE`
   */
  add(key: string, delta: number): number {
    checkFinite('delta', delta)
    this.assertOpen()
    this.rotate()
    const oldest = this.gens[0]
    oldest.sketch.update(key, delta)
    record(oldest, delta)
    const score = oldest.sketch.estimate(key)
    this.writeYounger(key, delta, score)
    return score
  }

  /** The key's aggregate in the oldest live generation of the local view. */
  read(key: string): number {
    this.assertOpen()
    this.rotate()
    return this.gens[0].sketch.estimate(key)
  }

  /** Cells held in this process: per live generation L × M × 29 bytes (16 cell, 8 pending, 4 + 1 bookkeeping). */
  sizeBytes(): number {
    return this.gens.length * this.shape.levels * this.shape.cellsPerLevel * 29
  }

  /**
   * Push what this instance added since the last push and pull the fleet's cells, within
   * timeoutMs (one sync in flight at a time; a call during one joins it). On failure the
   * pushed sums are put back, to be pushed next time (a timed-out push that Redis applies
   * later is then counted twice: conservative).
   * @param strict reject instead of absorbing a Redis failure (as {@link RedisSyncStore.ready})
   * @param timeoutMs the bound of this sync in ms (default the store's timeoutMs)
   */
  sync(strict = false, timeoutMs = this.o.timeoutMs): Promise<void> {
    if (this.closed && !strict) return Promise.resolve()
    if (this.syncing === undefined) {
      this.syncing = this.runSync(timeoutMs).finally(() => {
        this.syncing = undefined
      })
    }
    return strict
      ? this.syncing
      : this.syncing.catch((err) => {
          if (isCoded(err)) throw err
        })
  }

  /** Whether the last sync failed and the fleet view is older than 3 × syncMs. */
  get failing(): boolean {
    return this.stale()
  }

  /** Stop syncing after one last push (bounded by timeoutMs) and release the client; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return
    this.handle.cancel()
    try {
      await this.sync()
    } catch {
      // a last push that fails is lost, like any unsynced delta of a crashed instance
    }
    this.closed = true
    await this.shared.release()
  }

  private assertOpen(): void {
    if (this.fatal !== undefined) throw this.fatal
    if (this.closed)
      throw new GrudgeError(
        'ERR_GRUDGE_CLUSTER_CLOSED',
        'redis store: expected an open store, received one that was closed',
      )
  }

  private mono(): number {
    return this.o.clock !== undefined ? this.o.clock.now() : performance.now()
  }

  private stale(): boolean {
    return this.mono() - this.lastOkMs > 3 * this.o.syncMs
  }

  /** Server time estimate in ms: the explicit clock, or local time + the offset seen at the last sync. */
  private serverNow(): number {
    return this.o.clock !== undefined ? this.o.clock.now() : this.local.now() + this.offsetMs
  }

  /** Keep exactly the live generations O..O+N−1 (O = floor(time / periodMs)) of the current time estimate. */
  private rotate(): void {
    const N = this.shape.generations
    const G = Math.floor(this.serverNow() / this.schedule.periodMs) + N - 1
    const gens = this.gens
    if (gens.length === N && gens[N - 1].id === G) return
    while (gens.length > 0 && gens[0].id < G - N + 1) gens.shift()
    if (gens.length === 0) {
      for (let id = G - N + 1; id <= G; id++) gens.push(this.freshGeneration(id))
      return
    }
    // a clock estimate that moved back keeps the newer generations it already has
    for (let id = gens[gens.length - 1].id + 1; id <= G; id++) gens.push(this.freshGeneration(id))
  }

  /**
   * Rotate on the fleet's recorded period from now on (one 'schedule' event). The local
   * generations were keyed on the other period: they restart empty (what they held not yet
   * pushed is lost: this happens at the first sync, normally `ready()`).
   */
  private adopt(recordedPeriodMs: number): void {
    if (!Number.isFinite(recordedPeriodMs) || recordedPeriodMs < 1) {
      throw replyError('redis sync script (recorded period)', recordedPeriodMs)
    }
    const before = this.schedule.periodMs
    this.schedule = adoptSchedule(this.shape, recordedPeriodMs)
    if (this.schedule.periodMs === before) return
    this.sketchConfig = { ...this.sketchConfig, hi: this.schedule.hi }
    this.gens = []
    this.rotate()
    if (this.schedule.message !== undefined) {
      this.shared.emit({ type: 'schedule', policy: this.spec.name, message: `grudge: ${this.schedule.message}` })
    }
  }

  private freshGeneration(id: number): Generation {
    const n = this.shape.levels * this.shape.cellsPerLevel
    return {
      id,
      sketch: new FleetSketch({ ...this.sketchConfig, hasher: this.hashers.get(id) }),
      pending: new Float64Array(n),
      mark: new Uint8Array(n),
      dirty: new Uint32Array(n),
      dirtyCount: 0,
    }
  }

  private async runSync(timeoutMs: number, adopted = false): Promise<void> {
    this.rotate()
    const gens = this.gens
    const gb = gens[0].id
    const K = gens[gens.length - 1].id - gb + 2 // one generation ahead, in case server time is ahead
    const keys: string[] = [this.shape.fpKey]
    for (let j = 0; j < K; j++) keys.push(this.shape.keyPrefix + 'g' + (gb + j))
    const args: (string | number | Buffer)[] = [
      this.o.clock !== undefined ? String(this.o.clock.now()) : '',
      String(this.schedule.periodMs),
      this.shape.ratePerMsArg,
      this.shape.loArg,
      this.schedule.hiArg,
      gb,
      K,
    ]
    const taken: { gen: Generation; blob: Buffer }[] = []
    for (let j = 0; j < K; j++) {
      const gen = gens.find((g) => g.id === gb + j)
      if (gen === undefined || gen.dirtyCount === 0) {
        args.push('')
        continue
      }
      // one binary argument per generation: (u32 p, f64 delta) records, no per-cell argument
      const blob = Buffer.allocUnsafe(gen.dirtyCount * 12)
      for (let k = 0; k < gen.dirtyCount; k++) {
        const p = gen.dirty[k]
        blob.writeUInt32LE(p, k * 12)
        blob.writeDoubleLE(gen.pending[p], k * 12 + 4)
        gen.pending[p] = 0
        gen.mark[p] = 0
      }
      gen.dirtyCount = 0
      taken.push({ gen, blob })
      args.push(blob)
    }
    let raw: unknown
    const sentAt = this.local.now()
    try {
      raw = await withTimeout(
        this.shared.get().then((c: RedisLike) => evalScript(c, this.script, this.sha, keys, args, true)),
        timeoutMs,
      )
    } catch (err) {
      for (const { gen, blob } of taken) {
        for (let k = 0; k < blob.length; k += 12) addPending(gen, blob.readUInt32LE(k), blob.readDoubleLE(k + 4))
      }
      if (!isCoded(err)) {
        this.o.onError?.(err)
        if (this.downSinceMs === undefined) this.wentDown(err)
      }
      throw err
    }
    if (!Array.isArray(raw) || raw.length !== 3 + K || typeof raw[0] !== 'number') {
      if (Array.isArray(raw) && raw[0] === -1) {
        this.fatal = fingerprintError(this.shape, String(raw[1]))
        throw this.fatal
      }
      if (Array.isArray(raw) && raw[0] === -3 && !adopted) {
        // nothing was merged: put the sums back, re-key the local generations on the
        // fleet's period and push them with the next sync
        for (const { gen, blob } of taken) {
          for (let k = 0; k < blob.length; k += 12) addPending(gen, blob.readUInt32LE(k), blob.readDoubleLE(k + 4))
        }
        this.adopt(Number(String(raw[1])))
        return this.runSync(timeoutMs, true)
      }
      throw replyError('redis sync script', raw)
    }
    const serverNowMs = Number(String(raw[1]))
    const G = Number(String(raw[2]))
    // the server read its clock about halfway through the round trip (Cristian's algorithm):
    // the pulled cells are as of that local instant, so local decay resumes from there
    const localNow = this.o.clock !== undefined ? this.o.clock.now() : (sentAt + this.local.now()) / 2
    if (this.o.clock === undefined) this.offsetMs = serverNowMs - localNow
    this.rotate()
    const N = this.shape.generations
    for (let j = 0; j < K; j++) {
      const id = gb + j
      if (id < G - N + 1 || id > G) continue
      const gen = this.gens.find((g) => g.id === id)
      if (gen === undefined) continue
      const v = raw[3 + j] as Uint8Array
      gen.sketch.load(v.length > 0 ? v : undefined, serverNowMs, localNow, gen.pending)
    }
    this.lastOkMs = this.mono()
    this.syncs++
    if (this.downSinceMs !== undefined) {
      const downForMs = Math.round(performance.now() - this.downSinceMs)
      this.downSinceMs = undefined
      this.shared.emit({
        type: 'up',
        policy: this.spec.name,
        downForMs,
        message: `grudge: ${this.spec.name}: redis at ${this.shared.target} answers again after ${downForMs} ms; syncing with the fleet`,
      })
    }
  }

  /** The first failed sync of an outage: one 'down' event. */
  private wentDown(err: unknown): void {
    this.downSinceMs = performance.now()
    const mode = this.o.onStoreError
    const after =
      mode === 'local'
        ? 'deciding on its own cells only'
        : `deciding on its own cells, then (after 3 × syncMs = ${3 * this.o.syncMs} ms without a sync) ${mode === 'open' ? 'admitting every request' : 'denying every request'}`
    this.shared.emit({
      type: 'down',
      policy: this.spec.name,
      onStoreError: mode,
      error: err,
      message: `grudge: ${this.spec.name}: redis at ${this.shared.target}: sync failed (${describeConnectError(err)}); ${after} until Redis answers`,
    })
  }
}

/** Remember that the last located key's cells got `delta`. */
function record(gen: Generation, delta: number): void {
  const M = gen.sketch.cellsPerLevel
  const idx = gen.sketch.lastIdx
  for (let i = 0; i < idx.length; i++) addPending(gen, i * M + idx[i], delta)
}

function addPending(gen: Generation, p: number, delta: number): void {
  if (gen.mark[p] === 0) {
    gen.mark[p] = 1
    gen.dirty[gen.dirtyCount++] = p
  }
  gen.pending[p] += delta
}
