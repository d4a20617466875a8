// spec/cluster.md "Sync mode's folding twin" says an instance that had not read the early record
// by the switch (its syncs failing since before the twin's start + D) could push to the base after
// the fold, losing those writes. Over one slot (the only folding case) a sync's shape round reads
// the record before the push is built, so such an instance folds its unpushed sums into the twin
// and pushes them there: nothing is lost. (r1, s30)
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import type { RedisLike } from '../../src/cluster/client.js'
import {
  AddedTotals,
  FOLD_SWITCH,
  FOLD_T0,
  FOLD_TIMEOUT_MS,
  foldSpec,
  foldSyncStore,
  writeFoldRecords,
} from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

t.test('sync: a store whose syncs fail from before the twin’s start to after the Redis fold', async (t) => {
  const opts = await needRedis(t)
  t.test('loses none of its writes of the outage (it reads the record before it pushes)', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 's30r1-fold-late-adopter')
    const clock = new FakeClock(FOLD_T0)
    const spec = foldSpec(3)
    let down = false
    const fail = () => Promise.reject(new Error('injected: Redis unreachable'))
    const r = admin as unknown as Required<RedisLike>
    const wrapped: RedisLike = {
      evalsha: (sha, n, ...a) => (down ? fail() : admin.evalsha(sha, n, ...a)),
      evalshaBuffer: (sha, n, ...a) => (down ? fail() : r.evalshaBuffer(sha, n, ...a)),
      eval: (src, n, ...a) => (down ? fail() : admin.eval(src, n, ...a)),
      evalBuffer: (src, n, ...a) => (down ? fail() : r.evalBuffer(src, n, ...a)),
      mgetBuffer: (...keys) => (down ? Promise.reject(new Error('injected')) : admin.mgetBuffer(...keys)),
      script: (sub, src) => admin.script(sub, src),
    }
    const a = foldSyncStore(admin, prefix, clock, spec)
    const c = foldSyncStore(wrapped, prefix, clock, spec)
    await a.ready()
    await c.ready()
    const added = new AddedTotals()
    const add = added.add.bind(added)
    down = true
    await writeFoldRecords(admin, prefix, a.shape.fingerprint)
    for (let i = 0; i < 40; i++) add(i % 2 === 0 ? a : c, `k${i % 17}`, 1 + (i % 3))
    await a.sync(true)
    await c.sync() // fails
    clock.set(FOLD_SWITCH + 10)
    for (let i = 0; i < 20; i++) add(i % 2 === 0 ? a : c, `k${i % 13}`, 2)
    await a.sync(true)
    clock.set(FOLD_SWITCH + 2 * FOLD_TIMEOUT_MS + 10)
    await a.sync(true) // Redis folds the twins
    for (const id of [100, 101]) t.ok((await admin.strlen(`${prefix}:{f}:g${id}+`)) > 0, `twin ${id} folded in Redis`)
    const bases = await Promise.all([100, 101].map((id) => admin.getBuffer(`${prefix}:{f}:g${id}`)))
    for (let i = 0; i < 20; i++) add(c, `k${i % 11}`, 3) // the outage goes on: C writes locally
    await c.sync()
    down = false
    for (let round = 0; round < 3; round++) {
      await c.sync(true)
      await a.sync(true)
    }
    const after = await Promise.all([100, 101].map((id) => admin.getBuffer(`${prefix}:{f}:g${id}`)))
    t.ok(
      after.every((b, i) => b !== null && bases[i] !== null && b.equals(bases[i])),
      'C pushed nothing to the bases after the fold',
    )
    t.equal(
      added.readsBelow(t, [a, c]).below,
      0,
      'every key reads at least what the fleet added, C’s outage writes included',
    )
    await a.close()
    await c.close()
  })
})
