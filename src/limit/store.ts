import type { SketchOptions } from '../sketch/shape.js'
import type { EarlyGeneration, RotatorSizing } from '../sketch/rotator-sizing.js'
import { Rotator } from '../sketch/rotator.js'
import type { Clock, Ticker } from '../clock.js'

/** What {@link ScoreStore.generationShapes} reports. */
export interface GenerationShapes {
  /** Cells per level of each generation, oldest (deciding) first. */
  generationCellsPerLevel: readonly number[]
  /** Generations created with another size than the one before (0 for a fixed shape); early growths included. */
  resizes: number
  /** Rotations completed so far, when the store counts them (the in-process Rotator does). */
  rotations?: number
  /**
   * The live generations grown early on a load jump, oldest first: in process a generation
   * folded into a larger shape in its place, in a Redis fleet a twin beside its base (its cells, whether it decides yet,
   * from when). Absent from stores that do not report them; empty when none is live.
   */
  early?: readonly EarlyGeneration[]
  /** Early growths so far (started here or, in a fleet, adopted), when the store counts them. */
  earlyGrowths?: number
}

/** The outcome of {@link ScoreStore.tryConsume}. */
export interface StoreResult {
  /** Whether the cost was applied (score + cost ≤ limit). */
  admitted: boolean
  /** The key's score after the call: after the cost when admitted, the current score when not. NaN when `failure` is set (the shared store could not say; adapters ignore it then). */
  score: number
  /**
   * Set when a shared store could not answer within its timeout and the configured
   * `onStoreError` decided instead: `'open'` (admitted, score unknown: adapters then send no
   * remaining/reset figures rather than fake ones) or `'closed'` (denied: adapters answer 503).
   * Absent when the store (or a local fallback sketch) decided.
   */
  failure?: 'open' | 'closed'
}

/**
 * Where a policy keeps its scores: an in-process {@link Rotator} (the default, see
 * {@link localStore}) or a shared store such as Redis (`src/cluster/`). A store may answer
 * synchronously or with a Promise; adapters await only when they get a Promise, so the
 * in-process path stays synchronous.
 */
export interface ScoreStore {
  /**
   * Admit iff `score + cost ≤ limit` (inclusive), applying `cost` to the key if admitted
   * (the Sketch's `tryUpdate`).
   */
  tryConsume(key: string, cost: number, limit: number): StoreResult | Promise<StoreResult>
  /** Add `delta` (may be negative) to the key; returns the score after. */
  add(key: string, delta: number): number | Promise<number>
  /** The key's current score. */
  read(key: string): number | Promise<number>
  /** Memory of the store's cells held by this process, in bytes. */
  sizeBytes(): number
  /**
   * The shape of each generation, oldest (deciding) first, and how many times a self-sized
   * store resized (0 for a fixed shape); absent for stores that do not report them (the Redis stores).
   */
  generationShapes?(): GenerationShapes
  /**
   * Whether the last write of `key` reached only this process's fallback copy, which the
   * store drops when its shared state answers again (a Redis exact store in its
   * `onStoreError: 'local'` fallback): `reset` and `forgive` then lowered the key on this
   * instance only, for the outage (spec/http.md §2.1.2). Absent: every write is kept.
   * @internal
   */
  writesLocally?(key: string): boolean
  /** Release timers and connections; idempotent. */
  close(): void | Promise<void>
}

/** What a policy asks of a store factory: the shape and decay of the sketch it needs. */
export interface StoreSpec {
  /** A stable name of the policy instance (e.g. `debt:api`), unique per limiter; stores use it to namespace shared state. */
  name: string
  /** Shape, decay, bounds, aggregator and hasher (with its seed) of the sketch. */
  sketch: SketchOptions
  /** Number of generations (≥ 2). */
  generations: number
  /** Rotation period in ms. */
  periodMs: number
  /** Time source for in-process stores. */
  clock?: Clock
  /** Ticker for in-process rotation (tests pass a FakeTicker). */
  ticker?: Ticker
  /**
   * Self-sizing of the generations (spec/rotator.md §1), present when the policy is sized by its
   * `memory` budget rather than a fixed `cellsPerLevel`. `sketch.cellsPerLevel` is then the
   * budget's largest shape, which the first generation starts at. The Redis sync and exact
   * stores size each generation by the fleet's recorded shape (spec/cluster.md "Shapes").
   */
  sizing?: RotatorSizing
  /**
   * The bytes this store may hold, present when the policy has a `memory` budget: the budget
   * less what the limiter keeps inside it for its telemetry. With `sizing`, the largest shape
   * in `sketch.cellsPerLevel` counts 16 B per cell and the 2 KiB load meter; a store that
   * holds more per cell sizes its generations from this figure instead (the Redis sync store,
   * 45 B per cell), and a fixed shape that does not fit it is refused
   * (`ERR_GRUDGE_SIZING_CONFLICT`), so no store holds more than its budget.
   */
  memoryBytes?: number
}

/** Builds the store of one policy. */
export type StoreFactory = (spec: StoreSpec) => ScoreStore

/**
 * The Rotator behind each store {@link localStore} built, with the store's own `tryConsume`:
 * a copy or a wrapper of the store (`{ ...store, tryConsume }`) is not in it.
 */
const LOCAL_ROTATORS = new WeakMap<ScoreStore, { rotator: Rotator; tryConsume: ScoreStore['tryConsume'] }>()

/**
 * The Rotator of a store that {@link localStore} built, when `store` is that very object and
 * still has its own `tryConsume`; else undefined. The debt meter then consumes on the
 * Rotator directly ({@link Rotator.consume}, the rule `tryConsume` applies), with no result
 * object per request (measured: 56 B a decision, the sampling heap profiler over
 * examples/bench/decision.bench.ts's path). A wrapped or copied store keeps its own path.
 * @internal
 */
export function localRotatorOf(store: ScoreStore): Rotator | undefined {
  const local = LOCAL_ROTATORS.get(store)
  return local !== undefined && store.tryConsume === local.tryConsume ? local.rotator : undefined
}

/** A {@link StoreResult} that {@link ResultFiller.consumeInto} overwrites (one per caller, reused). @internal */
export interface StoreResultSlot {
  admitted: boolean
  score: number
  failure: 'open' | 'closed' | undefined
}

/**
 * A store whose synchronous decision can fill a caller's result instead of returning a new
 * one: `consumeInto(key, cost, limit, out)` decides as `tryConsume(key, cost, limit)` would
 * and writes its outcome into `out` (`failure` undefined when the store decided).
 * @internal
 */
export interface ResultFiller {
  consumeInto(key: string, cost: number, limit: number, out: StoreResultSlot): void
}

/** The stores that registered a {@link ResultFiller}, with the `tryConsume` they had then. */
const RESULT_FILLERS = new WeakMap<ScoreStore, { tryConsume: ScoreStore['tryConsume']; filler: ResultFiller }>()

/**
 * Register `filler` as the result-object-free form of `store`'s own `tryConsume` (the Redis
 * sync store does, for itself). @internal
 */
export function registerResultFiller(store: ScoreStore, filler: ResultFiller): void {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to compare by identity, never called
  RESULT_FILLERS.set(store, { tryConsume: store.tryConsume, filler })
}

/**
 * The {@link ResultFiller} of a store that registered one, when `store` still has the
 * `tryConsume` it had then; else undefined. The debt meter then decides through it with no
 * result object per request (as {@link localRotatorOf} for the local store); a wrapped or
 * copied store keeps its own path.
 * @internal
 */
export function resultFillerOf(store: ScoreStore): ResultFiller | undefined {
  const f = RESULT_FILLERS.get(store)
  return f !== undefined && store.tryConsume === f.tryConsume ? f.filler : undefined
}

/**
 * The default store: an in-process {@link Rotator}, synchronous, zero round trips.
 * @returns a factory that builds one Rotator per policy
 */
export function localStore(): StoreFactory {
  return (spec) => {
    const rotator = new Rotator({
      sketch: spec.sketch,
      generations: spec.generations,
      periodMs: spec.periodMs,
      clock: spec.clock,
      ticker: spec.ticker,
      sizing: spec.sizing,
    })
    const tryConsume: ScoreStore['tryConsume'] = (key, cost, limit) => {
      // the Rotator's tryUpdate, with the score it decided on: read the deciding generation
      // once, and write every generation only when admitted (a denial hashes once)
      const score = rotator.consume(key, cost, limit)
      if (!(score + cost <= limit)) return { admitted: false, score } // NaN never admits
      return { admitted: true, score: score + cost }
    }
    const store: ScoreStore = {
      tryConsume,
      add: (key, delta) => rotator.updateAndEstimate(key, delta),
      read: (key) => rotator.estimate(key),
      sizeBytes: () => rotator.sizeBytes(),
      generationShapes: () => ({
        generationCellsPerLevel: rotator.generationCellsPerLevel,
        resizes: rotator.resizes,
        rotations: rotator.rotations,
        early: rotator.earlyGenerations(),
        earlyGrowths: rotator.earlyGrowths,
      }),
      close: () => rotator.close(),
    }
    LOCAL_ROTATORS.set(store, { rotator, tryConsume })
    return store
  }
}
