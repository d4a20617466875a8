// Issue 14 item 2 for a fleet (spec/cluster.md "Early growth"): a load jump must not wait a whole
// period in sync mode either. Two sync stores with their own Redis clients on one injected clock
// share a self-sized debt meter; one of them takes a 10× jump of fresh clients. It records a
// larger twin before the period ends, the other adopts it at its next sync. With one slot every
// live generation gets a folding twin, deciding from the adoption lag after its start, made of
// its base's cells (locally at the switch, in Redis by the fold script once every base push has
// landed); with 3 slots the youngest's twin is written beside its base and decides from A + the
// adoption lag after its start. Either way a key idle since before the twin keeps its debt at
// the period boundary, and a heavy key's admitted total across both stays within the sync bound
// of the exact token bucket.
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '3333333333333333cccccccccccccccc'
const P = 10_000 // periodMs; A = hi / rate = 10 s = (N − 1)·P, the amnesty guard's least period
const RATE = 1 // debt drained per second
const BURST = 4 // the limit of every tryConsume (cost 1)
const HI = 10 // maxDebt ≥ n·BURST + n·RATE·(syncMs + rtt): clamping forgives nothing (spec/cluster.md, Sync bound)
const SYNC_MS = 200 // one check per sync: C = 200 ms
const TIMEOUT_MS = 500
const LAG = SYNC_MS + TIMEOUT_MS // the adoption lag in the switch time
const A = (HI / RATE) * 1000

t.test('sync mode: a 10× jump on one instance starts a larger twin early; both adopt it', async (t) => {
  const opts = await needRedis(t)
  for (const S of [1, 3])
    t.test(`two stores, two clients, one fake clock, ${S} slot(s)`, opts, async (t) => {
      const admin = client()
      const ca = client()
      const cb = client()
      const prefix = uniquePrefix(`fleet-early-${S}`)
      t.teardown(async () => {
        await dropPrefix(admin, prefix)
        await Promise.all([admin.quit(), ca.quit(), cb.quit()])
      })
      const T0 = 1000 * P
      const clock = new FakeClock(T0)
      const spec: StoreSpec = {
        name: 'e',
        sketch: { levels: 4, cellsPerLevel: 128, decay: linear(RATE), lo: 0, hi: HI, aggregator: 'min' },
        generations: 2,
        periodMs: P,
        // ρ target 0.25 at rotations; a check window at ρ > 0.5 grows early
        sizing: {
          sizeNextGeneration: (l) => (4 * l.costPerSecond) / RATE,
          minCellsPerLevel: 16,
          maxCellsPerLevel: 4096,
          growAtLoadFactor: 0.5,
          checkEveryMs: SYNC_MS, // a check at every sync: C = 200 ms
        },
      }
      const mk = (redis: typeof ca) =>
        redisStore({
          redis,
          seed: SEED,
          prefix,
          mode: 'sync',
          slots: S,
          clock,
          ticker: new FakeTicker(),
          syncMs: SYNC_MS,
          timeoutMs: TIMEOUT_MS,
        })(spec) as RedisSyncStore
      const a = mk(ca)
      const b = mk(cb)
      await a.ready()
      await b.ready()

      const T_JUMP = T0 + 18_000 // 8 s into the youth of generation 1002 (youngest over [T0 + 10 s, T0 + 20 s))
      const END = T0 + 32_000
      const STEP = 50
      let fresh = 0
      const innocent = { before: [0, 0], after: [0, 0] } // [sent, refused] while the small shapes decide, and once the twin does
      let heavyAdmitted = 0
      let errors = 0
      let twinSeenAt = NaN // when A first holds a twin
      let adoptedByB = NaN
      let switchedA = NaN
      let switchedB = NaN
      const idle = { admitted1: 0, admitted2: 0, read: NaN }
      const tryIt = (s: RedisSyncStore, key: string): boolean => {
        try {
          return s.tryConsume(key, 1, BURST).admitted
        } catch {
          errors++
          return false
        }
      }
      for (let now = T0; now < END; now += STEP) {
        clock.set(now)
        const ms = now - T0
        // fresh clients, one request each: 10/s per instance; A gets 10× from the jump on
        const perStepA = now >= T_JUMP ? 5 : 0.5
        const perStepB = 0.5
        for (const [s, per] of [
          [a, perStepA],
          [b, perStepB],
        ] as const) {
          const n = Math.floor((ms / STEP + 1) * per) - Math.floor((ms / STEP) * per)
          for (let i = 0; i < n; i++) {
            const ok = tryIt(s, `fresh-${fresh++}`)
            const bucket = Number.isNaN(switchedA) ? innocent.before : innocent.after
            bucket[0]++
            if (!ok) bucket[1]++
          }
        }
        // one heavy key, 5 req/s at each instance (10/s against a drain of 1/s)
        if (ms % 200 === 0) heavyAdmitted += tryIt(a, 'heavy') ? 1 : 0
        if (ms % 200 === 100) heavyAdmitted += tryIt(b, 'heavy') ? 1 : 0
        // a key that spends its burst at B just before the jump, then is idle until generation
        // 1002 decides: its debt has not drained then (4 − 2.2 s × 1/s = 1.8), the twin never saw it
        if (now === T0 + 17_800) for (let i = 0; i < BURST; i++) idle.admitted1 += tryIt(b, 'idle') ? 1 : 0
        if (now === T0 + 20_000) idle.read = a.read('idle')
        if (now === T0 + 20_000) for (let i = 0; i < BURST; i++) idle.admitted2 += tryIt(a, 'idle') ? 1 : 0
        if (ms % SYNC_MS === 0) {
          await a.sync().catch(() => errors++)
          await b.sync().catch(() => errors++)
          const sa = a.liveShapes()
          const sb = b.liveShapes()
          if (Number.isNaN(twinSeenAt) && sa.some((g) => g.twin !== undefined)) twinSeenAt = now
          if (Number.isNaN(adoptedByB) && sb.some((g) => g.twin !== undefined)) adoptedByB = now
          if (Number.isNaN(switchedA) && sa[0].early === true) switchedA = now
          if (Number.isNaN(switchedB) && sb[0].early === true) switchedB = now
        }
      }
      t.equal(errors, 0, 'no call threw or rejected')
      // at the second check in a row that wants one (the first window wholly after the jump)
      t.ok(
        twinSeenAt >= T_JUMP && twinSeenAt <= T_JUMP + 2 * SYNC_MS,
        `A started a twin ${twinSeenAt - T_JUMP} ms after the jump`,
      )
      const fold = S === 1
      t.ok(twinSeenAt < T0 + 20_000, 'before the period of the youngest (1002) ended')
      t.ok(adoptedByB - twinSeenAt <= SYNC_MS, `B adopted it at its next sync (${adoptedByB - twinSeenAt} ms later)`)
      const rec = await admin.get(`${prefix}:{e}:s1002+`)
      const [, switchText, cellsText, kind] = (rec ?? '::').split(':')
      const switchAt = Number(switchText)
      t.ok(Number(cellsText) >= 512, `the early record of 1002: ${cellsText} cells per level (the base: 128)`)
      if (fold) {
        t.equal(kind, 'fold', 'one slot: a folding twin')
        t.equal(switchAt, twinSeenAt + LAG, 'it decides from its start + the adoption lag')
        // the deciding generation then (1001) got one too, switching at the same instant
        const r1001 = await admin.get(`${prefix}:{e}:s1001+`)
        t.same(r1001?.split(':').slice(1), [switchText, cellsText, 'fold'], '1001 got the same folding twin')
      } else {
        t.equal(kind, undefined, '3 slots: a twin written beside its base (no fold over index-range slots)')
        t.equal(switchAt, twinSeenAt + A + LAG, 'it decides from its start + A + the adoption lag')
      }
      const lengths = await Promise.all(
        Array.from({ length: S }, (_, s) => admin.strlen(`${prefix}:{${s === 0 ? 'e' : `e#${s}`}}:g1002+`)),
      )
      t.same(
        lengths,
        Array(S).fill(4 * Math.ceil(Number(cellsText) / S) * 16),
        `its cells in Redis at its own size, every slot L × ceil(M / S) × 16 bytes (${lengths.join(', ')})`,
      )
      t.equal(await admin.get(`${prefix}:{e}:s1002`).then((v) => v?.split(':')[1]), '128', 'the base record unchanged')
      // both switch at the first call at or after switchAt; the bound of spec/rotator.md's fleet case
      t.ok(switchedA >= switchAt && switchedA < switchAt + SYNC_MS, `A decides on the twin from ${switchedA - T0} ms`)
      t.equal(switchedB, switchedA, 'B switches at the same instant')
      // (switches are seen at the syncs, every SYNC_MS: one more C)
      const bound = fold ? T_JUMP + 3 * SYNC_MS + LAG : T_JUMP + 3 * SYNC_MS + A + 2 * LAG
      t.ok(
        switchedA <= bound,
        `undersized until ${switchedA - T_JUMP} ms after the jump ≤ ${fold ? '2C + lag (+ C, seen at a sync)' : '3C + A + 2·lag'} = ${bound - T_JUMP} ms`,
      )
      t.ok(switchedA < T0 + 30_000, 'sooner than the next generation (1003) would decide without early growth')
      // 1003 was proposed at 128 at half of 1002's youth, before the jump: it got a twin of its own
      // at its first check and decides on it by now; 1004 was sized at the jumped load
      const shapes = a.liveShapes()
      t.same(shapes, b.liveShapes(), 'both hold the same live generations, twins and switches')
      t.comment(JSON.stringify(shapes))
      t.equal(await admin.get(`${prefix}:{e}:s1003`).then((v) => v?.split(':')[1]), '128', '1003 recorded at 128')
      t.match(shapes[0], { id: 1003, early: true }, '1003 decides on its twin')
      t.ok(shapes[0].cellsPerLevel >= 512, `1003's twin: ${shapes[0].cellsPerLevel} cells per level`)
      t.ok(shapes[1].id === 1004 && shapes[1].cellsPerLevel >= 512, `1004 recorded at ${shapes[1].cellsPerLevel}`)
      // the amnesty guard: when 1002 decides its base does (it saw the idle key; the twin did not):
      // the key reads at least the exact bucket's debt 4 − 2.2 s × 1/s = 1.8 and gets at most 2 of 4
      // (fewer when collisions in the small base add to it); a twin deciding at once would give 4
      t.equal(idle.admitted1, BURST, 'the idle key spent its burst')
      t.ok(idle.read >= 1.8 - 1e-9, `at the promotion of 1002 it reads ${idle.read} ≥ 1.8`)
      t.ok(idle.admitted2 <= 2, `then gets ${idle.admitted2} of 4 (the exact bucket: 2): no fresh burst`)
      // the sync bound over the 32 s: B + R·T + (n − 1)·(B + R·(syncMs + rtt)); rtt ≈ 0 on the fake clock
      const T = (END - T0) / 1000
      const limit = BURST + RATE * T + (BURST + (RATE * SYNC_MS) / 1000)
      t.ok(heavyAdmitted <= limit, `heavy key: ${heavyAdmitted} admitted in ${T} s ≤ ${limit}`)
      t.ok(heavyAdmitted >= RATE * T * 0.75, `heavy key not starved: ${heavyAdmitted} ≥ ${RATE * T * 0.75}`)
      t.comment(
        `innocent refused: ${innocent.before[1]}/${innocent.before[0]} before the twin decides, ${innocent.after[1]}/${innocent.after[0]} after`,
      )
      t.ok(
        a.sizeBytes() <= 2 * 4 * 4096 * 29 + 2048,
        `A holds ${a.sizeBytes()} B within the budget of N × the largest shape`,
      )
      await a.close()
      await b.close()
    })
})

// the jump split over both instances: each one's own window sees ρ ≈ 55 / 128 = 0.43 < 0.5, the
// fleet (the cost counter both report to at every sync) ρ ≈ 0.86: the early check takes the
// fleet's rate (fleetWindowRate), so the fleet grows as when one instance takes it all
t.test('sync mode: a jump spread over the fleet grows early through the fleet counter', async (t) => {
  const opts = await needRedis(t)
  t.test('two stores at 55 fresh clients/s each', opts, async (t) => {
    const admin = client()
    const ca = client()
    const cb = client()
    const prefix = uniquePrefix('fleet-early-split')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await Promise.all([admin.quit(), ca.quit(), cb.quit()])
    })
    const T0 = 1000 * P
    const clock = new FakeClock(T0)
    const spec: StoreSpec = {
      name: 'e',
      sketch: { levels: 4, cellsPerLevel: 128, decay: linear(RATE), lo: 0, hi: HI, aggregator: 'min' },
      generations: 2,
      periodMs: P,
      sizing: {
        sizeNextGeneration: (l) => (4 * l.costPerSecond) / RATE,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 4096,
        growAtLoadFactor: 0.5,
        checkEveryMs: SYNC_MS,
      },
    }
    const mk = (redis: typeof ca) =>
      redisStore({
        redis,
        seed: SEED,
        prefix,
        mode: 'sync',
        clock,
        ticker: new FakeTicker(),
        syncMs: SYNC_MS,
        timeoutMs: TIMEOUT_MS,
      })(spec) as RedisSyncStore
    const a = mk(ca)
    const b = mk(cb)
    await a.ready()
    await b.ready()
    const T_JUMP = T0 + 12_000 // 2 s into the youth of generation 1002
    let fresh = 0
    let twinAt = NaN
    for (let now = T0; now < T0 + 16_000; now += 50) {
      clock.set(now)
      const per = now >= T_JUMP ? 2.75 : 0.25 // fresh clients per 50 ms step and store: 55/s, 5/s
      const ms = now - T0
      const n = Math.floor((ms / 50 + 1) * per) - Math.floor((ms / 50) * per)
      for (let i = 0; i < n; i++) {
        a.tryConsume(`fresh-${fresh++}`, 1, BURST)
        b.tryConsume(`fresh-${fresh++}`, 1, BURST)
      }
      if (ms % SYNC_MS === 0) {
        await a.sync()
        await b.sync()
        if (Number.isNaN(twinAt) && a.liveShapes().some((g) => g.twin !== undefined)) twinAt = now
      }
    }
    t.ok(twinAt >= T_JUMP && twinAt <= T_JUMP + 4 * SYNC_MS, `a twin ${twinAt - T_JUMP} ms after the jump`)
    const rec = await admin.get(`${prefix}:{e}:s1002+`)
    t.ok(
      Number((rec ?? '::').split(':')[2]) >= 512,
      `1002's twin: ${rec?.split(':')[2]} cells per level (the base: 128)`,
    )
    t.same(a.liveShapes(), b.liveShapes(), 'both hold the same twin')
    await a.close()
    await b.close()
  })
})
