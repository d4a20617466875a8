// #14 F3 in sync mode: a written-beside twin (S > 1 slots) misses what an instance wrote to its
// base before it adopted the twin, at its next sync; it decides from start + A + D so that all
// of that has drained. D = syncMs + timeoutMs was the proposer's, but syncMs is per instance: B
// (syncMs 5000) adopts up to 5.5 s after the start, A (syncMs 100) put the switch 600 ms + A
// after it. Now the shape script moves the switch to the latest until in the fleet lag record
// (each instance's last round + its lag) + A.
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { lagKey } from '../../src/cluster/fleet-sizing.js'
import { LAG_T0 as T0, LoadJump, jumpSpec, lagStore } from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

const SEED = '6666666666666666eeeeeeeeeeeeeeee'

t.test('sync, 3 slots: instances with another syncMs around a written-beside twin', async (t) => {
  const opts = await needRedis(t)
  t.test('B syncs every 5 s, A every 100 ms', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 'f3-sync-mixed')
    const clock = new FakeClock(T0)
    const jump = new LoadJump()
    // linear 1/s, hi 10: the promotion age A is 10 s
    const spec = jumpSpec(jump, { name: 'w', levels: 3, maxCellsPerLevel: 1024, checkEveryMs: 200 })
    const make = (syncMs: number) =>
      lagStore('sync', admin, SEED, prefix, clock, spec, { slots: 3, syncMs, timeoutMs: 500 })
    const a = make(100)
    const b = make(5000)
    await a.ready()
    await b.ready()
    t.same(
      await admin.hgetall(lagKey(a.shape)),
      { '600': String(T0 + 600), '5500': String(T0 + 5500) },
      'each registers syncMs + timeoutMs at its first sync',
    )
    jump.on = true
    let proposedAt: number | undefined
    let below = 0
    let worst = 0
    const HELD_AT = T0 + 4900
    for (let now = T0 + 100; now <= T0 + 18_000; now += 100) {
      clock.set(now)
      for (let i = 0; i < 5; i++) a.tryConsume(`k-${now}-${i}`, 1, 5)
      // B fills 'held' to hi just before its next sync (which adopts the twin): only the base has it
      if (now === HELD_AT) b.add('held', 10)
      await a.sync(true)
      if ((now - T0) % 5000 === 0) await b.sync(true)
      if (proposedAt === undefined && (await admin.exists(`${prefix}:{w}:s100+`)) === 1) proposedAt = now
      if (now >= HELD_AT) {
        // the exact bucket of what the fleet added to 'held' (linear 1/s from 10)
        const exact = Math.max(0, 10 - (now - HELD_AT) / 1000)
        const read = b.read('held')
        if (read < exact - 1e-9) {
          below++
          worst = Math.max(worst, exact - read)
        }
      }
    }
    // A's proposal sw = t + A + 600 is moved to max(t + A + 600, last + A): B's until T0 + 5,500
    // from its first sync (B's next sync, at T0 + 5,000, comes after the proposal) + A = 10 s
    t.ok(proposedAt !== undefined && proposedAt < T0 + 4900, "A proposed twins before B's sync at T0 + 5,000")
    const rec = (await admin.get(`${prefix}:{w}:s100+`)) ?? ''
    t.match(
      rec,
      new RegExp(`^${a.shape.fingerprint}:${T0 + 5500 + 10_000}:512$`),
      "100's twin, written beside, decides from B's until T0 + 5,500 + A (not the proposal + A + A's 600)",
    )
    t.comment(`proposed at T0 + ${proposedAt! - T0} ms, 'held' filled at T0 + 4900 ms`)
    t.comment(`B read 'held' below the exact bucket at ${below} steps, by up to ${worst.toFixed(2)}`)
    t.equal(below, 0, "B never reads 'held' below the exact bucket of what the fleet added")
    await a.close()
    await b.close()
  })
})
