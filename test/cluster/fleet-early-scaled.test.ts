// Issue 14, "A load jump must not wait a whole period", the scaled case (spec/cluster.md "Early
// growth", _Bound on an undersized generation_): one self-sized exact store on a fake clock, a
// debt meter of P = A = 10 s (linear decay 1/s, hi 10, burst 4), its generations recorded at 128
// cells per level by 10 fresh clients per second, then 600 fresh clients per second for 15 s.
// Every fresh client is innocent (one request each): a refusal is the 128 cells' overcount.
// With folding twins every live generation smaller than the jump's size is folded at start + D,
// so the fleet stops deciding on 128 cells about 2C + D after the jump, where a twin written
// beside its base decided only from start + A + D (half the 9,000 refused before this change).
import t, { type Test } from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { Cluster } from 'ioredis'
import { driveFreshClients, scaledSpec, type FreshJump, type FreshRun } from '../fixtures/fleet-fold.js'
import { adminFor, clusterClient, clusterFor, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '5555555555555555eeeeeeeeeeeeeeee'
const P = 10_000
const RATE = 1
const BURST = 4
const HI = 10
const T0 = 2000 * P
const T_JUMP = T0 + 25_000 // 5 s into the youth of generation 2002 (youngest over [T0 + 20 s, T0 + 30 s))
const SECONDS = 15
/** 10 fresh clients per second, then 600 from T_JUMP for SECONDS. */
const JUMP: FreshJump = { t0: T0, jumpAt: T_JUMP, seconds: SECONDS, before: 10, after: 600 }
// timeoutMs: a real-time bound on each Redis call (the fake clock does not move during one), set
// above the 50 ms default so a loaded machine fails no call; it is in D (exact 2·checkEveryMs +
// timeoutMs = 2,500 ms, sync syncMs + timeoutMs = 600 ms)
const TIMEOUT_MS = 500

interface ScaledRun extends FreshRun {
  /** The early records Redis holds at the end, by generation id. */
  records: Record<string, string | null>
  earlyGrowths: number
  /** The store's telemetry 4 s after the jump (both folding twins switched). */
  shapesAfter: ReturnType<RedisExactStore['generationShapes']> | undefined
}

/** The early records Redis holds for generations 2001–2004 of spec `sc`. */
async function records(admin: Pick<Cluster, 'get'>, prefix: string): Promise<Record<string, string | null>> {
  const out: Record<string, string | null> = {}
  for (const id of [2001, 2002, 2003, 2004]) out[id] = await admin.get(`${prefix}:{sc}:s${id}+`)
  return out
}

/**
 * The jump through `store` ({@link JUMP}, `afterStep` after each step: the exact store's
 * settling, the sync store's syncs), its telemetry 4 s after the jump, then the records Redis
 * holds; the store is closed.
 */
async function measured(
  store: RedisExactStore | RedisSyncStore,
  clock: FakeClock,
  admin: Pick<Cluster, 'get'>,
  prefix: string,
  afterStep: (nowMs: number) => Promise<void>,
): Promise<ScaledRun> {
  let shapesAfter: ScaledRun['shapesAfter']
  const run = await driveFreshClients(
    JUMP,
    clock,
    (key) => store.tryConsume(key, 1, BURST),
    async (now) => {
      await afterStep(now)
      if (now === T_JUMP + 4000) shapesAfter = store.generationShapes()
    },
  )
  const out: ScaledRun = {
    ...run,
    records: await records(admin, prefix),
    earlyGrowths: store.earlyGrowths,
    shapesAfter,
  }
  await store.close()
  return out
}

/**
 * One run on its own prefix, on the single Redis, or with `cluster` on a Redis Cluster (its
 * URLs for the store, a client of it to read the records; the keys expire with their
 * generations there).
 */
async function scaled(
  t: Test,
  S: number,
  early: boolean,
  cluster?: { urls: string[]; reader: Cluster },
): Promise<ScaledRun> {
  const name = `s30h1-scaled-x${S}${early ? 'e' : 'n'}${cluster === undefined ? '' : 'c'}`
  const { admin, prefix } =
    cluster === undefined ? adminFor(t, name) : { admin: cluster.reader, prefix: uniquePrefix(name) }
  const clock = new FakeClock(T0)
  // ρ target 0.25 at rotations: 10/s wants 40 cells (128, the least), 600/s wants 2,400
  const spec = scaledSpec({ name: 'sc', periodMs: P, rate: RATE, hi: HI, early })
  const store = redisStore({
    redis: cluster?.urls ?? admin,
    seed: SEED,
    prefix,
    mode: 'exact',
    slots: S,
    clock,
    timeoutMs: TIMEOUT_MS,
  })(spec) as RedisExactStore
  t.teardown(() => store.close())
  await store.ready()
  return measured(store, clock, admin, prefix, () => store.settled())
}

t.test('scaled case: 10 → 600 fresh clients/s on 128 cells, one exact store', async (t) => {
  const opts = await needRedis(t)
  // measured before this change (a twin of the youngest only, written beside its base, deciding
  // from start + A + D): 5,790 of 9,000 refused with 1 slot, 5,755 with 16; 6,586 and 6,576 without early growth
  for (const S of [1, 16])
    t.test(`${S} slot(s): folding twins of both live generations`, opts, async (t) => {
      const r = await scaled(t, S, true)
      const without = await scaled(t, S, false)
      t.comment(`with folding twins: refused ${r.refused} of ${r.sent}, per second ${JSON.stringify(r.perSecond)}`)
      t.comment(
        `without early growth: refused ${without.refused} of ${without.sent}, per second ${JSON.stringify(without.perSecond)}`,
      )
      t.comment(`early records: ${JSON.stringify(r.records)}`)
      t.equal(r.sent, 600 * SECONDS, 'every fresh client after the jump was tried once')
      // the jump at 25 s: 2002 decides, 2003 is the youngest; both get a folding twin
      for (const id of ['2002', '2003']) {
        const [, sw, cells, kind] = (r.records[id] ?? ':::').split(':')
        t.equal(kind, 'fold', `${id}: a folding twin`)
        t.ok(Number(cells) >= 2048, `${id}: of ${cells} cells per level (the sizer at 600/s: 2,400)`)
        // C ≤ checkEveryMs + one step (1,050 ms), D = 2·checkEveryMs + timeoutMs (2,050 ms): the
        // first check wholly after the jump is at most 2C after it
        t.ok(
          Number(sw) <= T_JUMP + 2 * 1050 + 2050,
          `${id}: deciding ${Number(sw) - T_JUMP} ms after the jump ≤ 2C + D`,
        )
      }
      // telemetry: both live generations at their twins' size once switched, the oldest's deciding
      const cells = Number(r.records['2002']!.split(':')[2])
      t.same(r.shapesAfter?.generationCellsPerLevel, [cells, cells], 'shapes: both twins in their bases’ places')
      t.match(r.shapesAfter?.early, [
        { generation: 0, cellsPerLevel: cells, twin: true, deciding: true },
        { generation: 1, cellsPerLevel: cells, twin: true, deciding: false },
      ])
      t.ok(without.refused > r.sent / 2, `without early growth the 128 cells refuse ${without.refused}`)
      t.ok(r.refused < without.refused / 3, `folding twins: ${r.refused} refused, against ${without.refused}`)
      // from 6 s after the switch on the fold's inherited collisions have drained (at 1/s, the
      // 600/s now spread over ≥ 2,048 cells per level): no innocent refused
      const late = r.perSecond.slice(10).reduce((a, b) => a + b, 0)
      t.equal(late, 0, 'none refused over the last 5 s')
    })
})

// the same on a 3-master Redis Cluster, 16 slots: each slot string folds on its own master, from
// its own base (same hash tag), inside the sized script
t.test('scaled case on a Redis Cluster, 16 slots', async (t) => {
  const cluster = await clusterFor(t)
  if (cluster === undefined) return
  const reader = clusterClient(t, cluster)
  const r = await scaled(t, 16, true, { urls: cluster.urls, reader })
  t.comment(`with folding twins: refused ${r.refused} of ${r.sent}, per second ${JSON.stringify(r.perSecond)}`)
  t.equal(r.sent, 600 * SECONDS, 'every fresh client after the jump was tried once')
  t.ok(r.records['2002']?.endsWith(':fold') && r.records['2003']?.endsWith(':fold'), 'folding twins of 2002 and 2003')
  // the single-node figure of the same run (a fake clock: the same decisions): 1,591
  t.ok(r.refused < 6576 / 3, `${r.refused} refused (6,576 without early growth on one node)`)
  t.equal(
    r.perSecond.slice(10).reduce((a, b) => a + b, 0),
    0,
    'none refused over the last 5 s',
  )
})

/** The scaled case in sync mode: one sync store, a sync every syncMs (100 ms, the default) of the fake clock. */
async function scaledSync(t: Test, early: boolean): Promise<ScaledRun> {
  const { admin, prefix } = adminFor(t, `s30h1-scaled-s${early ? 'e' : 'n'}`)
  const clock = new FakeClock(T0)
  const spec = scaledSpec({ name: 'sc', periodMs: P, rate: RATE, hi: HI, early })
  const store = redisStore({
    redis: admin,
    seed: SEED,
    prefix,
    mode: 'sync',
    clock,
    ticker: new FakeTicker(),
    timeoutMs: TIMEOUT_MS,
  })(spec) as RedisSyncStore
  t.teardown(() => store.close())
  await store.ready()
  return measured(store, clock, admin, prefix, async (now) => {
    if ((now - T0) % 100 === 0) await store.sync(true)
  })
}

t.test('scaled case in sync mode: one store, one slot', async (t) => {
  const opts = await needRedis(t)
  // measured before this change (a twin of the youngest only, written beside its base, deciding
  // from start + A + D): 4,478 of 9,000 refused, 6,574 without early growth
  t.test('folding twins of both live generations', opts, async (t) => {
    const r = await scaledSync(t, true)
    const without = await scaledSync(t, false)
    t.comment(`with folding twins: refused ${r.refused} of ${r.sent}, per second ${JSON.stringify(r.perSecond)}`)
    t.comment(
      `without early growth: refused ${without.refused} of ${without.sent}, per second ${JSON.stringify(without.perSecond)}`,
    )
    t.comment(`early records: ${JSON.stringify(r.records)}`)
    t.equal(r.sent, 600 * SECONDS, 'every fresh client after the jump was tried once')
    for (const id of ['2002', '2003']) {
      const [, sw, cells, kind] = (r.records[id] ?? ':::').split(':')
      t.equal(kind, 'fold', `${id}: a folding twin`)
      t.ok(Number(cells) >= 2048, `${id}: of ${cells} cells per level`)
      // C ≤ checkEveryMs + syncMs (1,100 ms), D = syncMs + timeoutMs
      t.ok(
        Number(sw) <= T_JUMP + 2 * 1100 + 100 + TIMEOUT_MS,
        `${id}: deciding ${Number(sw) - T_JUMP} ms after the jump ≤ 2C + D`,
      )
    }
    const cells = Number(r.records['2002']!.split(':')[2])
    t.same(r.shapesAfter?.generationCellsPerLevel, [cells, cells], 'shapes: both twins in their bases’ places')
    t.ok(without.refused > r.sent / 2, `without early growth the 128 cells refuse ${without.refused}`)
    t.ok(r.refused < without.refused / 3, `folding twins: ${r.refused} refused, against ${without.refused}`)
    t.equal(
      r.perSecond.slice(10).reduce((a, b) => a + b, 0),
      0,
      'none refused over the last 5 s',
    )
  })
})
