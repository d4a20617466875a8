// Review r1 (#14 F3) on the fleet lag record `P lag` (spec/cluster.md "Early growth", _The
// fleet's adoption lag_), both fixed:
// 1. An instance whose adoption lag D (exact mode 2·checkEveryMs + timeoutMs, sync mode syncMs +
//    timeoutMs) reaches N·periodMs keeps a field whose until stands past the end of every live
//    generation at each of its rounds, so the shape script dropped every twin any instance
//    proposed: no early growth fleet-wide while it ran, and nothing said so. Now this build
//    refuses such options at construction, and an instance whose proposal another instance's
//    field drops (another build, or a fleet period shorter than its own) emits one 'fleet-lag'
//    event with the figures.
// 2. The script moved a proposal to now + max(field lags), where max(field untils) already covers
//    every instance's trusted reads (the bound only needs s ≥ r + D_X, the field's until).
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { redisStore, type RedisStoreEvent } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import { lagKey, twinRecord } from '../../src/cluster/fleet-sizing.js'
import { LAG_PERIOD_MS as P, LAG_T0 as T0, LoadJump, jumpSpec, lagRound, lagStore } from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

const SEED = '7777777777777777bbbbbbbbbbbbbbbb'

t.test('fleet lag', async (t) => {
  const opts = await needRedis(t)

  t.test('an adoption lag of N·periodMs or more is refused at construction', async (t) => {
    const never = new LoadJump()
    const exact = (checkEveryMs: number, timeoutMs: number, sized = true) =>
      redisStore({ redis: 'redis://127.0.0.1:1', seed: SEED, mode: 'exact', timeoutMs })(
        sized ? jumpSpec(never, { checkEveryMs }) : { ...jumpSpec(never, { checkEveryMs }), sizing: undefined },
      )
    const sync = (syncMs: number, timeoutMs: number) =>
      redisStore({
        redis: 'redis://127.0.0.1:1',
        seed: SEED,
        mode: 'sync',
        ticker: new FakeTicker(),
        syncMs,
        timeoutMs,
      })(jumpSpec(never, { checkEveryMs: 1000 }))
    // exact: D = 2 × 20,000 + 500 = 40,500 ≥ 2 × 20,000
    const err = (() => {
      try {
        exact(P, 500)
      } catch (e) {
        return e as Error & { code?: string }
      }
      return undefined
    })()
    t.equal(err?.code, 'ERR_GRUDGE_OPTION_INVALID', 'exact: checkEveryMs = periodMs with timeoutMs 500 is refused')
    t.match(err?.message, /"sizing\.checkEveryMs" and "timeoutMs"/, 'the message names both options')
    t.match(err?.message, /2 × 20000 \+ 500 = 40500 ms/, "it gives D's figures")
    t.match(err?.message, /2 × 20000 = 40000 ms/, 'and generations × periodMs')
    t.notMatch(err?.message, new RegExp(SEED), 'never the seed')
    // just below: 2 × 19,700 + 500 = 39,900 < 40,000
    const below = exact(19_700, 500)
    await below.close()
    t.pass('exact: D = 39,900 ms is accepted')
    const fixed = exact(P, 500, false)
    await fixed.close()
    t.pass('a fixed shape (no sizing, no twins) is not concerned')
    // sync: D = syncMs + timeoutMs
    t.throws(() => sync(39_500, 500), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /"syncMs" and "timeoutMs".*39500 \+ 500 = 40000 ms/,
    })
    const ok = sync(39_499, 500)
    await ok.close()
    t.pass('sync: D = 39,999 ms is accepted')
  })

  for (const mode of ['exact', 'sync'] as const)
    for (const withB of [false, true])
      t.test(
        `${mode}: ` +
          (withB
            ? "another build's instance of lag 40,500 ms drops every twin, and the proposer says so once"
            : 'control: A alone records twins on the jump'),
        opts,
        async (t) => {
          const { admin, prefix } = adminFor(t, `r1-lag-block-${mode}`)
          const clock = new FakeClock(T0)
          const jump = new LoadJump()
          const events: RedisStoreEvent[] = []
          const limits: unknown[] = []
          // A: D = 2 × 200 + 500 = 900 (exact), 100 + 500 = 600 (sync)
          const spec = jumpSpec(jump, { checkEveryMs: 200, onSizingLimit: (e) => limits.push(e) })
          const a = lagStore(mode, admin, SEED, prefix, clock, spec, { onEvent: (e) => events.push(e) })
          await a.ready()
          // B, of a build that took checkEveryMs = periodMs: D = 40,500 > N·P = 40,000; its rounds
          // every 20 s (its reports) keep its field standing 40.5 s past each
          if (withB) await lagRound(admin, a.shape, T0, 40_500)
          jump.on = true
          // 30 s of a load jump: A checks every 200 ms
          for (let now = T0 + 50; now <= T0 + 30_000; now += 50) {
            clock.set(now)
            if (withB && now === T0 + P) await lagRound(admin, a.shape, now, 40_500)
            if (mode === 'exact') {
              const x = a as RedisExactStore
              await x.tryConsume(`a-${now}`, 1, 5)
              await x.settled()
            } else if (now % 100 === 0) {
              const s = a as RedisSyncStore
              s.tryConsume(`a-${now}`, 1, 5)
              await s.sync(true)
            }
          }
          const twins = (await admin.keys(`${prefix}:{m}:s*+`)).length
          const lag = await admin.hgetall(lagKey(a.shape))
          t.comment(`twins recorded: ${twins}; fleet lag record: ${JSON.stringify(lag)}`)
          const told = events.filter((e) => e.type === 'fleet-lag')
          if (!withB) {
            t.ok(twins > 0, 'A alone: its twins are recorded')
            t.equal(told.length, 0, 'and nothing is told')
            await a.close()
            return
          }
          t.equal(twins, 0, 'no twin recorded in 30 s of a jump (B’s field drops them all)')
          t.ok('40500' in lag, 'B’s field lives on')
          t.equal(
            told.length,
            1,
            `the drop is told once (${events.length} events, ${limits.length} sizing-limit calls)`,
          )
          const e = told[0]
          t.equal(e?.policy, 'm')
          t.equal(e?.fleetLagMs, 40_500, "the event names B's lag")
          t.match(e?.message, /adoption lag of 40500 ms/, 'the message gives the lag that dropped it')
          t.match(e?.message, /generations × periodMs = 2 × 20000 = 40000 ms/, 'beside N·periodMs')
          t.match(e?.message, /logged once/)
          t.comment(e?.message ?? '')
          await a.close()
        },
      )

  t.test('a proposal waits for the latest until, not now + the largest lag', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 'r1-lag-until')
    const k = 200
    const T = (k + 1) * P - 15_000 // k ends 15 s after T
    const store = lagStore('exact', admin, SEED, prefix, new FakeClock(T), jumpSpec(new LoadJump(), { name: 'q' }))
    const shape = store.shape
    const round = (nowMs: number, ownLagMs: number, want: Map<number, string>) =>
      lagRound(admin, shape, nowMs, ownLagMs, want)
    // a slow instance (checkEveryMs 5,000, timeoutMs 500: D = 10,500) last read "no twin" at T;
    // its base writes resting on that read end by T + 10,500 (its field's until)
    await round(T, 10_500, new Map())
    // 4,900 ms later (just before its next round) a fast instance (D = 900) proposes a folding twin
    const at = T + 4900
    const answer = await round(at, 900, new Map([[k, twinRecord(shape, at + 900, 512, true)]]))
    t.equal(answer.periodMs, undefined)
    if (answer.periodMs !== undefined) return
    const sw = answer.twins[0]?.switchAtMs
    // every trusted read of "no twin" ends by T + 10,500: max(T + 4,900 + 900, T + 10,500), before
    // k's end at T + 15,000 (now + the largest lag, T + 15,400, was past it: the twin was dropped)
    t.comment(`switch ${sw === undefined ? 'none (dropped)' : `at T + ${sw - T} ms`}`)
    t.equal(sw, T + 10_500, 'the switch is the latest until, T + 10,500: the twin is recorded')
    t.same(answer.lag?.dropped, [], 'nothing dropped')
    await store.close()
  })
})
