import { systemClock, systemTicker, type Clock, type TickerHandle } from '../clock.js'
import { GrudgeError } from '../errors.js'
import { CELL_SCORE, CELL_STRIDE, CELL_TIME, FOLD_CHUNK_CELLS, FOLD_SLICE_CELLS } from '../sketch/cells.js'
import { applyDecay } from '../sketch/decay.js'
import { DEFAULT_LEVELS, SKETCH_BYTES_PER_CELL, type SketchOptions } from '../sketch/shape.js'
import { Sketch, checkFinite } from '../sketch/sketch.js'
import {
  registerResultFiller,
  type GenerationShapes,
  type ScoreStore,
  type StoreResult,
  type StoreResultSlot,
  type StoreSpec,
} from '../limit/store.js'
import { describeConnectError, type RedisLike } from './client.js'
import {
  GenerationHashers,
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
import { READY_TIMEOUT_MS, isCoded } from './exact-store.js'
import type { ParsedRedisOptions } from './options.js'
import { syncScript } from './scripts.js'
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
  SYNC_FOLD_GUARD_TIMEOUTS,
  runSyncFold,
  twinKey,
  twinRecord,
  type FleetWindowMark,
  type LagNotice,
  type ShapeAnswer,
  type ShapeAsk,
} from './fleet-sizing.js'
import {
  LoadMeter,
  METER_BYTES,
  budgetCellsPerLevel,
  checkSizing,
  type EarlyGeneration,
  type ResolvedSizing,
} from '../sketch/rotator-sizing.js'

/** A Sketch whose cells a sync can overwrite, and which remembers the cells of the last key it located. */
class FleetSketch extends Sketch {
  /** The cell index per level of the last key located (the sketch's own, not a copy). */
  get lastIdx(): Uint32Array {
    return this.idx
  }

  /**
   * A folding twin's lazy fold in progress (`Sketch.foldLazilyFrom`, spec/cluster.md "Early
   * growth", _Bounded pause_): the twin's generation and its base's pending sums and mark blocks
   * at the switch (unchanged since: the base is neither written nor synced from then on), whose
   * sums each chunk folded gains ({@link FleetSketch.foldedChunk}); undefined otherwise.
   */
  foldSums: { readonly gen: Generation; readonly pending: Float64Array; readonly blocks: Uint32Array } | undefined =
    undefined

  /**
   * A chunk folded from the base: the base's sums of its cells onto the twin's (only in the
   * base's mark blocks with a mark: a sum marks its cell dirty), as the fold at once made them.
   */
  protected override foldedChunk(fromCell: number, toCell: number, cells: number): void {
    const f = this.foldSums
    if (f === undefined) return
    const end = fromCell + cells
    for (let b = fromCell >>> MARK_BLOCK_SHIFT; b << MARK_BLOCK_SHIFT < end; b++) {
      if ((f.blocks[b >>> 5] & (1 << (b & 31))) === 0) continue
      const last = Math.min(end, (b + 1) << MARK_BLOCK_SHIFT)
      for (let q = Math.max(fromCell, b << MARK_BLOCK_SHIFT); q < last; q++) {
        const sum = f.pending[q]
        if (sum !== 0) addPending(f.gen, toCell + q - fromCell, sum)
      }
    }
    f.gen.foldCopied += cells
  }

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

  /**
   * A full pull of one slot — index j in [slot·slotCells, (slot + 1)·slotCells) of every
   * level, held in Redis level-major as L × slotCells cells (spec/cluster.md, "Slots") — into
   * the slot's part of `gen.mirror` (the fleet's raw cells as last pulled, the Sketch's layout;
   * cells past the string's end are zeros) and its {@link HELD} marks, then every cell of the
   * slot settled from it ({@link FleetSketch.settle}). One slot (S = 1) is the whole sketch.
   */
  loadSlot(
    raw: Uint8Array | undefined,
    slot: number,
    slotCells: number,
    serverNowMs: number,
    localNowMs: number,
    gen: Generation,
  ): void {
    const { mirror, pending, mark } = gen
    const M = this.cellsPerLevel
    const first = slot * slotCells
    const end = Math.min(M, first + slotCells)
    const inRaw = raw === undefined ? 0 : Math.floor(raw.length / 16)
    // the pulled cells as float64 pairs (score, time) read in place (a view, no decoding)
    const f = raw === undefined || inRaw === 0 ? EMPTY_CELLS : pulledCells(raw, inRaw)
    for (let i = 0; i < this.levels; i++) {
      for (let j = first; j < end; j++) {
        const p = i * M + j
        const q = i * slotCells + j - first
        const score = q < inRaw ? f[2 * q] : 0
        mirror[2 * p] = score
        mirror[2 * p + 1] = q < inRaw ? f[2 * q + 1] : 0
        const m = score !== 0 ? mark[p] | HELD : mark[p] & DIRTY
        mark[p] = m
        if (m !== 0) markBlock(gen, p)
        this.settle(p, mirror, pending, serverNowMs, localNowMs)
      }
    }
  }

  /**
   * A delta pull of one slot: the change log's entries since this instance's last pull of it
   * (20 bytes each: u32le position in the slot's string, then the cell's score and time,
   * float64 LE; spec/cluster.md "The change log") written into `mirror` in order (the last
   * entry of a cell is its value now), then settled: the cells of the entries, every cell of
   * the slot whose mirrored score is not 0, and the cells written here since the last push
   * (the dirty list). Every other cell of the slot has a mirrored score 0, no pending sum, and
   * a local score 0 (nothing changed it since it was settled to 0): it is what a full pull
   * would make it but for its stamp, which a score of 0 never reads.
   */
  loadSlotLog(
    tail: Uint8Array,
    slot: number,
    slotCells: number,
    serverNowMs: number,
    localNowMs: number,
    gen: Generation,
  ): void {
    const M = this.cellsPerLevel
    const first = slot * slotCells
    const end = Math.min(M, first + slotCells)
    const { mirror, pending, mark } = gen
    const n = Math.floor(tail.length / LOG_ENTRY_BYTES)
    if (n > 0) {
      const dv = new DataView(tail.buffer, tail.byteOffset, tail.byteLength)
      for (let k = 0; k < n; k++) {
        const o = k * LOG_ENTRY_BYTES
        const q = dv.getUint32(o, true)
        const j = first + (q % slotCells)
        if (j >= end) continue // the last slot's padding: never written
        const p = Math.floor(q / slotCells) * M + j
        if (p >= mirror.length / 2) continue
        const score = dv.getFloat64(o + 4, true)
        mirror[2 * p] = score
        mirror[2 * p + 1] = dv.getFloat64(o + 12, true)
        if (score !== 0) {
          mark[p] |= HELD
          markBlock(gen, p)
        } else {
          // a cell whose entry makes it 0 is settled here (the scan below may skip it)
          mark[p] &= DIRTY
          this.settle(p, mirror, pending, serverNowMs, localNowMs)
        }
      }
    }
    // every cell of the slot marked HELD or DIRTY, found through the blocks of MARK_BLOCK cells
    // whose bit is set in gen.blocks: one word of bits covers 512 cells; then four marks a word.
    // 16,384 cells cost ~45 µs a generation one by one over the mirror's scores (load 4 on 2
    // cores), and about 70 µs per sync of 2 generations a mark word at a time (4,096 words
    // each: the sync runs 10 times a second, too seldom for V8 to optimize it fully)
    const words = gen.markWords
    const blocks = gen.blocks
    for (let i = 0; i < this.levels; i++) {
      const lo = i * M + first
      const hi = i * M + end
      if (hi <= lo) continue
      const bFirst = lo >>> MARK_BLOCK_SHIFT
      const bLast = (hi - 1) >>> MARK_BLOCK_SHIFT
      for (let w = bFirst >>> 5; w <= bLast >>> 5; w++) {
        let bits = blocks[w]
        if (bits === 0) continue
        // the bits of blocks outside this level's range of the slot are left for their own scan
        if (w === bFirst >>> 5) bits &= -1 << (bFirst & 31)
        if (w === bLast >>> 5 && (bLast & 31) !== 31) bits &= (1 << ((bLast & 31) + 1)) - 1
        while (bits !== 0) {
          const t = bits & -bits
          bits ^= t
          const c0 = ((w << 5) | (31 - Math.clz32(t))) << MARK_BLOCK_SHIFT
          const c1 = c0 + MARK_BLOCK
          if (c0 >= lo && c1 <= hi) {
            let any = false
            for (let q = c0; q < c1; q += 4) {
              if (words[q >> 2] === 0) continue
              any = true
              for (let c = q; c < q + 4; c++)
                if (mark[c] !== 0) this.settle(c, mirror, pending, serverNowMs, localNowMs)
            }
            // a block whose marks are all 0 leaves the summary (set again by the next mark)
            if (!any) blocks[w] &= ~t
          } else {
            // a block across the slot's range (slots of M_s not a multiple of MARK_BLOCK): its cells in range
            const a = c0 < lo ? lo : c0
            const b = c1 > hi ? hi : c1
            for (let c = a; c < b; c++) if (mark[c] !== 0) this.settle(c, mirror, pending, serverNowMs, localNowMs)
          }
        }
      }
    }
  }

  /**
   * Cell `p` as a pull makes it: the mirrored fleet cell decayed from its server stamp to
   * `serverNowMs`, plus what this instance added since the push (`pending`), clamped;
   * touched = `localNowMs`. A zero score decays to zero: no decay to apply (most cells of a
   * sparse sketch).
   */
  private settle(
    p: number,
    mirror: Float64Array,
    pending: Float64Array,
    serverNowMs: number,
    localNowMs: number,
  ): void {
    let s = mirror[2 * p]
    if (s !== 0) s = applyDecay(s, this.decay, serverNowMs - mirror[2 * p + 1])
    s += pending[p]
    const cells = this.cells
    cells[CELL_STRIDE * p + CELL_SCORE] = s < this.lo ? this.lo : s > this.hi ? this.hi : s
    cells[CELL_STRIDE * p + CELL_TIME] = localNowMs
  }
}

/** Bytes of one change-log entry: u32 position, float64 score, float64 time (spec/cluster.md "The change log"). */
const LOG_ENTRY_BYTES = 20

/** log2 of {@link MARK_BLOCK}. */
const MARK_BLOCK_SHIFT = 4
/** Cells per bit of {@link Generation.blocks} (a multiple of 4: whole mark words). */
const MARK_BLOCK = 1 << MARK_BLOCK_SHIFT

/** Set cell `p`'s block bit in {@link Generation.blocks} (its mark was just set). */
function markBlock(gen: Generation, p: number): void {
  gen.blocks[p >>> (MARK_BLOCK_SHIFT + 5)] |= 1 << ((p >>> MARK_BLOCK_SHIFT) & 31)
}

/** A cell's {@link Generation.mark} bits: in the dirty list (a pending sum since the last push). */
const DIRTY = 1
/** A cell's {@link Generation.mark} bits: its mirrored score (the fleet's as last pulled) is not 0. */
const HELD = 2

/** {@link RedisSyncStore}'s decision outcomes (its private `outcome`). */
const DENIED = 0
const ADMITTED = 1
const OPEN = 2
const CLOSED = 3

/** No pulled cells. */
const EMPTY_CELLS = new Float64Array(0)

/** Whether this platform's Float64Array is little-endian, as the cells in Redis are. */
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f

/**
 * The first `count` pulled cells of `raw` (16 bytes each: score then time, float64 LE) as a
 * Float64Array of 2·count: a view when the bytes are 8-aligned on a little-endian platform,
 * else a copy (decoded with a DataView on a big-endian one). Allocates the view's small object.
 */
function pulledCells(raw: Uint8Array, count: number): Float64Array {
  if (LITTLE_ENDIAN && (raw.byteOffset & 7) === 0) return new Float64Array(raw.buffer, raw.byteOffset, 2 * count)
  const out = new Float64Array(2 * count)
  if (LITTLE_ENDIAN) new Uint8Array(out.buffer).set(raw.subarray(0, 16 * count))
  else {
    const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength)
    for (let k = 0; k < 2 * count; k++) out[k] = dv.getFloat64(8 * k, true)
  }
  return out
}

/**
 * Bytes a sync store holds per cell of a live generation: the Sketch's 16 (score and time,
 * Float64 each), the fleet's cell as last pulled (the mirror a delta pull updates, 16), the
 * pending sum since the last push (Float64, 8), the dirty list entry (Uint32, 4) and the mark
 * (Uint8, 1: dirty, and whether the mirrored score is not 0). `examples/bench/sync-store-memory.ts`
 * measures it. Not counted: the marks' block bits ({@link Generation.blocks}, 1/128 B per cell).
 * @internal
 */
export const SYNC_BYTES_PER_CELL = SKETCH_BYTES_PER_CELL + 16 + 8 + 4 + 1

/** The fewest cells per level a budget may give (the Limiter's minimum M). */
const MIN_BUDGET_CELLS = 16

/**
 * A self-sized policy's sizing within the store's budget (`spec.memoryBytes`) at
 * {@link SYNC_BYTES_PER_CELL}: the largest shape the policy computed at 16 B per cell is
 * lowered to what the budget holds at 45, so the store never holds more than its budget.
 * @throws {GrudgeError} `ERR_GRUDGE_SIZING_BUDGET` when the budget holds fewer than 16 cells per level
 */
function syncBudget(sizing: ResolvedSizing, spec: StoreSpec): ResolvedSizing {
  const bytes = spec.memoryBytes
  if (bytes === undefined) return sizing
  const L = spec.sketch?.levels ?? DEFAULT_LEVELS
  const N = spec.generations
  const max = budgetCellsPerLevel(bytes, L, N, SYNC_BYTES_PER_CELL, METER_BYTES, sizing.maxCellsPerLevel, false)
  if (max < MIN_BUDGET_CELLS) {
    throw new GrudgeError(
      'ERR_GRUDGE_SIZING_BUDGET',
      `redis sync store of ${spec.name}: expected a memory budget ≥ ${METER_BYTES + N * L * MIN_BUDGET_CELLS * SYNC_BYTES_PER_CELL} bytes (${METER_BYTES} for the load meter + ${N} generations × ${L} levels × ${MIN_BUDGET_CELLS} cells × ${SYNC_BYTES_PER_CELL} B held per cell in sync mode), received ${bytes} for the store`,
    )
  }
  if (max >= sizing.maxCellsPerLevel) return sizing
  return Object.freeze({ ...sizing, maxCellsPerLevel: max, minCellsPerLevel: Math.min(sizing.minCellsPerLevel, max) })
}

/**
 * A fixed shape beside a `memory` budget must fit it at {@link SYNC_BYTES_PER_CELL}.
 * @throws {GrudgeError} `ERR_GRUDGE_SIZING_CONFLICT`
 */
function checkFixedBudget(spec: StoreSpec): void {
  const bytes = spec.memoryBytes
  if (bytes === undefined) return
  const L = spec.sketch?.levels ?? DEFAULT_LEVELS
  const M = spec.sketch?.cellsPerLevel ?? 0
  const need = spec.generations * L * M * SYNC_BYTES_PER_CELL
  if (need > bytes) {
    throw new GrudgeError(
      'ERR_GRUDGE_SIZING_CONFLICT',
      `redis sync store of ${spec.name}: expected a memory budget ≥ ${need} bytes for the given shape (${L} levels × ${M} cells × ${SYNC_BYTES_PER_CELL} B held per cell in sync mode × ${spec.generations} generations), received ${bytes} for the store; give a larger memory, fewer cells, or memory alone`,
    )
  }
}

/** One local generation: its cells and what was added to them since the last push. */
interface Generation {
  id: number
  /** Self-sized only: its shape is this instance's proposal, not yet the fleet's record (nothing of it is pushed before the record is read). */
  provisional: boolean
  sketch: FleetSketch
  /** The suffix of its cells keys: '' for the generation's base, {@link TWIN_SUFFIX} for its twin (spec/cluster.md "Early growth"). */
  suffix: string
  /** A base whose twin is recorded: the twin, written beside it until it decides in the base's place (from `switchAtMs`). */
  twin: Generation | undefined
  /** Server ms from which the twin decides in place of this base (NaN: no twin). */
  switchAtMs: number
  /** A twin in its base's place: the server ms from which it decides there (its switch; NaN otherwise). */
  decidesFromMs: number
  /**
   * A recorded folding twin not switched to yet (spec/cluster.md "Early growth", one slot): its
   * cells per level and switch time. Nothing of it is held, written or synced before the switch.
   */
  foldTwin: { readonly cells: number; readonly switchAtMs: number } | undefined
  /** A folding twin in its base's place: its base's cells per level until Redis holds its folded cells (0 then, and for any other generation). */
  awaitFoldFrom: number
  /** A base replaced by its folding twin: the twin (sums of a failed push of the base go there, folded). */
  foldedInto: Generation | undefined
  /** Cells folded into this generation so far (from its base: a folding twin's, 0 for any other). */
  foldCopied: number
  /** The fleet's cells as last pulled (score, time per cell, the Sketch's layout): what a delta pull updates (spec/cluster.md "The change log"). */
  mirror: Float64Array
  /** Per slot: `<epoch>:<length>` of the slot's change log as of this instance's last pull, '' before one (a full pull). */
  seen: string[]
  pending: Float64Array
  /** Per cell: {@link DIRTY} (in the dirty list) and {@link HELD} (the mirror's score is not 0); length rounded up to whole words. */
  mark: Uint8Array
  /** {@link Generation.mark} as 32-bit words (4 cells each), for the delta pull's scan. */
  markWords: Uint32Array
  /**
   * One bit per block of {@link MARK_BLOCK} cells (cell p's bit: bit (p >> 4) & 31 of word p >> 9),
   * set whenever a mark of the block is set, cleared by the delta pull's scan when it finds the
   * block's marks all 0: a block with a mark always has its bit set, so the scan skips the rest.
   * 1/128 B per cell, not counted in {@link SYNC_BYTES_PER_CELL}.
   */
  blocks: Uint32Array
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
  /** [0] the score of the last {@link RedisSyncStore.outcome} that decided (typed: no boxing). */
  private readonly decided = new Float64Array(1)
  /** The resolved sizing (a self-sized policy: spec/cluster.md "Shapes"), or undefined for a fixed shape. */
  private readonly sizing: ResolvedSizing | undefined
  /** The youngest generation's load meter (self-sized only). */
  private readonly meter: LoadMeter | null
  /** The generation id the meter measures (the youngest, G). */
  private meterGen = NaN
  /** [0] the fleet's admitted cost of generation meterGen as last read from Redis, [1] this instance's cost not yet reported (typed: no boxing). */
  private readonly fleetCost = new Float64Array(2)
  /** Recorded shapes (cells per level) by generation id: the fleet's, adopted. */
  private readonly shapes = new Map<number, number>()
  /** This instance's proposal by generation id, decided once from its meter (for a generation not yet recorded). */
  private readonly proposals = new Map<number, number>()
  /** Cells per level of the generations opened before any is recorded (self-sized: the initial size). */
  private readonly initialCells: number
  /** Generations created with another size than the youngest before them. */
  private resizeCount = 0
  /** Whether onSizingLimit heard each kind already. */
  private readonly limitReported = { budget: false, invalid: false }
  /** Whether the `'fleet-lag'` event was emitted (once per store, `reportLagDrops`). */
  private readonly lagNotice: LagNotice = { reported: false }
  /** Server ms of the last early-growth check (one per `sizing.checkEveryMs`, at a sync). */
  private lastEarlyCheckMs = -Infinity
  /** The fleet's cost of the youngest at the last early check (the fleet's window rate, `fleetWindowRate`). */
  private readonly earlyMark: FleetWindowMark = { gen: NaN, ms: NaN, cost: 0 }
  /** Twins started (recorded and adopted here). */
  earlyGrowths = 0
  /** Cells per level the last early check wanted for a twin (0: none): twins are proposed at the second check in a row that wants one. */
  private earlyWanted = 0
  /** The earliest switch of a folding twin adopted here and not switched to yet (Infinity: none). */
  private nextFoldAtMs = Infinity
  /** Live generations whose lazy fold is in progress (`Sketch.folding`), as of the last sweep: 0 keeps the calls' path as it was. */
  private foldingCount = 0
  /**
   * Cells a call or a completion turn folds at most (`FOLD_SLICE_CELLS`); a twin of at most
   * this many cells folds at once. Tests lower it (a small shape folding over many calls) or set
   * it to Infinity (every fold at once, by `Sketch.foldFrom`, as before: the reference).
   * @internal
   */
  foldSliceCells = FOLD_SLICE_CELLS
  /**
   * A fold's chunk at most (`FOLD_CHUNK_CELLS`, a power of two); tests lower it.
   * @internal
   */
  foldChunkCells = FOLD_CHUNK_CELLS

  /** @internal built by {@link redisStore} */
  constructor(
    private readonly spec: StoreSpec,
    private readonly o: ParsedRedisOptions,
    private readonly shared: SharedClient,
  ) {
    this.sizing =
      spec.sizing === undefined
        ? undefined
        : syncBudget(
            checkSizing(
              spec.sizing,
              spec.sketch?.levels ?? DEFAULT_LEVELS,
              spec.generations,
              spec.periodMs,
              new Sketch({ ...spec.sketch, levels: 1, cellsPerLevel: 1, clock: undefined }).decay,
            ),
            spec,
          )
    if (this.sizing === undefined) checkFixedBudget(spec)
    // a twin's adoption lag D = syncMs + timeoutMs must end within a generation's life, or this
    // instance's field in the fleet lag record drops every twin (spec/cluster.md "Early growth")
    else
      checkAdoptionLag(
        o.syncMs + o.timeoutMs,
        spec.generations,
        spec.periodMs,
        '"syncMs" and "timeoutMs"',
        `syncMs + timeoutMs = ${o.syncMs} + ${o.timeoutMs}`,
      )
    // a self-sized policy's shape in the fingerprint is its largest (the budget's)
    const { shape, initialCells } = policyFleetShape(spec, o, this.sizing)
    this.shape = shape
    this.initialCells = initialCells
    this.meter = this.sizing === undefined ? null : new LoadMeter(0)
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
    registerResultFiller(this, this)
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
    const outcome = this.outcome(key, cost, limit)
    if (outcome === ADMITTED) return { admitted: true, score: this.decided[0] }
    if (outcome === DENIED) return { admitted: false, score: this.decided[0] }
    return outcome === OPEN
      ? { admitted: true, score: NaN, failure: 'open' }
      : { admitted: false, score: NaN, failure: 'closed' }
  }

  /**
   * {@link RedisSyncStore.tryConsume} writing its outcome into `out` instead of a new object
   * (the debt meter's path, `resultFillerOf`: no result object per request).
   * @throws as {@link RedisSyncStore.tryConsume}
   * @internal
   */
  consumeInto(key: string, cost: number, limit: number, out: StoreResultSlot): void {
    const outcome = this.outcome(key, cost, limit)
    out.admitted = outcome === ADMITTED || outcome === OPEN
    out.score = outcome === ADMITTED || outcome === DENIED ? this.decided[0] : NaN
    out.failure = outcome === OPEN ? 'open' : outcome === CLOSED ? 'closed' : undefined
  }

  /**
   * The decision of {@link RedisSyncStore.tryConsume}: {@link ADMITTED} or {@link DENIED} (the
   * score in `decided`), or what `onStoreError` answers while the view is stale ({@link OPEN},
   * {@link CLOSED}).
   */
  private outcome(key: string, cost: number, limit: number): number {
    checkFinite('cost', cost)
    checkFinite('limit', limit)
    this.assertOpen()
    if (this.o.onStoreError !== 'local' && this.stale()) return this.o.onStoreError === 'open' ? OPEN : CLOSED
    // one clock reading for the rotation and the decision, and one hash of the key in the
    // deciding generation, whose aggregate is a denial's score (as the local store's
    // Rotator.consume): tryUpdate then estimate hashed twice and read the clock three times:
    // 365 ns a decision against the local store's 140, now 223 against 151 (20 keys in turn,
    // median batch of 5 rounds, load average 9 on 2 cores; examples/bench/sync-store-cost.ts)
    const nowMs = this.local.now()
    this.rotate(nowMs)
    if (this.foldingCount > 0) this.sweepFolds()
    const gens = this.gens
    const oldest = gens[0]
    const before = oldest.sketch.consumeTrackedAt(nowMs, key, cost, limit)
    if (!(before + cost <= limit)) {
      this.decided[0] = before
      return DENIED // NaN never admits
    }
    record(oldest, cost)
    const score = oldest.sketch.lastAggregate
    this.writeYounger(key, cost, score)
    // the youngest generation was written last: its hasher holds the key's hash
    if (this.meter !== null) this.meter.record(gens[gens.length - 1].sketch.hasher, cost)
    this.decided[0] = score
    return ADMITTED
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
    for (let g = 0; g < gens.length; g++) {
      if (g > 0) writeOne(gens[g], key, delta, oldestAfter, carry)
      // a twin (early growth) is written beside its base, with the same carried floor
      const twin = gens[g].twin
      if (twin !== undefined) writeOne(twin, key, delta, oldestAfter, carry)
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
    if (this.foldingCount > 0) this.sweepFolds()
    const oldest = this.gens[0]
    oldest.sketch.update(key, delta)
    record(oldest, delta)
    const score = oldest.sketch.estimate(key)
    this.writeYounger(key, delta, score)
    if (this.meter !== null) this.meter.record(this.gens[this.gens.length - 1].sketch.hasher, delta)
    return score
  }

  /** The key's aggregate in the oldest live generation of the local view. */
  read(key: string): number {
    this.assertOpen()
    this.rotate()
    if (this.foldingCount > 0) this.sweepFolds()
    return this.gens[0].sketch.estimate(key)
  }

  /**
   * Cells held in this process: per live generation L × M × {@link SYNC_BYTES_PER_CELL} bytes, plus
   * the 2 KiB load meter when self-sized; while a folding twin's fold is in progress, also its
   * base's cells and sums (L × M_base × 24 bytes, the synchronous fold's garbage until the next GC).
   */
  sizeBytes(): number {
    let bytes = this.meter === null ? 0 : METER_BYTES
    for (const g of this.gens) {
      bytes += this.shape.levels * g.sketch.cellsPerLevel * SYNC_BYTES_PER_CELL
      const sums = g.sketch.foldSums
      if (sums !== undefined) bytes += sums.pending.length * (SKETCH_BYTES_PER_CELL + 8)
      if (g.twin !== undefined) bytes += this.shape.levels * g.twin.sketch.cellsPerLevel * SYNC_BYTES_PER_CELL
    }
    return bytes
  }

  /**
   * Cells per level of each live generation as it decides now, oldest first (a base until its
   * twin decides, then the twin), the resizes (twins of another size included) and the early
   * growths, and the live twins (spec/cluster.md "Early growth"): a pending one with its base's
   * position and the fleet's switch time, a deciding one at position 0 since that time. As of
   * the store's last call (a switch due since then shows at the next). Allocates.
   */
  generationShapes(): GenerationShapes {
    const early: EarlyGeneration[] = []
    this.gens.forEach((g, generation) => {
      const cellsPerLevel = g.sketch.cellsPerLevel
      if (g.suffix !== '')
        early.push({ generation, cellsPerLevel, twin: true, decidesAtMs: g.decidesFromMs, deciding: generation === 0 })
      if (g.foldTwin !== undefined)
        early.push({
          generation,
          cellsPerLevel: g.foldTwin.cells,
          twin: true,
          decidesAtMs: g.foldTwin.switchAtMs,
          deciding: false,
        })
      if (g.twin !== undefined)
        early.push({
          generation,
          cellsPerLevel: g.twin.sketch.cellsPerLevel,
          twin: true,
          decidesAtMs: g.switchAtMs,
          deciding: false,
        })
    })
    return {
      generationCellsPerLevel: this.gens.map((g) => g.sketch.cellsPerLevel),
      resizes: this.resizeCount,
      early,
      earlyGrowths: this.earlyGrowths,
    }
  }

  /**
   * The live generations by id with their cells per level and whether the shape is still
   * this instance's proposal (tests of the fleet's agreement). Allocates.
   * @internal
   */
  liveShapes(): { id: number; cellsPerLevel: number; provisional: boolean; twin?: number; early?: boolean }[] {
    return this.gens.map((g) => ({
      id: g.id,
      cellsPerLevel: g.sketch.cellsPerLevel,
      provisional: g.provisional,
      ...(g.twin === undefined ? {} : { twin: g.twin.sketch.cellsPerLevel }),
      ...(g.foldTwin === undefined ? {} : { twin: g.foldTwin.cells }),
      ...(g.suffix === '' ? {} : { early: true }),
    }))
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
    // a client of the user's that auto-pipelines MGET (the pull): one 'autopipelining' event
    this.shared.checkPipelining(this.spec.name, 'mget')
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

  /**
   * Cells the live generations had folded into them from their bases so far (folding twins'),
   * for tests of the bounded fold (cells copied per call).
   * @internal
   */
  get foldCellsCopied(): number {
    let n = 0
    for (const g of this.gens) n += g.foldCopied
    return n
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

  /** {@link RedisSyncStore.serverNow} from a reading of the local clock (which is the explicit clock when there is one). */
  private serverNowAt(localNowMs: number): number {
    return this.o.clock !== undefined ? localNowMs : localNowMs + this.offsetMs
  }

  /**
   * Keep exactly the live generations O..O+N−1 (O = floor(time / periodMs)) of the current time estimate.
   * @param localNowMs a reading of the local clock just taken (default: read it now)
   */
  private rotate(localNowMs?: number): void {
    const N = this.shape.generations
    const now = localNowMs === undefined ? this.serverNow() : this.serverNowAt(localNowMs)
    const G = Math.floor(now / this.schedule.periodMs) + N - 1
    const gens = this.gens
    if (gens.length !== N || gens[N - 1].id !== G) this.rotateTo(G)
    // folding twins take their bases' places from their switch (spec/cluster.md "Early growth")
    if (now >= this.nextFoldAtMs) this.foldTwins(now)
    // a twin decides in its base's place once it is old enough (spec/cluster.md "Early growth")
    if (now >= gens[0].switchAtMs) {
      const twin = gens[0].twin!
      twin.decidesFromMs = gens[0].switchAtMs
      gens[0] = twin
    }
  }

  /**
   * Every live generation whose folding twin's switch is at or before `nowMs` (server ms) is
   * replaced by the twin, made of it by the Sketch's fold (each level repeated: every key reads
   * there what it read in the base), its pending sums folded alike (each base cell's sum on every
   * twin cell it repeats into: what the base would hold), until Redis holds the twin's folded cells
   * (`awaitFoldFrom`, see {@link RedisSyncStore.runSync}). From then on the base is neither
   * written nor synced here. A twin of more than `foldSliceCells` cells is folded lazily
   * (`Sketch.foldLazilyFrom`, its base's sums with each chunk: {@link FleetSketch.foldedChunk}),
   * in bounded slices ({@link RedisSyncStore.sweepFolds}): the switch itself copies nothing.
   */
  private foldTwins(nowMs: number): void {
    const gens = this.gens
    let next = Infinity
    for (let i = 0; i < gens.length; i++) {
      const g = gens[i]
      const f = g.foldTwin
      if (f === undefined) continue
      if (nowMs < f.switchAtMs) {
        if (f.switchAtMs < next) next = f.switchAtMs
        continue
      }
      const twin = this.generationOf(g.id, f.cells, false, TWIN_SUFFIX)
      if (this.shape.levels * f.cells <= this.foldSliceCells) {
        twin.sketch.foldFrom(g.sketch)
        foldPending(g, twin)
        twin.foldCopied = this.shape.levels * f.cells
      } else {
        // folded lazily: each call folds its key's chunks (locate) and a slice, a sync the rest
        twin.sketch.foldSums = { gen: twin, pending: g.pending, blocks: g.blocks }
        twin.sketch.foldLazilyFrom(g.sketch, this.foldChunkCells)
        this.foldingCount++
      }
      twin.awaitFoldFrom = g.sketch.cellsPerLevel
      twin.decidesFromMs = f.switchAtMs
      g.foldTwin = undefined
      g.foldedInto = twin
      gens[i] = twin
    }
    this.nextFoldAtMs = next
  }

  /**
   * A call's or a turn's share of the folds in progress: at most `foldSliceCells` cells (whole
   * chunks, one at least), oldest generation first (a call's key's chunks are folded by the
   * Sketch's locate before the call touches them); a finished fold lets its base go. Sets and
   * returns the count of folds still in progress. Allocates nothing.
   */
  private sweepFolds(): number {
    let budget = this.foldSliceCells
    let left = 0
    const gens = this.gens
    for (let g = 0; g < gens.length; g++) {
      const sketch = gens[g].sketch
      if (!sketch.folding) continue
      if (budget > 0) budget -= sketch.foldSome(budget)
      if (sketch.folding) left++
      else sketch.foldSums = undefined // the base's sums are let go with its cells
    }
    this.foldingCount = left
    return left
  }

  /**
   * Finish the folds in progress before a sync reads or replaces a twin's cells or pushes its
   * sums: a slice of `foldSliceCells` cells per turn of the event loop (setImmediate between),
   * so the sync's own pause stays bounded too; calls in between fold their keys' cells.
   */
  private async finishFolds(): Promise<void> {
    while (this.foldingCount > 0 && this.sweepFolds() > 0) await new Promise((resolve) => setImmediate(resolve))
  }

  /** Keep exactly the live generations G − N + 1..G (a clock estimate that moved back keeps the newer ones). */
  private rotateTo(G: number): void {
    const N = this.shape.generations
    const gens = this.gens
    while (gens.length > 0 && gens[0].id < G - N + 1) gens.shift()
    if (gens.length === 0) {
      for (let id = G - N + 1; id <= G; id++) gens.push(this.freshGeneration(id))
      this.newYoungest()
      return
    }
    // a clock estimate that moved back keeps the newer generations it already has
    for (let id = gens[gens.length - 1].id + 1; id <= G; id++) gens.push(this.freshGeneration(id))
    this.newYoungest()
  }

  /** Self-sized: the meter follows the youngest generation; recorded shapes and proposals of retired ones are dropped. */
  private newYoungest(): void {
    if (this.meter === null) return
    const G = this.gens[this.gens.length - 1].id
    if (G === this.meterGen) return
    this.meterGen = G
    this.meter.reset(this.serverNow())
    this.fleetCost[0] = 0
    this.fleetCost[1] = 0
    const oldest = this.gens[0].id
    for (const id of this.shapes.keys()) if (id < oldest) this.shapes.delete(id)
    for (const id of this.proposals.keys()) if (id < oldest) this.proposals.delete(id)
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
    // generation ids are by period: what was recorded or proposed under this policy's own is void
    this.shapes.clear()
    this.proposals.clear()
    this.lastEarlyCheckMs = -Infinity
    this.meterGen = NaN
    this.rotate()
    if (this.schedule.message !== undefined) {
      this.shared.emit({ type: 'schedule', policy: this.spec.name, message: `grudge: ${this.schedule.message}` })
    }
  }

  private freshGeneration(id: number): Generation {
    // self-sized: the fleet's record, else this instance's proposal, else the youngest's size
    const recorded = this.shapes.get(id)
    const previous = this.gens.length > 0 ? youngestCells(this.gens) : this.initialCells
    const cells =
      this.sizing === undefined ? this.shape.cellsPerLevel : (recorded ?? this.proposals.get(id) ?? previous)
    if (this.gens.length > 0 && cells !== previous) this.resizeCount++
    return this.generationOf(id, cells, this.sizing !== undefined && recorded === undefined)
  }

  private generationOf(id: number, cells: number, provisional: boolean, suffix = ''): Generation {
    const n = this.shape.levels * cells
    const mark = new Uint8Array(4 * Math.ceil(n / 4))
    return {
      id,
      provisional,
      sketch: new FleetSketch({ ...this.sketchConfig, cellsPerLevel: cells, hasher: this.hashers.get(id) }),
      suffix,
      twin: undefined,
      switchAtMs: NaN,
      decidesFromMs: NaN,
      foldTwin: undefined,
      awaitFoldFrom: 0,
      foldedInto: undefined,
      foldCopied: 0,
      mirror: new Float64Array(2 * n),
      seen: Array.from({ length: this.shape.slots }, () => ''),
      pending: new Float64Array(n),
      mark,
      markWords: new Uint32Array(mark.buffer),
      blocks: new Uint32Array(Math.ceil(n / (32 * MARK_BLOCK))),
      dirty: new Uint32Array(n),
      dirtyCount: 0,
    }
  }

  private async runSync(timeoutMs: number, adopted = false): Promise<void> {
    this.rotate()
    if (this.sizing !== undefined) {
      let recordedPeriodMs: number | undefined
      try {
        recordedPeriodMs = await withTimeout(this.shapeRound(), timeoutMs)
      } catch (err) {
        if (!isCoded(err)) {
          this.o.onError?.(err)
          if (this.downSinceMs === undefined) this.wentDown(err)
        }
        throw err
      }
      if (recordedPeriodMs !== undefined) {
        if (adopted) throw replyError('redis shape script (period)', recordedPeriodMs)
        this.adopt(recordedPeriodMs)
        return this.runSync(timeoutMs, true)
      }
      this.rotate()
    }
    // a folding twin in its base's place syncs once it is all folded here and Redis holds its folded cells
    for (const g of this.gens) if (g.awaitFoldFrom > 0) await this.foldRound(g, timeoutMs)
    // a switch passed during those round trips: its base's sums go to its twin, not to the base
    this.rotate()
    const gens = this.gens
    const gb = gens[0].id
    const K = gens[gens.length - 1].id - gb + 2 // one generation ahead, in case server time is ahead
    const S = this.shape.slots
    // per window index j: the local generation (pushed and pulled once its shape is the fleet's)
    const window: (Generation | undefined)[] = []
    for (let j = 0; j < K; j++) {
      const gen = gens.find((g) => g.id === gb + j)
      window.push(gen === undefined || gen.provisional || gen.awaitFoldFrom > 0 ? undefined : gen)
    }
    // one script per slot, each on its own hash tag (on a Cluster, on its own master), in parallel;
    // a twin still beside its base (early growth) syncs as a window of its own, on the same script
    const calls = Array.from({ length: S }, (_, slot) => this.slotCall(slot, gb, K, window))
    for (const g of gens) {
      const twin = g.twin
      if (twin !== undefined) for (let slot = 0; slot < S; slot++) calls.push(this.slotCall(slot, g.id, 1, [twin]))
    }
    const sentAt = this.local.now()
    const results = await Promise.allSettled(
      calls.map((c) =>
        withTimeout(
          this.shared.get().then((client: RedisLike) => this.slotRound(client, c)),
          timeoutMs,
        ),
      ),
    )
    let failure: unknown = undefined
    let recordedPeriodMs: number | undefined
    for (let c = 0; c < calls.length; c++) {
      const r = results[c]
      const { slot, window: win } = calls[c]
      const raw = r.status === 'fulfilled' ? r.value.raw : undefined
      if (r.status === 'rejected' && calls[c].merged) {
        // the push was merged, the pull after it failed: the sums are in Redis (nothing to put
        // back), the local cells keep this instance's view, and the sync fails
        failure ??= r.reason
        continue
      }
      if (
        r.status === 'rejected' ||
        !Array.isArray(raw) ||
        raw.length !== 3 + 3 * win.length ||
        typeof raw[0] !== 'number'
      ) {
        // nothing of this slot was merged (or it is unknown): its sums go with the next push
        // (if Redis did apply a timed-out push, those deltas count twice: conservative)
        putBack(calls[c].taken)
        if (r.status === 'rejected') failure ??= r.reason
        else if (Array.isArray(raw) && raw[0] === -1)
          failure = this.fatal = fingerprintError(this.shape, String(raw[1]))
        else if (Array.isArray(raw) && raw[0] === -3 && !adopted) recordedPeriodMs = Number(String(raw[1]))
        else failure ??= replyError('redis sync script', raw)
        continue
      }
      const serverNowMs = Number(String(raw[1]))
      const G = Number(String(raw[2]))
      // the server read its clock about halfway through the round trip (Cristian's algorithm):
      // the pulled cells are as of that local instant, so local decay resumes from there
      const localNow = this.o.clock !== undefined ? this.o.clock.now() : (sentAt + r.value.at) / 2
      if (this.o.clock === undefined) this.offsetMs = serverNowMs - localNow
      this.rotate()
      const N = this.shape.generations
      for (let j = 0; j < win.length; j++) {
        const gen = win[j]
        if (gen === undefined || gen.provisional || gen.id < G - N + 1 || gen.id > G) continue
        // still held here (not retired, or replaced by a record, while the sync was in flight)
        if (!this.gens.some((g) => g === gen || g.twin === gen)) continue
        const kind = raw[3 + 3 * j] as unknown
        const v = (kind === 2 && r.value.pulled !== undefined ? r.value.pulled[j] : raw[5 + 3 * j]) as
          Uint8Array | null | undefined
        const slotCells = Math.ceil(gen.sketch.cellsPerLevel / S)
        if (kind === 1 && v != null) {
          // a delta: the change log since this instance's last pull (spec/cluster.md "The change log")
          gen.sketch.loadSlotLog(v, slot, slotCells, serverNowMs, localNow, gen)
        } else if (kind === 2) {
          gen.sketch.loadSlot(v != null && v.length > 0 ? v : undefined, slot, slotCells, serverNowMs, localNow, gen)
        } else {
          failure ??= replyError('redis sync script (pull)', kind)
          continue
        }
        gen.seen[slot] = String(raw[4 + 3 * j])
      }
    }
    if (this.fatal !== undefined) throw this.fatal
    if (recordedPeriodMs !== undefined) {
      // nothing was merged in the slots that answered −3: re-key the local generations on the
      // fleet's period and sync again (what the other slots merged stays merged)
      this.adopt(recordedPeriodMs)
      return this.runSync(timeoutMs, true)
    }
    if (failure !== undefined) {
      // a slot that failed fails the sync: a key's cells lie in every slot (its levels' indexes)
      if (!isCoded(failure)) {
        this.o.onError?.(failure)
        if (this.downSinceMs === undefined) this.wentDown(failure)
      }
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the client's own rejection, passed through unchanged (as before slots)
      throw failure
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

  /**
   * Ask Redis to fold `twin` (a folding twin in its base's place, sync mode over one slot) from
   * its base, once every base push has landed: from its switch + {@link SYNC_FOLD_GUARD_TIMEOUTS}
   * × timeoutMs (`runSyncFold`). Until Redis holds it the twin is not synced: its sums wait
   * here, and its cells are made again at each sync of the base's as Redis holds them, folded,
   * plus those sums ({@link RedisSyncStore.foldLocally}). A failure leaves it waiting (the next
   * sync asks again).
   */
  private async foldRound(twin: Generation, timeoutMs: number): Promise<void> {
    // every fold in progress finished first: its twin's cells are made again or pulled, its sums pushed, only after
    await this.finishFolds()
    const foldAtMs = twin.decidesFromMs + SYNC_FOLD_GUARD_TIMEOUTS * this.o.timeoutMs
    try {
      const folded = await withTimeout(
        this.shared
          .get()
          .then((c: RedisLike) =>
            runSyncFold(
              c,
              this.shape,
              this.o.clock !== undefined ? String(this.o.clock.now()) : '',
              twin.id,
              twin.awaitFoldFrom,
              twin.sketch.cellsPerLevel,
              foldAtMs,
              this.schedule.periodMs,
            ),
          ),
        timeoutMs,
      )
      if (folded === true) twin.awaitFoldFrom = 0
      else this.foldLocally(twin, folded)
    } catch (err) {
      this.o.onError?.(err)
    }
  }

  /**
   * Before Redis folds a folding twin: its cells made again of the base's cells as Redis holds
   * them (`base`, L × M_base level-major cells, empty or short: a base never written), each
   * level repeated, plus this instance's sums of the twin (everything it added since its switch,
   * and its base's sums not pushed then): what a full pull of the twin would read once Redis
   * folds it with no other instance's write since. Without it an instance that never pulled the
   * base (one started after the switch) would decide on a twin of zeros until the fold.
   */
  private foldLocally(twin: Generation, base: Uint8Array): void {
    const M = twin.awaitFoldFrom
    const M2 = twin.sketch.cellsPerLevel
    const L = this.shape.levels
    const row = M * 16
    let raw: Uint8Array | undefined
    if (base.length === L * row) {
      const out = Buffer.allocUnsafe(L * M2 * 16)
      for (let i = 0; i < L; i++) {
        const src = base.subarray(i * row, (i + 1) * row)
        for (let r = 0; r < M2 / M; r++) out.set(src, (i * M2 + r * M) * 16)
      }
      raw = out
    }
    const localNow = this.local.now()
    twin.sketch.loadSlot(raw, 0, M2, this.serverNowAt(localNow), localNow, twin)
  }

  /**
   * One slot's sync on `client`: the sync script (push, and the pull of what changed since this
   * instance's last pull of each generation: its change log's tail, spec/cluster.md "The change
   * log"), then, with `mgetBuffer`, the full pulls apart: one `MGET` of the live generations of
   * the window held here that need one (a first pull, or a log started anew), sent once the
   * script's reply is in, so it reads the merged cells on a Cluster too (one hash tag: one
   * Cluster slot). Returning the cells from Lua costs Redis a copy into the Lua VM and another
   * into the reply: measured 0.9–1.1 ms of Redis CPU per sync of two 256 KiB generations
   * (L = 4, M = 4096) in the reply, 0.18–0.35 ms with the MGET (private redis-server 7.0.15,
   * 5 alternating rounds of 200 syncs, load average 8 on 2 cores; see
   * examples/bench/sync-store-cost.ts). Without `mgetBuffer` the reply carries a full pull.
   * Sets `call.merged` once the script merged the push.
   * @returns the script's reply, the local time it arrived, and the full pulls read apart by window index (undefined: none, or the reply carries them)
   */
  private async slotRound(
    client: RedisLike,
    call: SlotCall,
  ): Promise<{ raw: unknown; at: number; pulled: (Buffer | null | undefined)[] | undefined }> {
    const apart = client.mgetBuffer !== undefined
    const raw = await evalScript(
      client,
      this.script,
      this.sha,
      call.keys,
      [...call.args, apart ? '1' : '0', ...call.seen],
      true,
    )
    const at = this.local.now()
    if (!apart || !Array.isArray(raw) || raw[0] !== 1) return { raw, at, pulled: undefined }
    call.merged = true
    if (raw.length !== 3 + 3 * call.window.length) return { raw, at, pulled: undefined }
    const keys: string[] = []
    const full = (j: number): boolean => {
      const gen = call.window[j]
      return gen !== undefined && !gen.provisional && raw[3 + 3 * j] === 2
    }
    for (let j = 0; j < call.window.length; j++) if (full(j)) keys.push(call.keys[1 + j])
    if (keys.length === 0) return { raw, at, pulled: undefined }
    const values = await client.mgetBuffer!(...keys)
    const pulled: (Buffer | null | undefined)[] = []
    for (let j = 0, n = 0; j < call.window.length; j++) pulled.push(full(j) ? values[n++] : undefined)
    return { raw, at, pulled }
  }

  /**
   * KEYS and ARGV of slot `slot`'s sync script for generations gb..gb+K−1, taking (zeroing)
   * the pending sums of that slot's cells: slot s holds index j in [s·M_s, (s + 1)·M_s) of
   * every level, M_s = ceil(M / S) of the generation's M, at position level·M_s + j − s·M_s.
   */
  private slotCall(slot: number, gb: number, K: number, window: readonly (Generation | undefined)[]): SlotCall {
    const S = this.shape.slots
    const prefix = this.shape.keyPrefixes[slot]
    const keys: string[] = [this.shape.fpKeys[slot]]
    for (let j = 0; j < K; j++) keys.push(prefix + 'g' + (gb + j) + (window[j]?.suffix ?? ''))
    const args: (string | number | Buffer)[] = [
      this.o.clock !== undefined ? String(this.o.clock.now()) : '',
      String(this.schedule.periodMs),
      this.shape.ratePerMsArg,
      this.shape.loArg,
      this.schedule.hiArg,
      gb,
      K,
    ]
    const taken: Taken[] = []
    const sizes: string[] = []
    for (let j = 0; j < K; j++) {
      const gen = window[j]
      const M = gen?.sketch.cellsPerLevel ?? this.shape.cellsPerLevel
      const Ms = Math.ceil(M / S)
      sizes.push(String(Ms))
      const first = slot * Ms
      const blob = gen === undefined || gen.dirtyCount === 0 ? undefined : takeSlot(gen, first, Ms, S)
      if (blob === undefined) {
        args.push('')
        continue
      }
      taken.push({ gen: gen!, blob, first, Ms })
      args.push(blob)
    }
    // the slot's cells per level of each generation: a missing string is created at that size
    args.push(...sizes)
    // the change logs beside the cells, and what this instance last pulled of each (a delta pull)
    for (let j = 0; j < K; j++) keys.push(prefix + 'l' + (gb + j) + (window[j]?.suffix ?? ''))
    const seen = window.map((gen) => gen?.seen[slot] ?? '')
    return { slot, gb, window, keys, args, seen, taken, merged: false }
  }

  /**
   * Self-sized: one round trip of the shape script (spec/cluster.md "Shapes"). Reports this
   * instance's admitted cost of the youngest generation to the fleet's counter, records (if
   * absent) the shape of every generation still provisional here and, from the second half
   * of the youngest's period on, this instance's proposal for the next one; adopts what is
   * recorded.
   * @returns undefined, or the fleet's recorded period when it is another (nothing was changed)
   * @throws {GrudgeError} `ERR_GRUDGE_CLUSTER_SHAPE` for a record this instance cannot adopt,
   * `ERR_GRUDGE_CLUSTER_FINGERPRINT`, `ERR_GRUDGE_CLUSTER_REPLY` (each makes the store unusable)
   */
  private async shapeRound(): Promise<number | undefined> {
    const gens = this.gens
    const N = this.shape.generations
    const period = this.schedule.periodMs
    const G = gens[N - 1].id
    const now = this.serverNow()
    const meter = this.meter!
    const early = this.earlyCheck(now, G)
    this.fleetCost[1] += meter.windowCost()
    meter.closeWindow(now)
    const elapsedMs = now - (G - N + 1) * period
    const ask: ShapeAsk[] = []
    for (const g of gens)
      if (g.provisional) ask.push({ id: g.id, want: shapeRecord(this.shape, g.sketch.cellsPerLevel) })
    // early growth: this instance's twin proposals, else a read of every live generation's
    // early record (the others' proposals are adopted at this check)
    for (const g of gens) {
      if (g.twin !== undefined || g.foldTwin !== undefined || g.suffix !== '') continue
      ask.push({ id: g.id, want: early.get(g.id) ?? '', twin: true })
    }
    if (!this.shapes.has(G + 1) && elapsedMs >= period / 2) {
      let cells = this.proposals.get(G + 1)
      if (cells === undefined) this.proposals.set(G + 1, (cells = this.decide(now, elapsedMs)))
      ask.push({ id: G + 1, want: shapeRecord(this.shape, cells) })
    }
    const reported = this.fleetCost[1]
    let answer: ShapeAnswer
    try {
      answer = await this.shared.get().then((c: RedisLike) =>
        runShapeRound(
          c,
          this.shape,
          this.o.clock !== undefined ? String(this.o.clock.now()) : '',
          period,
          ask,
          reported,
          G,
          undefined,
          // every sync's round registers this instance's adoption lag in the fleet's, and the
          // script moves this round's twin proposals past every live field's until (spec/cluster.md "Early growth")
          { ownLagMs: this.adoptionLagMs(), proposedAtMs: now },
        ),
      )
    } catch (err) {
      // another fleet, a reply or a record this instance cannot use: the store is unusable
      if (isCoded(err)) throw (this.fatal = err as GrudgeError)
      throw err
    }
    if (answer.periodMs !== undefined) return answer.periodMs
    // a proposal dropped for another instance's lag: told once (an older build's, or other options)
    reportLagDrops((e) => this.shared.emit(e), this.lagNotice, this.shape, this.spec.name, answer.lag, period)
    // the counter holds what every instance reported for G, this one's included
    if (this.meterGen === G) {
      this.fleetCost[0] = answer.costTotal
      this.fleetCost[1] -= reported
    }
    for (let j = 0; j < ask.length; j++) {
      const id = ask[j].id
      if (ask[j].twin === true) {
        const twin = answer.twins[j]
        const base = this.gens.find((g) => g.id === id && g.suffix === '')
        if (twin === undefined || base === undefined || base.twin !== undefined || base.foldTwin !== undefined) continue
        if (twin.fold) {
          // a folding twin: held from its switch only (foldTwins)
          if (!this.folds(base.sketch.cellsPerLevel, twin.cellsPerLevel)) {
            throw (this.fatal = new GrudgeError(
              'ERR_GRUDGE_CLUSTER_SHAPE',
              `${twinKey(this.shape, id)}: a folding twin of ${twin.cellsPerLevel} cells per level cannot fold its base of ${base.sketch.cellsPerLevel} over ${this.shape.slots} slot(s) in sync mode (one slot, a multiple of the base)`,
            ))
          }
          base.foldTwin = { cells: twin.cellsPerLevel, switchAtMs: twin.switchAtMs }
          if (twin.switchAtMs < this.nextFoldAtMs) this.nextFoldAtMs = twin.switchAtMs
        } else {
          base.twin = this.generationOf(id, twin.cellsPerLevel, false, TWIN_SUFFIX)
          base.switchAtMs = twin.switchAtMs
        }
        this.earlyGrowths++
        if (twin.cellsPerLevel !== base.sketch.cellsPerLevel) this.resizeCount++
        continue
      }
      const cells = answer.cells[j]
      this.shapes.set(id, cells)
      const i = this.gens.findIndex((g) => g.id === id)
      if (i < 0 || !this.gens[i].provisional) continue
      const old = this.gens[i]
      if (old.sketch.cellsPerLevel === cells) {
        old.provisional = false
        continue
      }
      // another instance recorded first: adopt its shape; what this one wrote there locally
      // (never pushed) is dropped, the carry-forward restores a key's floor at its next write
      const prev = i > 0 ? this.gens[i - 1].sketch.cellsPerLevel : undefined
      if (prev !== undefined) this.resizeCount += (cells !== prev ? 1 : 0) - (old.sketch.cellsPerLevel !== prev ? 1 : 0)
      this.gens[i] = this.generationOf(id, cells, false)
    }
    return undefined
  }

  /**
   * Early growth (spec/cluster.md "Early growth"): at a check (the first sync at least
   * `sizing.checkEveryMs` after the last one), this instance's own meter over the window since
   * the last sync, the cost rate the larger of its own and the fleet's (`fleetWindowRate`); on a
   * load jump (the Rotator's rule, `proposeEarlyCells`) confirmed by the check before (the first
   * window wholly after a jump sizes it), the early records to propose, by generation id: a twin
   * of the sizer's size M′ for every live generation G′ ≤ `G` smaller than M′ — folding (one
   * slot, {@link RedisSyncStore.folds}), deciding from the adoption lag D = syncMs + timeoutMs
   * after now (moved by the shape script past every live field of the fleet lag record), else written beside its base, deciding from A + D after now — but none that
   * would retire before it could decide. Nothing while the youngest has a twin or is still
   * provisional here (the record is set-if-absent: a repeated proposal after a failed round
   * changes nothing).
   */
  private earlyCheck(nowMs: number, G: number): Map<number, string> {
    const out = new Map<number, string>()
    const gens = this.gens
    const y = gens[gens.length - 1]
    if (y.provisional || y.twin !== undefined || y.foldTwin !== undefined || y.suffix !== '') return out
    // the sizer runs at most once per checkEveryMs, as in a Rotator: a sync is more frequent
    if (nowMs - this.lastEarlyCheckMs < this.sizing!.checkEveryMs) return out
    this.lastEarlyCheckMs = nowMs
    // what is held, or will be from a recorded folding twin's switch (in its base's place)
    let live = 0
    for (const g of gens) live += (g.foldTwin?.cells ?? g.sketch.cellsPerLevel) + (g.twin?.sketch.cellsPerLevel ?? 0)
    const fleetRate = fleetWindowRate(
      this.earlyMark,
      y.id,
      nowMs,
      this.meterGen === y.id ? this.fleetCost[0] + this.fleetCost[1] + this.meter!.windowCost() : NaN,
    )
    const cells = proposeEarlyCells(
      this.sizing!,
      this.meter!,
      y.sketch,
      this.shape.levels,
      this.shape.generations,
      live,
      nowMs,
      this.limitReported,
      fleetRate,
    )
    const wanted = this.earlyWanted
    this.earlyWanted = cells
    if (cells === 0 || wanted === 0) return out
    const period = this.schedule.periodMs
    const lag = this.adoptionLagMs()
    const age = promotionAgeMs(y.sketch.decay, this.schedule.hi, this.shape.generations, period)
    // the budget (N × the largest shape per level) holds every twin proposed here, not only one:
    // a folding twin takes its base's place (it costs the difference), a written-beside one is
    // held beside it (its whole size); the youngest first, as it lives longest
    let room = this.shape.generations * this.sizing!.maxCellsPerLevel - live
    for (let i = gens.length - 1; i >= 0; i--) {
      const g = gens[i]
      if (g.id > G || g.provisional || g.suffix !== '' || g.twin !== undefined || g.foldTwin !== undefined) continue
      if (g.sketch.cellsPerLevel >= cells) continue
      const fold = this.folds(g.sketch.cellsPerLevel, cells)
      const cost = fold ? cells - g.sketch.cellsPerLevel : cells
      if (cost > room) continue
      const switchAtMs = nowMs + (fold ? 0 : age) + lag
      if (switchAtMs < (g.id + 1) * period) {
        out.set(g.id, twinRecord(this.shape, switchAtMs, cells, fold))
        room -= cost
      }
    }
    return out
  }

  /**
   * Self-sized: this instance's adoption lag D of a twin, in ms: syncMs + timeoutMs (its next
   * sync's shape round, which reads the early records before anything is pushed, lands within
   * it of the last). Every sync's shape round registers it in the fleet lag record (`lagKey`),
   * as its round's time + D, and a twin proposed anywhere decides no sooner than (A +) the latest
   * such time still standing, its own start + (A +) D included (spec/cluster.md "Early growth",
   * _The fleet's adoption lag_). Below N × periodMs (refused at construction, `checkAdoptionLag`).
   */
  private adoptionLagMs(): number {
    return this.o.syncMs + this.o.timeoutMs
  }

  /**
   * Whether a generation of `baseCells` per level folds into a twin of `twinCells` in sync mode
   * (spec/cluster.md "Early growth", _The fold_): over one slot (the level-major layout of the
   * Sketch, a key's index mod M′ reducing mod M to its index in the base), M dividing M′; over
   * S > 1 slots the cells are split by index range, so a twin's slot would take cells of every
   * slot of its base, in other Redis Cluster slots: no fold.
   */
  private folds(baseCells: number, twinCells: number): boolean {
    return this.shape.slots === 1 && twinCells >= baseCells && twinCells % baseCells === 0
  }

  /** This instance's proposal for the next generation: its sizer on the youngest's load, the cost rate the fleet's. */
  private decide(nowMs: number, elapsedMs: number): number {
    const y = this.gens[this.gens.length - 1]
    const youngest = (y.twin ?? y).sketch
    return proposeCells(
      this.sizing!,
      this.meter!,
      youngest,
      this.shape.levels,
      this.shape.generations,
      this.fleetCost[0] + this.fleetCost[1],
      nowMs,
      elapsedMs,
      this.limitReported,
    )
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

/** The write of one younger generation (or twin): the carried floor, or the plain clamped addition. */
function writeOne(gen: Generation, key: string, delta: number, floor: number, carry: boolean): void {
  if (carry) gen.sketch.updateWithFloorTracked(key, delta, floor, gen)
  else {
    gen.sketch.update(key, delta)
    record(gen, delta)
  }
}

/** Cells per level of the youngest generation as it will decide: its twin's when it has one. */
function youngestCells(gens: readonly Generation[]): number {
  const y = gens[gens.length - 1]
  return y.foldTwin?.cells ?? (y.twin ?? y).sketch.cellsPerLevel
}

/** Remember that the last located key's cells got `delta`. */
function record(gen: Generation, delta: number): void {
  const M = gen.sketch.cellsPerLevel
  const idx = gen.sketch.lastIdx
  for (let i = 0; i < idx.length; i++) addPending(gen, i * M + idx[i], delta)
}

function addPending(gen: Generation, p: number, delta: number): void {
  if ((gen.mark[p] & DIRTY) === 0) {
    gen.mark[p] |= DIRTY
    markBlock(gen, p)
    gen.dirty[gen.dirtyCount++] = p
  }
  gen.pending[p] += delta
}

/** One slot's sync script call: its window of generations gb…gb+K−1, KEYS, ARGV and what its push took. */
interface SlotCall {
  slot: number
  gb: number
  window: readonly (Generation | undefined)[]
  keys: string[]
  args: (string | number | Buffer)[]
  /** Per window index: what this instance last pulled of the generation's slot (`<epoch>:<length>` of its change log), '' for a full pull. */
  seen: string[]
  taken: Taken[]
  /** Whether the script merged the push (set when its reply is in): a pull that fails after it puts nothing back. */
  merged: boolean
}

/** What one slot's push took from a generation's pending sums: the records sent, and the slot's first index and cells per level (to map a record back to its cell). */
interface Taken {
  gen: Generation
  blob: Buffer
  first: number
  Ms: number
}

/**
 * Take the pending sums of a generation's dirty cells in one slot (index j in [first,
 * first + Ms) of every level) as the push argument: 12-byte records (u32le position in the
 * slot's string, level·Ms + j − first; f64le sum), in one pass over the dirty list that also
 * zeroes their sums, clears their {@link DIRTY} marks and keeps the other slots' cells in the
 * list. With one slot (S = 1) every dirty cell is taken, uncounted.
 * @returns the records, or undefined when the slot has no dirty cell
 */
function takeSlot(gen: Generation, first: number, Ms: number, S: number): Buffer | undefined {
  const { dirty, pending, mark } = gen
  const M = gen.sketch.cellsPerLevel
  const count = gen.dirtyCount
  let n = count
  if (S > 1) {
    n = 0
    for (let k = 0; k < count; k++) {
      const idx = dirty[k] % M
      if (idx >= first && idx < first + Ms) n++
    }
  }
  if (n === 0) return undefined
  const blob = Buffer.allocUnsafe(n * 12)
  let w = 0
  let kept = 0
  for (let k = 0; k < count; k++) {
    const p = dirty[k]
    const idx = p % M
    if (idx < first || idx >= first + Ms) {
      dirty[kept++] = p
      continue
    }
    blob.writeUInt32LE(((p - idx) / M) * Ms + idx - first, w)
    blob.writeDoubleLE(pending[p], w + 4)
    w += 12
    pending[p] = 0
    mark[p] &= HELD
  }
  gen.dirtyCount = kept
  return blob
}

/** A failed or refused slot push: its sums go back into the pending ones (each record's cell: level·M + first + position mod Ms), for the next push. */
function putBack(taken: readonly Taken[]): void {
  for (const { gen, blob, first, Ms } of taken) {
    const M = gen.sketch.cellsPerLevel
    // a base replaced by its folding twin meanwhile: its sums go to the twin, folded
    const into = gen.foldedInto
    for (let o = 0; o + 12 <= blob.length; o += 12) {
      const q = blob.readUInt32LE(o)
      const p = Math.floor(q / Ms) * M + first + (q % Ms)
      if (into === undefined) addPending(gen, p, blob.readDoubleLE(o + 4))
      else addFolded(into, M, p, blob.readDoubleLE(o + 4))
    }
  }
}

/** A folding twin's pending sums gain its base's (every base cell's sum on each twin cell it repeats into). */
function foldPending(base: Generation, twin: Generation): void {
  const M = base.sketch.cellsPerLevel
  for (let k = 0; k < base.dirtyCount; k++) {
    const p = base.dirty[k]
    if (base.pending[p] !== 0) addFolded(twin, M, p, base.pending[p])
  }
}

/**
 * Add `delta`, a sum of base cell `p` (Sketch layout, `baseCells` per level), to each cell of
 * folding twin `twin` that repeats it (each folded first while its fold is in progress, so the
 * sums add in the synchronous fold's order: the base's first; two addends, as a switch has at
 * most one base push put back, would commute anyway).
 */
function addFolded(twin: Generation, baseCells: number, p: number, delta: number): void {
  const M2 = twin.sketch.cellsPerLevel
  const level = Math.floor(p / baseCells)
  const j = p - level * baseCells
  for (let c = j; c < M2; c += baseCells) {
    if (twin.sketch.folding) twin.sketch.foldChunkOf(level * M2 + c)
    addPending(twin, level * M2 + c, delta)
  }
}
