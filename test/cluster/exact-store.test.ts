// Exact mode against a real Redis: the same decisions as the in-process Sketch (placed by the
// exact layout's blocks: a subclass that only overrides where a key's cells are), operation
// by operation, on a fake clock (the store's `clock` option makes the script use that time
// instead of Redis TIME), and memory that does not grow with the number of keys.
import t, { type Test } from 'tap'
import type { Redis } from 'ioredis'
import { FakeClock } from '../../src/testing/index.js'
import { Sketch } from '../../src/sketch/sketch.js'
import type { SketchOptions } from '../../src/sketch/shape.js'
import { exponential, linear, none } from '../../src/sketch/decay.js'
import { murmur3, sipHash } from '../../src/hash/hasher.js'
import { redisStore } from '../../src/index.js'
import { blockShape, blockedIndexes, generationHasher, slotHasher } from '../../src/cluster/fleet-hash.js'
import { MAX_BATCH, RECORD_CHECK_MS, type RedisExactStore } from '../../src/cluster/exact-store.js'
import { UNROLLED_MAX_LEVELS, exactScript } from '../../src/cluster/scripts.js'
import type { Rotator } from '../../src/sketch/rotator.js'
import { SHRINK_LOAD_MARGIN } from '../../src/sketch/rotator-sizing.js'
import { fleetShape } from '../../src/cluster/connection.js'
import { parseRedisOptions } from '../../src/cluster/options.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const STEPS = 600
const SECRET = '000102030405060708090a0b0c0d0e0f'
const SECRET_BYTES = Uint8Array.from({ length: 16 }, (_, i) => i)

/** xorshift32: a fixed-seed sequence of operations, reproducible without our own output. */
function rng(seed: number) {
  let x = seed >>> 0 || 1
  return () => {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    return (x >>> 0) / 0x100000000
  }
}

/**
 * The in-process Sketch with the exact layout's placement (spec/cluster.md, "Storage layout"):
 * level i's cell is column b·W + offset_i of a row of B·W cells. Everything else — decay,
 * aggregation, clamping, admission, the floor — is the Sketch's own code.
 */
class BlockedSketch extends Sketch {
  private block!: Uint32Array
  private W!: number
  private B!: number
  static of(cfg: SketchOptions): BlockedSketch {
    const { blockCells, blocks } = blockShape(cfg.cellsPerLevel ?? 1024)
    const s = new BlockedSketch({ ...cfg, cellsPerLevel: blockCells * blocks })
    s.W = blockCells
    s.B = blocks
    s.block = new Uint32Array(s.levels + 1)
    return s
  }
  protected override locate(key: string | Uint8Array): void {
    this.hasher.hashKey(key)
    blockedIndexes(this.hasher.hashHi, this.hasher.hashLo, this.levels, this.W, this.B, this.block)
    const M = this.cellsPerLevel
    for (let i = 0; i < this.levels; i++) {
      this.idx[i] = this.block[0] * this.W + this.block[1 + i]
      this.pos[i] = 2 * (i * M + this.idx[i]) // the Sketch's cell offsets (score at 2p, time at 2p + 1)
    }
  }
}

/**
 * The model: the in-process Sketch (with the exact layout's placement) per generation, as spec/cluster.md defines the fleet's
 * time-based rotation (live generation ids O..O+N−1 with O = floor(now / periodMs), never below an O already reached, reads and
 * tryUpdate on the oldest, writes to all, with the Rotator's carry-forward under linear decay). A generation with a twin (early
 * growth, spec/cluster.md "Early growth"): the twin, of its own size and the generation's hasher, is written beside it as a
 * younger generation, and decides in its place once the generation is the oldest and the time is at least the twin's switch.
 */
class Model {
  private readonly gens = new Map<number, BlockedSketch>()
  private readonly twinGens = new Map<number, BlockedSketch>()
  /**
   * @param cellsOf a self-sized fleet: generation k's cells per level M_k (its record in Redis);
   * absent, every generation has the config's
   * @param twinOf generation k's twin: its cells per level and switch time (its early record), or undefined
   */
  constructor(
    private readonly cfg: SketchOptions,
    private readonly N: number,
    private readonly periodMs: number,
    private readonly clock: FakeClock,
    private readonly cellsOf?: (k: number) => number,
    private readonly twinOf?: (k: number) => { cells: number; switchAtMs: number; fold?: boolean } | undefined,
  ) {}
  /** The folding twins already made of their base (at the first access at or after their switch). */
  private readonly folded = new Set<number>()
  /** Cells per level of each generation created so far, by id. */
  cellsById(): Map<number, number> {
    return new Map([...this.gens].map(([k, s]) => [k, s.cellsPerLevel]))
  }
  /** The oldest live id so far: a clock that steps back does not rotate back (spec/cluster.md). */
  private reached = -Infinity
  /** The deciding generation first, then every other one written: the younger bases, then the live twins. */
  private live(): Sketch[] {
    const oldest = Math.max(Math.floor(this.clock.now() / this.periodMs), this.reached)
    this.reached = oldest
    const out: Sketch[] = []
    const twins: Sketch[] = []
    for (let k = oldest; k < oldest + this.N; k++) {
      let s = this.gens.get(k)
      if (s === undefined) {
        s = this.sketchOf(k, this.cellsOf?.(k))
        this.gens.set(k, s)
      }
      const tw = this.twinOf?.(k)
      let ts = this.twinGens.get(k)
      if (tw !== undefined && ts === undefined) {
        ts = this.sketchOf(k, tw.cells)
        this.twinGens.set(k, ts)
      }
      const switched = tw !== undefined && this.clock.now() >= tw.switchAtMs
      if (tw?.fold === true) {
        // a folding twin: nothing before its switch; from it, its base's cells repeated (the
        // Sketch's own fold, each level's row of B·W cells repeated: the blocked layout's
        // B′/B repetitions of the string), in the base's place (spec/cluster.md "Early growth")
        if (!switched) out.push(s)
        else {
          if (!this.folded.has(k)) {
            ts!.foldFrom(s)
            this.folded.add(k)
          }
          out.push(ts!)
        }
      } else if (k === oldest && switched) out.push(ts!)
      else {
        out.push(s)
        if (ts !== undefined) twins.push(ts)
      }
    }
    return [...out, ...twins]
  }
  private sketchOf(k: number, cells: number | undefined): BlockedSketch {
    return BlockedSketch.of({
      ...this.cfg,
      ...(cells === undefined ? {} : { cellsPerLevel: cells }),
      hasher: generationHasher(this.cfg.hasher!, SECRET_BYTES, k),
      clock: this.clock,
    })
  }
  /** Younger generations get the delta, floored at the oldest's reading under linear decay (the Rotator's carry-forward). */
  private writeYounger(rest: Sketch[], key: string, delta: number, oldestAfter: number): void {
    const carry = this.cfg.decay?.kind === 'linear' && delta >= 0
    for (const s of rest) {
      if (carry) s.updateWithFloor(key, delta, oldestAfter)
      else s.update(key, delta)
    }
  }
  tryConsume(key: string, cost: number, limit: number) {
    const [oldest, ...rest] = this.live()
    const admitted = oldest.tryUpdate(key, cost, limit)
    const score = oldest.estimate(key)
    if (admitted) this.writeYounger(rest, key, cost, score)
    return { admitted, score }
  }
  add(key: string, delta: number) {
    const [oldest, ...rest] = this.live()
    const score = oldest.updateAndEstimate(key, delta)
    this.writeYounger(rest, key, delta, score)
    return score
  }
  read(key: string) {
    return this.live()[0].estimate(key)
  }
}

const configs: Array<{ name: string; sketch: SketchOptions; exp?: boolean }> = [
  {
    name: 'debt meter: min, linear 5/s, [0, 20], murmur3',
    sketch: { levels: 3, cellsPerLevel: 16, decay: linear(5), lo: 0, hi: 20, aggregator: 'min', hasher: murmur3() },
  },
  {
    name: 'feedback: max, exponential 0.7/s, [-10, 10], siphash',
    sketch: {
      levels: 4,
      cellsPerLevel: 8,
      decay: exponential(0.7),
      lo: -10,
      hi: 10,
      aggregator: 'max',
      hasher: sipHash(),
    },
    exp: true,
  },
  {
    // 3 blocks of 16 (48 columns for 40 cells): the block choice matters
    name: 'debt meter: min, linear 3/s, [0, 20], 5 levels × 40 cells, siphash',
    sketch: { levels: 5, cellsPerLevel: 40, decay: linear(3), lo: 0, hi: 20, aggregator: 'min', hasher: sipHash() },
  },
  {
    // more levels than UNROLLED_MAX_LEVELS: the looped form of the exact script
    name: 'debt meter: mean, linear 4/s, [0, 20], 17 levels × 16 cells (the looped script), murmur3',
    sketch: { levels: 17, cellsPerLevel: 16, decay: linear(4), lo: 0, hi: 20, aggregator: 'mean', hasher: murmur3() },
  },
  {
    // one level: the span the script reads and writes is that one cell
    name: 'debt meter: max, linear 6/s, [0, 20], 1 level × 32 cells, murmur3',
    sketch: { levels: 1, cellsPerLevel: 32, decay: linear(6), lo: 0, hi: 20, aggregator: 'max', hasher: murmur3() },
  },
  {
    name: 'counter: mean, no decay, [-5, 1e9], murmur3',
    sketch: { levels: 2, cellsPerLevel: 5, decay: none(), lo: -5, hi: 1e9, aggregator: 'mean', hasher: murmur3() },
  },
]

/**
 * One 600-step table of config `c` on a fresh prefix: the store and the model side by side, on
 * one FakeClock. `sized`: a self-sized policy whose sizer cycles through `SIZES`, against a
 * model whose generation k has the M_k recorded in Redis (`P s<k>`, read after each call of the
 * store, before the model's), so the table crosses size changes; it returns the sizes seen.
 */
async function table(
  t: Test,
  admin: Redis,
  c: (typeof configs)[number],
  ci: number,
  sized: boolean,
  fold = false,
): Promise<Set<number>> {
  const prefix = uniquePrefix(`exact-eq${sized ? 's' : ''}${fold ? 'f' : ''}${ci}`)
  const clock = new FakeClock(1_000_000)
  // sized: a shorter period, so the table crosses more generations (the amnesty guard still holds)
  const periodMs = sized ? 4000 : 10_000
  const N = 3
  let turn = 0
  const sketch = sized ? { ...c.sketch, cellsPerLevel: 16 } : c.sketch
  const store = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, clock, timeoutMs: 2000 })({
    name: 'policy',
    sketch,
    generations: N,
    periodMs,
    ...(sized
      ? {
          sizing: {
            sizeNextGeneration: () => (fold ? FOLD_SIZES : SIZES)[turn++ % (fold ? FOLD_SIZES : SIZES).length],
            minCellsPerLevel: 4,
            maxCellsPerLevel: 64,
            checkEveryMs: 500,
            // the twins are the table's own (below): the store's reads adopt them, it proposes none
            growEarlyWhen: () => false,
          },
        }
      : {}),
  }) as RedisExactStore
  const records = new Map<number, number>()
  // sized: a twin for every third generation (early growth, spec/cluster.md "Early growth"),
  // written before the store runs, so the store adopts each before its first call that reaches
  // the generation (a call waits until it has read every early record of its window); the
  // switch before the generation is the oldest (it decides at once) or in the middle of that
  // period; some twins larger, some smaller than their base (the script takes any shape)
  // fold: generations of 8 and 16 cells per level (W = 8, B = 1 or 2) and folding twins of 16,
  // 32 or 64 (B = 2, 4, 8: a multiple of the base's) for two generations in three, switching
  // while the generation is the youngest (it is then written as the twin from the switch on),
  // just after it became the oldest, or in the middle of that period (it decides on its base
  // until then); one in three has a twin written beside it (not folding), so both kinds meet
  const twins = new Map<number, { cells: number; switchAtMs: number; fold?: boolean }>()
  if (sized) {
    const first = Math.floor(clock.now() / periodMs)
    for (let k = first - 1; k < first + 90; k++) {
      if (!fold && k % 3 !== 0) continue
      const tw = fold
        ? {
            cells: [64, 16, 32][k % 3],
            switchAtMs: k * periodMs + [-periodMs / 2, 300, periodMs / 2][(k >> 1) % 3],
            fold: k % 3 !== 0,
          }
        : { cells: [64, 8, 32][(k / 3) % 3], switchAtMs: k * periodMs + (k % 2 === 0 ? -1000 : periodMs / 2) }
      twins.set(k, tw)
      await admin.set(
        `${prefix}:{policy}:s${k}+`,
        `${store.shape.fingerprint}:${tw.switchAtMs}:${tw.cells}${tw.fold === true ? ':fold' : ''}`,
      )
    }
  }
  const model = new Model(
    sketch,
    N,
    periodMs,
    clock,
    sized
      ? (k) => {
          const m = records.get(k)
          if (m === undefined) throw new Error(`generation ${k} is live in the model but has no record in Redis`)
          return m
        }
      : undefined,
    sized ? (k) => twins.get(k) : undefined,
  )
  /** Read the records of the generations that may be live now (the model reads them synchronously). */
  const readRecords = async () => {
    const first = Math.floor(clock.now() / periodMs) - 1
    for (let k = first; k <= first + N + 2; k++) {
      if (records.has(k)) continue
      const v = await admin.get(`${prefix}:{policy}:s${k}`)
      if (v !== null) records.set(k, Number(v.split(':')[1]))
    }
  }
  const next = rng(0x9e3779b9 + ci)
  const keys = ['alice', 'bob', 'carol', 'dave', 'erin', '', '🙂', 'frank', 'grace', 'heidi']
  let mismatches = 0
  let admitted = 0
  let denied = 0
  for (let step = 0; step < STEPS; step++) {
    const r = next()
    // time mostly forward (crossing generations), sometimes back (the Sketch never moves last-touched back)
    clock.advance(r < 0.05 ? -Math.floor(next() * 500) : Math.floor(next() * (c.sketch.lo === 0 ? 120 : 900)))
    const key = keys[Math.floor(next() * keys.length)]
    const op = next()
    let got: unknown
    let want: unknown
    if (op < 0.6) {
      const cost = 1 + Math.floor(next() * 4)
      const limit = c.sketch.lo === 0 ? 10 : Math.floor(next() * 12) - 2
      got = await store.tryConsume(key, cost, limit)
      if (sized) await readRecords()
      want = model.tryConsume(key, cost, limit)
      if ((want as { admitted: boolean }).admitted) admitted++
      else denied++
    } else if (op < 0.85) {
      const delta = Math.round((next() * 6 - 2) * 100) / 100
      got = await store.add(key, delta)
      if (sized) await readRecords()
      want = model.add(key, delta)
    } else {
      got = await store.read(key)
      if (sized) await readRecords()
      want = model.read(key)
    }
    const same = c.exp
      ? JSON.stringify(round(got)) === JSON.stringify(round(want))
      : JSON.stringify(got) === JSON.stringify(want)
    if (!same) {
      mismatches++
      if (mismatches <= 3) t.same(got, want, `${c.name}: step ${step} key ${JSON.stringify(key)} at ${clock.now()}`)
    }
  }
  const what = sized ? `${c.name}, self-sized${fold ? ', folding twins' : ''}` : c.name
  if (sized) {
    const used = [...twins.keys()].filter((k) => model.cellsById().has(k)).length
    t.ok(used >= 2, `${c.name}: the table crossed ${used} generations with twins`)
    t.ok(store.earlyGrowths >= used, `the store adopted ${store.earlyGrowths} twins`)
  }
  if (fold) {
    // the folds happened in Redis: a folded twin's slot string is its size, the base's repeated
    let folds = 0
    for (const [k, tw] of twins) {
      if (tw.fold !== true || !model.cellsById().has(k)) continue
      const twin = await admin.getBuffer(`${prefix}:{policy}:g${k}+`)
      const base = await admin.getBuffer(`${prefix}:{policy}:g${k}`)
      if (twin === null || base === null) continue
      folds++
      if (folds > 3) continue
      t.equal(twin.length, (c.sketch.levels ?? 4) * tw.cells * 16, `generation ${k}: its folding twin at its own size`)
    }
    t.ok(folds >= 4, `${c.name}: ${folds} twins folded from their base in Redis`)
  }
  t.equal(mismatches, 0, `${what}: ${STEPS} ops, 0 mismatches (admitted ${admitted}, denied ${denied})`)
  t.ok(c.sketch.lo !== 0 || (admitted > 20 && denied > 20), 'the table exercises both outcomes')
  await store.close()
  await dropPrefix(admin, prefix)
  return new Set(model.cellsById().values())
}

/** What the self-sized tables' sizer asks for, in turn (clamped to [4, 64]: 2 becomes 4). */
const SIZES = [64, 4, 32, 2, 16, 8]
/** What the folding tables' sizer asks for: W = 8 in every generation and twin. */
const FOLD_SIZES = [8, 16]

t.test('exact mode: same decisions and scores as the Sketch, op by op', async (t) => {
  const opts = await needRedis(t)
  t.test('step tables', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    for (const [ci, c] of configs.entries()) await table(t, admin, c, ci, false)
  })
  // issue #14 item 4: each generation of a self-sized policy at the fleet's recorded shape, its
  // blocked layout B·W cells per level of that M_k, a new generation's string created at that size
  t.test('step tables, self-sized: generations of recorded sizes', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    for (const [ci, c] of configs.entries()) {
      const sizes = await table(t, admin, c, ci, true)
      t.ok(sizes.size >= 3, `${c.name}: the table crossed generations of ${[...sizes].join(', ')} cells per level`)
    }
  })
  // issue #14, "A load jump must not wait a whole period": folding twins (spec/cluster.md "Early
  // growth") against the Sketch's own fold (Sketch.foldFrom) of the model's base at the switch:
  // every key reads in the twin exactly what it read in its base, the decisions go on equal
  t.test('step tables, self-sized: folding twins', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    for (const [ci, c] of configs.entries()) await table(t, admin, c, ci, true, true)
  })
})

/** Exponential decay runs on Redis's libm exp and V8's Math.exp: equal to 12 significant digits. */
function round(v: unknown): unknown {
  if (typeof v === 'number') return Number(v.toPrecision(12))
  if (typeof v === 'object' && v !== null) return { ...v, score: round((v as { score: number }).score) }
  return v
}

t.test('exact mode: Redis memory is constant in the number of keys', async (t) => {
  const opts = await needRedis(t)
  t.test('10^5 distinct keys', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('exact-mem')
    const L = 4
    const M = 1024
    const N = 2
    const store = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, timeoutMs: 5000 })({
      name: 'mem',
      sketch: { levels: L, cellsPerLevel: M, decay: linear(10), lo: 0, hi: 100 },
      generations: N,
      periodMs: 3_600_000,
    })
    // per key: a generation key's usage is its one L·M·16-byte allocation (rounded up to the
    // allocator's size class, at most 25% above for jemalloc's classes over 64 KiB) plus overhead
    const usage = async () => {
      const gens: number[] = []
      let fp = 0
      let cursor = '0'
      do {
        const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
        cursor = next
        for (const k of keys) {
          const bytes = (await admin.memory('USAGE', k)) ?? 0
          if (k.endsWith(':fp')) fp = bytes
          else gens.push(bytes)
        }
      } while (cursor !== '0')
      return { gens, fp, total: gens.reduce((a, b) => a + b, fp) }
    }
    const run = async (from: number, to: number) => {
      const batch = 2000 // in flight at once: ioredis pipelines them on one connection
      for (let i = from; i < to; i += batch) {
        const ps: unknown[] = []
        for (let k = i; k < Math.min(to, i + batch); k++) ps.push(store.tryConsume(`user-${k}`, 1, 50))
        await Promise.all(ps)
      }
    }
    await run(0, 2000)
    const after2k = await usage()
    await run(2000, 100_000)
    const after100k = await usage()
    const perGen = L * M * 16 * 1.25 + 1024
    // a generation boundary (every periodMs of server time) may fall inside the run: N + 1 then
    t.ok(after100k.gens.length <= N + 1, `at most N + 1 = ${N + 1} generation keys (got ${after100k.gens.length})`)
    t.ok(
      after100k.gens.every((b) => b <= perGen),
      `each generation key ≤ L·M·16 × 1.25 + 1 KiB = ${perGen} B (got ${after100k.gens.join(', ')})`,
    )
    t.ok(after100k.fp < 1024, `the fingerprint key is small (${after100k.fp} B)`)
    t.equal(
      Math.max(...after100k.gens),
      Math.max(...after2k.gens),
      `no growth of a generation key from 2·10^3 to 10^5 keys (${Math.max(...after2k.gens)} B)`,
    )
    t.ok(
      after100k.total <= (N + 1) * perGen + 1024,
      `MEMORY USAGE after 10^5 keys ${after100k.total} B ≤ (N + 1) generations + fingerprint = ${(N + 1) * perGen + 1024} B`,
    )
    const info = await admin.info('memory')
    t.match(
      info,
      /used_memory:\d+/,
      'INFO memory answers (used_memory is server-wide, shared with other suites: not asserted)',
    )
    await store.close()
    await dropPrefix(admin, prefix)
  })
})

/**
 * Batches (spec/cluster.md, "Batches"): turns of 1..12 requests issued together (not awaited one
 * by one) on S = 3 slots, against one model per slot (slot s a Sketch of ceil(M/S) cells per
 * level, the key's slot by the store's slot hash), each applied in the order the requests were
 * issued at the turn's time. Every turn is one EVALSHA (the clock does not move within it),
 * holding the requests of every slot; more than MAX_BATCH requests take a second call.
 */
t.test("exact mode: a turn's requests in one call, decided in order, the same as the Sketch", async (t) => {
  const opts = await needRedis(t)
  t.test('batched step tables', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const S = 3
    for (const ci of [0, 1, 3, 5]) {
      const c = configs[ci]
      const prefix = uniquePrefix(`exact-batch${ci}`)
      const clock = new FakeClock(1_000_000)
      const periodMs = 10_000
      const N = 3
      const store = redisStore({ redis: admin, seed: SECRET, slots: S, prefix, clock, timeoutMs: 2000 })({
        name: 'policy',
        sketch: c.sketch,
        generations: N,
        periodMs,
      }) as RedisExactStore
      const M = c.sketch.cellsPerLevel ?? 1024
      const models = Array.from(
        { length: S },
        () => new Model({ ...c.sketch, cellsPerLevel: Math.ceil(M / S) }, N, periodMs, clock),
      )
      const sh = slotHasher(c.sketch.hasher!, SECRET_BYTES)
      const slotOf = (key: string) => {
        sh.hashKey(key)
        return (sh.hashLo >>> 0) % S
      }
      let calls = 0
      const orig = admin.evalsha.bind(admin)
      admin.evalsha = ((...a: Parameters<typeof orig>) => {
        calls++
        return orig(...a)
      }) as typeof admin.evalsha
      const next = rng(0x51ed + ci)
      const keys = ['alice', 'bob', 'carol', 'dave', 'erin', '', '🙂', 'frank', 'grace', 'heidi']
      let mismatches = 0
      let ops = 0
      let turns = 0
      let expectedCalls = 0
      const slotsSeen = new Set<number>()
      let multiSlotTurns = 0
      while (ops < STEPS) {
        clock.advance(next() < 0.05 ? -Math.floor(next() * 500) : Math.floor(next() * 400))
        // mostly small turns, sometimes one past MAX_BATCH
        const n = next() < 0.05 ? MAX_BATCH + 3 : 1 + Math.floor(next() * 12)
        const pending: Promise<unknown>[] = []
        const wants: unknown[] = []
        const turnSlots = new Set<number>()
        for (let i = 0; i < n; i++) {
          const key = keys[Math.floor(next() * keys.length)]
          const model = models[slotOf(key)]
          turnSlots.add(slotOf(key))
          slotsSeen.add(slotOf(key))
          const op = next()
          if (op < 0.6) {
            const cost = 1 + Math.floor(next() * 4)
            const limit = c.sketch.lo === 0 ? 10 : Math.floor(next() * 12) - 2
            pending.push(store.tryConsume(key, cost, limit))
            wants.push(model.tryConsume(key, cost, limit))
          } else if (op < 0.85) {
            const delta = Math.round((next() * 6 - 2) * 100) / 100
            pending.push(store.add(key, delta))
            wants.push(model.add(key, delta))
          } else {
            pending.push(store.read(key))
            wants.push(model.read(key))
          }
        }
        if (turnSlots.size > 1) multiSlotTurns++
        const gots = await Promise.all(pending)
        for (let i = 0; i < n; i++) {
          const same = c.exp
            ? JSON.stringify(round(gots[i])) === JSON.stringify(round(wants[i]))
            : JSON.stringify(gots[i]) === JSON.stringify(wants[i])
          if (!same) {
            mismatches++
            if (mismatches <= 3) t.same(gots[i], wants[i], `${c.name}: turn ${turns} request ${i} of ${n}`)
          }
        }
        ops += n
        turns++
        expectedCalls += Math.ceil(n / MAX_BATCH)
      }
      admin.evalsha = orig
      t.equal(mismatches, 0, `${c.name}: ${ops} requests in ${turns} turns, 0 mismatches`)
      t.equal(
        calls,
        expectedCalls,
        `one EVALSHA per turn (${calls} calls; a turn past ${MAX_BATCH} requests takes two)`,
      )
      t.ok(
        slotsSeen.size === S && multiSlotTurns > turns / 2,
        `turns spanned several slots (${multiSlotTurns} of ${turns})`,
      )
      await store.close()
      await dropPrefix(admin, prefix)
    }
  })
})

t.test('exact mode: a local clock far from server time costs one retry, never a wrong cell', async (t) => {
  const opts = await needRedis(t)
  t.test('skewed estimate', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('exact-skew')
    const periodMs = 60_000
    const store = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, timeoutMs: 2000 })({
      name: 'skew',
      sketch: { levels: 2, cellsPerLevel: 64, decay: none(), lo: 0, hi: 100 },
      generations: 2,
      periodMs,
    })
    const calls: unknown[] = []
    const orig = admin.evalsha.bind(admin)
    admin.evalsha = ((...a: Parameters<typeof orig>) => {
      calls.push(a)
      return orig(...a)
    }) as typeof admin.evalsha
    t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 1 })
    // pretend the instance's clock runs 10 periods ahead of Redis
    ;(store as unknown as { offsetMs: number }).offsetMs += 10 * periodMs
    calls.length = 0
    t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 2 }, 'the same cells as before the skew')
    t.equal(calls.length, 2, 'one extra round trip: the script named the live window, the call was repeated')
    calls.length = 0
    t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 3 })
    t.equal(calls.length, 1, 'the offset is learned: back to one round trip')
    admin.evalsha = orig
    await store.close()
    await dropPrefix(admin, prefix)
  })
})

// issue #15 item 3: the exact script reads the fingerprint record only on a check (ready(), a
// caller's first call, one call at least every RECORD_CHECK_MS of its clock) or for a generation
// newer than any reply named to the caller; a record changed under a running instance is refused
// (or its period adopted) within that bound, not at once
t.test('exact mode: a changed fingerprint record is refused within RECORD_CHECK_MS', async (t) => {
  const opts = await needRedis(t)
  const periodMs = 10_000
  const spec = {
    name: 'rec',
    sketch: { levels: 2, cellsPerLevel: 16, decay: none(), lo: 0, hi: 20 },
    generations: 3,
    periodMs,
  }
  /** A running instance A, then its record replaced by another seed's (B started after the record was lost). */
  const setup = async (t: Test, name: string, startMs: number) => {
    const admin = client()
    const prefix = uniquePrefix(name)
    const clock = new FakeClock(startMs)
    const a = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, clock, timeoutMs: 2000 })(spec)
    await a.ready()
    t.same(await a.tryConsume('k', 1, 10), { admitted: true, score: 1 })
    await admin.del(`${prefix}:{rec}:fp`)
    const b = redisStore({ redis: admin, seed: 'ffffffffffffffffffffffffffffffff', slots: 1, prefix, clock })(spec)
    await b.ready()
    t.teardown(async () => {
      await a.close()
      await b.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    return { admin, prefix, clock, a }
  }
  t.test('within the period: refused at the first call RECORD_CHECK_MS after the last check', opts, async (t) => {
    const { clock, a } = await setup(t, 'exact-rec', 1_000_100)
    clock.advance(RECORD_CHECK_MS - 1)
    t.same(
      await a.tryConsume('k', 1, 10),
      { admitted: true, score: 2 },
      'inside the bound the call trusts the last check (no record read)',
    )
    clock.advance(1)
    await t.rejects(
      async () => a.tryConsume('k', 1, 10),
      { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
      'at the bound: refused',
    )
    await t.rejects(async () => a.read('k'), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, 'and every call after')
  })
  t.test('a generation newer than the caller has seen reads the record at once', opts, async (t) => {
    // 400 ms before a period boundary: the next call, 600 ms later (inside the bound), is in a new generation
    const { clock, a } = await setup(t, 'exact-rec-gen', 1_009_600)
    clock.advance(600)
    await t.rejects(async () => a.tryConsume('k', 1, 10), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' })
  })
  t.test('each slot has its own record and its own bound', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('exact-rec-slots')
    const clock = new FakeClock(1_000_100)
    const a = redisStore({ redis: admin, seed: SECRET, slots: 2, prefix, clock, timeoutMs: 2000 })(
      spec,
    ) as RedisExactStore
    t.teardown(async () => {
      await a.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const slotOf = (k: string) => (a as unknown as { slotOf(k: string): number }).slotOf(k)
    const keys = Array.from({ length: 64 }, (_, i) => `u${i}`)
    const k0 = keys.find((k) => slotOf(k) === 0)!
    const k1 = keys.find((k) => slotOf(k) === 1)!
    await a.ready()
    t.same(await a.tryConsume(k1, 1, 10), { admitted: true, score: 1 })
    // slot 1's record replaced by another fleet's; slot 0's calls go on checking their own
    const fp1 = a.shape.fpKeys[1]
    const [, period, g] = String(await admin.get(fp1)).split(':')
    await admin.set(fp1, `ffffffffffffffff:${period}:${g}`, 'KEEPTTL')
    clock.advance(600)
    t.same(await a.tryConsume(k0, 1, 10), { admitted: true, score: 1 })
    clock.advance(RECORD_CHECK_MS - 600)
    t.same(await a.tryConsume(k0, 1, 10), { admitted: true, score: 2 }, "slot 0's check finds its own record")
    await t.rejects(
      async () => a.tryConsume(k1, 1, 10),
      { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
      "slot 1 is checked RECORD_CHECK_MS after its own last check, whatever slot 0's calls did",
    )
  })
  t.test('another period recorded is adopted within the bound', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('exact-rec-period')
    const clock = new FakeClock(1_000_100)
    const factory = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, clock, timeoutMs: 2000 })
    const events: string[] = []
    factory.onEvent((e) => events.push(e.type))
    const a = factory(spec)
    t.teardown(async () => {
      await a.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    await a.ready()
    t.same(await a.tryConsume('k', 1, 10), { admitted: true, score: 1 })
    const fpKey = `${prefix}:{rec}:fp`
    const [fp, , g] = String(await admin.get(fpKey)).split(':')
    await admin.set(fpKey, `${fp}:20000:${g}`, 'KEEPTTL')
    clock.advance(RECORD_CHECK_MS - 1)
    await a.tryConsume('k', 1, 10)
    t.notOk(events.includes('schedule'), 'inside the bound: still this policy’s period')
    clock.advance(1)
    await a.tryConsume('k', 1, 10)
    t.ok(events.includes('schedule'), 'at the bound: the recorded 20000 ms period is adopted')
  })
})

t.test('exact mode, self-sized: shapes known ahead, the next one proposed, a self-sized fallback', async (t) => {
  const opts = await needRedis(t)
  t.test('shapes known ahead: no request waits for a shape round', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('exact-sized')
    const clock = new FakeClock(1_000_000)
    const periodMs = 4000
    const wanted: number[] = []
    const rates: number[] = []
    let checks = 0
    const store = redisStore({
      redis: admin,
      seed: SECRET,
      slots: 1,
      prefix,
      clock,
      timeoutMs: 2000,
      retryMs: 60_000,
      onStoreError: 'local',
    })({
      name: 'sized',
      sketch: { levels: 2, cellsPerLevel: 64, decay: none(), lo: 0, hi: 100 },
      generations: 2,
      periodMs,
      sizing: {
        sizeNextGeneration: (load) => {
          // the early checks (reason 'check', spec/cluster.md "Early growth") ask too: 16 never grows
          if (load.reason === 'check') {
            checks++
            return 16
          }
          wanted.push(load.distinctKeys)
          rates.push(load.costPerSecond)
          return 16
        },
        minCellsPerLevel: 4,
        maxCellsPerLevel: 64,
        checkEveryMs: 500,
      },
    }) as RedisExactStore
    const calls: string[] = []
    const orig = admin.evalsha.bind(admin)
    let broken = false
    admin.evalsha = ((...a: Parameters<typeof orig>) => {
      calls.push(String(a[2]))
      return broken ? Promise.reject(new Error('redis down (test)')) : orig(...a)
    }) as typeof admin.evalsha
    await store.ready()
    const records = async () => {
      const out: [number, number][] = []
      for (const k of await admin.keys(`${prefix}:{sized}:s*`)) {
        out.push([Number(k.slice(k.lastIndexOf(':s') + 2)), Number((await admin.get(k))!.split(':')[1])])
      }
      return new Map(out)
    }
    const G0 = Math.floor(clock.now() / periodMs) + 1
    const first = await records()
    t.same([first.get(G0 - 1), first.get(G0)], [64, 64], 'ready() recorded the live generations at the initial size')
    calls.length = 0
    t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 1 })
    t.same(calls, [`${prefix}:{sized}:fp`], 'a request: one exact script, no shape round')
    // three periods of requests every 250 ms: from each youngest's second half, the cost report
    // proposes the next generation at what the sizer wants
    let shapeCalls = 0
    let requests = 0
    for (let step = 0; step < 48; step++) {
      clock.advance(250)
      calls.length = 0
      await store.tryConsume(`key-${step % 5}`, 1, 10)
      requests++
      // the exact script's first key is the fingerprint record, the shape script's a shape or cost record
      shapeCalls += calls.filter((k) => !k.endsWith(':fp')).length
      await new Promise((r) => setImmediate(r))
    }
    const after = await records()
    const G = Math.floor(clock.now() / periodMs) + 1
    t.equal(after.get(G), 16, `generation ${G}: the sizer's 16, proposed half a period ahead`)
    t.equal(after.get(G - 1), 16, `generation ${G - 1} too`)
    // a shrink asks the sizer again at the hysteresis margin (rotator-sizing.ts
    // sizeNextWithHysteresis): SHRINK_LOAD_MARGIN × the keys and × the larger of the cost rate
    // and the busiest check window's, so each answer is at the measured load or at the margin
    const measuredKeys = wanted.filter((d) => d >= 1 && d <= 10)
    t.ok(
      measuredKeys.length >= 3 &&
        wanted.every((d) => (d >= 1 && d <= 10) || (d >= SHRINK_LOAD_MARGIN && d <= SHRINK_LOAD_MARGIN * 10)),
      `the sizer saw the meter's keys (${wanted.join(', ')})`,
    )
    // one admitted cost of 1 every 250 ms: 4/s, as the fleet's counter P c<G> (reported every
    // 500 ms, plus what was not reported yet) over the youngest's age says; at the margin, twice
    // that or twice a check window's (at most 4 requests in a 500 ms window: 8/s)
    const measuredRates = rates.filter((c) => c >= 3 && c <= 5)
    t.ok(
      measuredRates.length >= 3 &&
        rates.every((c) => (c >= 3 && c <= 5) || (c >= SHRINK_LOAD_MARGIN * 3 && c <= SHRINK_LOAD_MARGIN * 8)),
      `the sizer saw the fleet's cost rate, about 4/s (${rates.map((c) => c.toFixed(2)).join(', ')})`,
    )
    // every other request (250 ms apart) starts the cost report of checkEveryMs = 500 ms; a
    // generation not known ahead would add a round at its boundary
    t.equal(shapeCalls, requests / 2, `${shapeCalls} shape rounds for ${requests} requests: the cost reports only`)
    t.ok(checks >= 10, `the cost reports ran ${checks} early checks (none grew: the sizer wants 16)`)
    t.equal(store.earlyGrowths, 0, 'no twin')
    t.equal(store.sizeBytes(), 2048, 'in process: the 2 KiB load meter only')
    // Redis fails: the fallback Rotator is self-sized and starts at the youngest recorded size
    broken = true
    const r = await store.tryConsume('k', 1, 10)
    t.same(r, { admitted: true, score: 1 }, 'the fallback decides')
    const fallback = (store as unknown as { fallback: Rotator }).fallback
    t.ok(fallback.selfSized, 'self-sized fallback')
    t.same(fallback.generationCellsPerLevel, [16, 16], 'at the youngest recorded size')
    t.equal(store.sizeBytes(), 2048 + fallback.sizeBytes(), 'the meter and the fallback')
    admin.evalsha = orig
    await store.close()
    await dropPrefix(admin, prefix)
  })
})

// spec/cluster.md "Early growth": a call waits for its window's early records to be fresh
// (read at most 2 × checkEveryMs before it); when the shape round fails (on a Redis Cluster:
// slot 0's master down), a call whose shapes are known goes on with the twins it knows for
// retryMs, so a failing slot 0 does not fail every slot's calls
t.test(
  'exact mode, self-sized: stale early records are read first, and a failed read does not fail the call',
  async (t) => {
    const opts = await needRedis(t)
    t.test('fresh records, then slot 0 failing', opts, async (t) => {
      const admin = client()
      t.teardown(() => admin.quit())
      const prefix = uniquePrefix('exact-fresh')
      const clock = new FakeClock(1_000_000)
      const store = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, clock, timeoutMs: 2000, retryMs: 5000 })(
        {
          name: 'fresh',
          sketch: { levels: 2, cellsPerLevel: 64, decay: none(), lo: 0, hi: 100 },
          generations: 2,
          periodMs: 60_000,
          sizing: { sizeNextGeneration: () => 64, minCellsPerLevel: 4, maxCellsPerLevel: 64, checkEveryMs: 500 },
        },
      ) as RedisExactStore
      const calls: string[] = []
      const orig = admin.evalsha.bind(admin)
      let shapeBroken = false
      admin.evalsha = ((...a: Parameters<typeof orig>) => {
        const first = String(a[2])
        calls.push(first)
        if (shapeBroken && !first.endsWith(':fp')) return Promise.reject(new Error('slot 0 down (test)'))
        return orig(...a)
      }) as typeof admin.evalsha
      await store.ready()
      calls.length = 0
      clock.advance(900) // the records ready() read are 900 ms old: fresh (≤ 1000)
      t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 1 })
      // (after its reply the cost report leaves, fire-and-forget)
      t.equal(calls[0], `${prefix}:{fresh}:fp`, 'fresh early records: the call first, no round before it')
      await store.settled()
      clock.advance(1100) // > 2 × checkEveryMs since the last round
      calls.length = 0
      await store.tryConsume('k', 1, 10)
      t.equal(calls.length, 2, 'stale early records: one shape round, then the call')
      t.ok(!calls[0].endsWith(':fp') && calls[1].endsWith(':fp'), 'the round first')
      await store.settled()
      shapeBroken = true
      clock.advance(1100)
      calls.length = 0
      t.same(
        await store.tryConsume('k', 1, 10),
        { admitted: true, score: 3 },
        'a failed round: the call still decides on Redis',
      )
      t.equal(calls.filter((k) => k.endsWith(':fp')).length, 1, 'after the failed round')
      clock.advance(1100)
      calls.length = 0
      t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 4 }, 'and the next')
      t.equal(calls[0], `${prefix}:{fresh}:fp`, 'within retryMs the call waits for no round')
      admin.evalsha = orig
      await store.close()
      await dropPrefix(admin, prefix)
    })
  },
)

t.test('exact mode, self-sized: calls waiting for a shape share one round, bounded by timeoutMs', async (t) => {
  const opts = await needRedis(t)
  t.test('shared round, then a hung one', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('exact-sized-round')
    const mk = (onStoreError: 'closed' | 'local', timeoutMs: number) =>
      redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, timeoutMs, retryMs: 0, onStoreError })({
        name: 'round',
        sketch: { levels: 2, cellsPerLevel: 64, decay: none(), lo: 0, hi: 100 },
        generations: 2,
        periodMs: 3_600_000,
        sizing: { sizeNextGeneration: () => 16, minCellsPerLevel: 4, maxCellsPerLevel: 64 },
      })
    const orig = admin.evalsha.bind(admin)
    let shapeRounds = 0
    let hang = false
    admin.evalsha = ((...a: Parameters<typeof orig>) => {
      if (!String(a[2]).endsWith(':fp')) {
        shapeRounds++
        if (hang) return new Promise(() => {}) // a shape round that never answers
      }
      return orig(...a)
    }) as typeof admin.evalsha
    // no ready(): the first calls find no shape known
    const a = mk('closed', 2000)
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => Promise.resolve(a.tryConsume(`k${i}`, 1, 10))),
    )
    t.same(
      results.map((r) => r.admitted),
      Array(8).fill(true),
      '8 concurrent first calls decided on Redis',
    )
    t.equal(shapeRounds, 1, 'after one shape round between them')
    await a.close()
    // a second instance (its own shapes unknown) whose shape round hangs: the call follows
    // onStoreError within its timeoutMs, and the failure is a store failure, not a coded error
    hang = true
    const b = mk('closed', 100)
    const r = await b.tryConsume('k0', 1, 10)
    t.same(r, { admitted: false, score: NaN, failure: 'closed' }, 'onStoreError: closed answered')
    await b.close()
    const c = mk('local', 100)
    t.same(
      await c.tryConsume('k0', 1, 10),
      { admitted: true, score: 1 },
      "onStoreError: 'local' answered from the fallback",
    )
    await c.close()
    admin.evalsha = orig
    await dropPrefix(admin, prefix)
  })
})

t.test('exact mode: generation keys expire on their own; cells carry Redis TIME', async (t) => {
  const opts = await needRedis(t)
  t.test('PTTL and cell times', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('exact-ttl')
    const periodMs = 60_000
    const N = 3
    const L = 2
    const M = 8
    const store = redisStore({ redis: admin, seed: SECRET, slots: 1, prefix, timeoutMs: 2000 })({
      name: 'ttl',
      sketch: { levels: L, cellsPerLevel: M, decay: linear(1), lo: 0, hi: 100 },
      generations: N,
      periodMs,
    })
    const [s0, us0] = (await admin.time()).map(Number)
    const before = s0 * 1000 + us0 / 1000
    t.same(await store.tryConsume('k', 1, 10), { admitted: true, score: 1 })
    const [s1, us1] = (await admin.time()).map(Number)
    const after = s1 * 1000 + us1 / 1000
    // spec/cluster.md: the live generations are O..O+N−1 with O = floor(serverNow / periodMs);
    // generation k lives until (k + 1)·periodMs and its key expires one period later
    const oldest = Math.floor(before / periodMs)
    for (let k = oldest; k < oldest + N; k++) {
      const key = `${prefix}:{ttl}:g${k}`
      const pttl = await admin.pttl(key)
      t.ok(pttl > 0, `g${k}: has an expiry (PTTL ${pttl} ms)`)
      t.ok(
        pttl <= (k + 2) * periodMs - before + 1 && pttl >= (k + 2) * periodMs - after - 1000,
        `g${k}: expires at (k + 2)·periodMs of server time (PTTL ${pttl})`,
      )
      t.equal(await admin.strlen(key), L * M * 16, `g${k}: exactly L·M·16 bytes`)
      // the touched cells carry the script's now: Redis TIME, between our two TIME readings
      const raw = await admin.getrangeBuffer(key, 0, L * M * 16 - 1)
      const times: number[] = []
      for (let p = 0; p < L * M; p++) if (raw.readDoubleLE(p * 16) !== 0) times.push(raw.readDoubleLE(p * 16 + 8))
      t.equal(times.length, L, `g${k}: one cell per level touched`)
      t.ok(
        times.every((x) => x >= before && x <= after),
        `g${k}: cell times ${times.join(', ')} within Redis TIME [${before}, ${after}]`,
      )
    }
    const fpTtl = await admin.pttl(`${prefix}:{ttl}:fp`)
    t.ok(
      fpTtl > 0 && fpTtl <= (oldest + N + 1) * periodMs - before + 1,
      `the fingerprint expires with the newest generation (PTTL ${fpTtl})`,
    )
    await store.close()
    await dropPrefix(admin, prefix)
  })
})

t.test(
  'the exact script is unrolled up to UNROLLED_MAX_LEVELS levels, looped above (both run in the step tables)',
  async (t) => {
    const o = parseRedisOptions({ redis: 'redis://127.0.0.1:1', seed: SECRET, slots: 1 })
    const script = (levels: number) =>
      exactScript(
        fleetShape(
          {
            name: 'p',
            sketch: { levels, cellsPerLevel: 16, decay: linear(4), lo: 0, hi: 20 },
            generations: 3,
            periodMs: 10_000,
          },
          o,
        ).scriptConstants,
      )
    t.match(
      script(UNROLLED_MAX_LEVELS),
      new RegExp(`local s1, t1, .*, s${UNROLLED_MAX_LEVELS}, t${UNROLLED_MAX_LEVELS}\n`),
    )
    t.notMatch(script(UNROLLED_MAX_LEVELS + 1), /local s1, t1/)
    t.match(script(UNROLLED_MAX_LEVELS + 1), /local function block\(/)
  },
)
