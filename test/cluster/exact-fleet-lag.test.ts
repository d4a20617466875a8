// #14 F3: the fleet lag record `P lag` (spec/cluster.md "Early growth", _The fleet's adoption
// lag_). Every shape round sets its instance's field D (2·checkEveryMs + timeoutMs in exact mode)
// to the round's time + D; a field whose time has passed is deleted by the next round, so an
// instance that left stops raising the fleet's twins D after its last round.
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { lagKey, twinRecord } from '../../src/cluster/fleet-sizing.js'
import { LAG_PERIOD_MS as P, LAG_T0 as T0, LoadJump, jumpSpec, lagRound, lagStore } from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

const SEED = '7777777777777777bbbbbbbbbbbbbbbb'

t.test('exact: the fleet lag record', async (t) => {
  const opts = await needRedis(t)
  t.test('raised by a slow instance, gone D after its last round', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 'f3-fleet-lag')
    const clock = new FakeClock(T0)
    const jump = new LoadJump()
    const make = (checkEveryMs: number, timeoutMs: number) =>
      lagStore('exact', admin, SEED, prefix, clock, jumpSpec(jump, { checkEveryMs }), { timeoutMs })
    const a = make(200, 500) // D = 900
    await a.ready()
    const key = lagKey(a.shape)
    t.same(await admin.hgetall(key), { '900': String(T0 + 900) }, 'A alone: its own field, until T0 + 900')
    clock.set(T0 + 100)
    const b = make(5000, 300) // D = 10,300
    await b.ready()
    t.same(
      await admin.hgetall(key),
      { '900': String(T0 + 900), '10300': String(T0 + 100 + 10_300) },
      'B raises the fleet lag from its first round (ready)',
    )
    const pttl = await admin.pttl(key)
    t.ok(pttl > 10_000 && pttl <= 10_301, `the record expires with its latest field (PTTL ${pttl} ms)`)
    // A alone serves traffic: its reports every 200 ms refresh its field; B's stays until T0 + 10,400
    let seenAt = NaN
    let goneAt = NaN
    for (let now = T0 + 150; now <= T0 + 11_000; now += 50) {
      clock.set(now)
      await a.tryConsume(`k-${now}`, 1, 5)
      await a.settled()
      const has = (await admin.hexists(key, '10300')) === 1
      if (has) seenAt = now
      else if (Number.isNaN(goneAt)) goneAt = now
    }
    // A's rounds leave every 200 ms of its traffic, at the first 50 ms step past it
    t.ok(seenAt >= T0 + 10_400, `B's field kept through its time T0 + 10,400 (last seen at ${seenAt - T0} ms)`)
    t.ok(goneAt <= T0 + 10_650, `deleted by A's first round after it (at ${goneAt - T0} ms)`)
    const left = await admin.hgetall(key)
    t.same(Object.keys(left), ['900'], 'A alone again')
    t.ok(Number(left['900']) > T0 + 11_000 - 300 + 900, "A's field follows its last round")
    t.ok((await admin.pttl(key)) <= 901, 'the record expires 900 ms after A’s last round')
    // a twin proposed now decides from A's own lag: B's no longer counts
    jump.on = true
    let proposedAt: number | undefined
    for (let now = T0 + 11_050; now <= T0 + 13_000 && proposedAt === undefined; now += 50) {
      clock.set(now)
      await a.tryConsume(`k-${now}`, 1, 5)
      await a.settled()
      if ((await admin.exists(`${prefix}:{m}:s101+`)) === 1) proposedAt = now
    }
    t.ok(proposedAt !== undefined, 'A proposed twins')
    const rec = (await admin.get(`${prefix}:{m}:s101+`)) ?? ''
    t.match(rec, new RegExp(`^${a.shape.fingerprint}:${proposedAt! + 900}:512:fold$`), 'switch = proposal + 900')
    await a.close()
    await b.close()
  })

  t.test("the shape script moves a proposal to the latest until of the fleet's fields", opts, async (t) => {
    const { admin, prefix } = adminFor(t, 'f3-fleet-lag-script')
    const k = 200
    const T = (k + 1) * P - 12_000 // k ends 12 s after T
    const store = lagStore('exact', admin, SEED, prefix, new FakeClock(T), jumpSpec(new LoadJump(), { name: 'q' }))
    const shape = store.shape
    const round = (nowMs: number, ownLagMs: number, proposedAtMs: number, want: Map<number, string>) =>
      lagRound(admin, shape, nowMs, ownLagMs, want, proposedAtMs)
    // a slow instance's round at T (lag 10,000: its field's until T + 10,000), then a proposer of
    // lag 900 whose estimate trails the script's time by 60 ms proposes twins of k and k + 1 from
    // its estimate T + 40
    await round(T, 10_000, T, new Map())
    const asked = new Map([
      [k, twinRecord(shape, T + 40 + 900, 512, true)],
      [k + 1, twinRecord(shape, T + 40 + 900, 512, true)],
    ])
    const answer = await round(T + 100, 900, T + 40, asked)
    t.equal(answer.periodMs, undefined)
    if (answer.periodMs !== undefined) return
    // reference (spec/cluster.md): sw = T + 940, t_c = T + 40, A = max(0, sw − t_c − 900) = 0;
    // the fields left: 10,000 → T + 10,000 and 900 → T + 100 + 900, so last = T + 10,000;
    // max(sw − t_c + max(now, t_c), last + A) = max(T + 1,000, T + 10,000), before k's end T + 12,000
    t.same(
      answer.twins.map((tw) => tw?.switchAtMs),
      [T + 10_000, T + 10_000],
      "both moved to the slow instance's until T + 10,000",
    )
    t.equal(await admin.get(`${shape.keyPrefix}s${k}+`), `${shape.fingerprint}:${T + 10_000}:512:fold`)
    t.same(answer.lag, { fleetLagMs: 10_000, latestLagMs: 10_000, latestInMs: 9900, dropped: [] }, 'nothing dropped')
    // a written-beside twin waits its A after that until: proposed for k + 2 (its end T + 48,000)
    // from T + 200 with A = 3,000, sw = T + 200 + 3,000 + 900 = T + 4,100, A = sw − t_c − 900;
    // max(T + 4,100, T + 10,000 + 3,000) = T + 13,000
    const beside = await round(T + 200, 900, T + 200, new Map([[k + 2, twinRecord(shape, T + 4100, 256)]]))
    t.equal(beside.periodMs, undefined)
    if (beside.periodMs !== undefined) return
    t.equal(beside.twins[0]?.switchAtMs, T + 13_000, 'a written-beside twin: the latest until + its A')
    // a later proposal for a generation whose end a field's until passes is not recorded
    await admin.del(`${shape.keyPrefix}s${k}+`)
    await round(T + 1000, 12_000, T + 1000, new Map())
    const late = await round(T + 1100, 900, T + 1100, new Map([[k, twinRecord(shape, T + 2000, 512, true)]]))
    t.ok(late.periodMs === undefined && late.twins[0] === undefined, 'the until T + 13,000 is past k’s end: no twin')
    t.equal(await admin.exists(`${shape.keyPrefix}s${k}+`), 0, 'nothing recorded')
    // the reply says which and why: the field 12,000 stands 11,900 ms more, the switch T + 13,000
    t.same(
      late.periodMs === undefined ? late.lag : undefined,
      { fleetLagMs: 12_000, latestLagMs: 12_000, latestInMs: 11_900, dropped: [{ id: k, switchAtMs: T + 13_000 }] },
      'the drop is told with its figures',
    )
    await store.close()
  })
})
