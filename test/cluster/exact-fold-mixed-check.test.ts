// r1 (s30): exact mode's adoption lag D = 2·checkEveryMs + timeoutMs was the proposer's, but
// `sizing.checkEveryMs` and `timeoutMs` are per instance (not in the fingerprint): an instance
// that checks less often trusts its read of the early records for 2 × its own checkEveryMs, so it
// wrote the base after the twin's switch, when another instance had folded it (B admitted a key
// held at its limit 16 times against the exact bucket's 12). Now every shape round registers its
// instance's lag in the fleet lag record `P lag` (its round's time + its lag) and the shape script
// moves a proposal's switch to the latest of those still standing (spec/cluster.md "Early growth",
// _The fleet's adoption lag_).
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { lagKey } from '../../src/cluster/fleet-sizing.js'
import { LAG_T0 as T0, LoadJump, jumpSpec, lagStore } from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

const SEED = '7777777777777777aaaaaaaaaaaaaaaa'

t.test('exact: instances with another checkEveryMs around a folding twin', async (t) => {
  const opts = await needRedis(t)
  t.test('B checks every 5 s, A every 200 ms (D = 900 ms)', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 's30r1-xfold-mixed')
    const clock = new FakeClock(T0)
    // A's early check wants twins of 512 once `jump` is on (a load jump, seen by its sizer)
    const jump = new LoadJump()
    const make = (checkEveryMs: number) =>
      lagStore('exact', admin, SEED, prefix, clock, jumpSpec(jump, { checkEveryMs }), { timeoutMs: 500 })
    const a = make(200)
    const b = make(5000)
    await a.ready()
    await b.ready()
    // B's lag: 2 × 5000 + 500, registered by its ready() at T0 until T0 + 10,500
    t.same(await admin.hgetall(lagKey(a.shape)), { '900': String(T0 + 900), '10500': String(T0 + 10_500) })
    jump.on = true
    // both serve traffic every 50 ms; B alone serves the key 'held' (5 a second, burst 5)
    let bAdmitted = 0
    let exactAdmitted = 0
    // the exact per-key bucket on the same requests (linear decay 1/s, burst 5)
    let debt = 0
    let at = T0
    let proposedAt: number | undefined
    for (let now = T0 + 150; now < T0 + 16_000; now += 50) {
      clock.set(now)
      await a.tryConsume(`other-${now}`, 1, 5)
      if (now % 200 === 0) {
        debt = Math.max(0, debt - (now - at) / 1000)
        at = now
        if (debt + 1 <= 5) {
          debt += 1
          exactAdmitted++
        }
        if ((await b.tryConsume('held', 1, 5)).admitted) bAdmitted++
      }
      await a.settled()
      await b.settled()
      if (proposedAt === undefined && (await admin.exists(`${prefix}:{m}:s100+`)) === 1) proposedAt = now
    }
    // A proposed at its second check after the jump, from its own lag a switch 900 ms on: the
    // script moved it to B's field's until, T0 + 10,500 from B's ready() (B's next round, its
    // report at T0 + 5,000, comes after the proposal; the record was absent before the step that
    // wrote it)
    t.ok(proposedAt !== undefined && proposedAt < T0 + 5000, `A proposed twins before B's report at T0 + 5,000`)
    for (const id of [100, 101]) {
      const rec = (await admin.get(`${prefix}:{m}:s${id}+`)) ?? ''
      const m = /^[0-9a-f]{16}:(\d+):512:fold$/.exec(rec)
      t.ok(m !== null, `a folding twin of ${id} is recorded`)
      t.equal(Number(m?.[1]), T0 + 10_500, `${id}'s switch is B's until T0 + 10,500 (not the proposal + A's 900)`)
    }
    t.comment(`proposed at T0 + ${proposedAt! - T0} ms`)
    t.comment(`B admitted 'held' ${bAdmitted} times in [0.15, 16) s, the exact bucket ${exactAdmitted}`)
    // with the proposer's lag alone B wrote the base until its next report read the twin (about
    // 5 s) after A's fold (about 1 s): not in the twin, what it admitted there was admitted once more
    t.ok(bAdmitted <= exactAdmitted, `B admits the key at most what the exact bucket does`)
    await a.close()
    await b.close()
  })
})
