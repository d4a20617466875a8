// A sync push of a base that fails after the store folded the base into its folding twin (the
// switch passed while the push was in flight): putBack must put its sums on the twin cells they
// repeat into (spec/cluster.md "Early growth", sync mode), so that once Redis folds the twin and
// the store pushes them there nothing is lost and every cell reads what a full pull makes it.
// The failure is injected by a client wrapper that holds the store's first sync-script call at a
// gate and then rejects it without sending it.
// (r1, s30: putBack onto the replaced base instead of its twin reads 6 < 10 added here.)
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import type { RedisLike } from '../../src/cluster/client.js'
import {
  AddedTotals,
  FOLD_SWITCH,
  FOLD_T0,
  FOLD_TIMEOUT_MS,
  FullPullCheck,
  foldSpec,
  foldSyncStore,
  heldGenerations,
  scriptClient,
  writeFoldRecords,
} from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

t.test('sync: a failed base push across the local fold goes to the twin', async (t) => {
  const opts = await needRedis(t)
  t.test('two stores, one slot, 32 → 128', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 's30r1-fold-failed-push')
    const L = 3
    const clock = new FakeClock(FOLD_T0)
    const spec = foldSpec(L)
    let hold = false
    let reached: () => void = () => {}
    let release: () => void = () => {}
    const reachedP = new Promise<void>((r) => (reached = r))
    const gate = new Promise<void>((r) => (release = r))
    const r = admin as unknown as Required<RedisLike>
    const wrapped = scriptClient(admin, {
      evalshaBuffer: async (sha, n, ...a) => {
        // the sync script has 1 + 2K keys (the fold script 3)
        if (hold && n > 3) {
          hold = false
          reached()
          await gate
          throw new Error('injected: the push failed before Redis saw it')
        }
        return r.evalshaBuffer(sha, n, ...a)
      },
    })
    const a = foldSyncStore(admin, prefix, clock, spec)
    const b = foldSyncStore(wrapped, prefix, clock, spec)
    await a.ready()
    await b.ready()
    await writeFoldRecords(admin, prefix, a.shape.fingerprint)
    const added = new AddedTotals()
    const add = added.add.bind(added)
    for (let i = 0; i < 40; i++) add(i % 2 === 0 ? a : b, `k${i % 17}`, 1 + (i % 3))
    await a.sync(true)
    await b.sync(true) // both adopt the early records
    clock.set(FOLD_SWITCH - 100)
    for (let i = 0; i < 30; i++) add(b, `k${i % 23}`, 2)
    hold = true
    const inFlight = b.sync()
    await reachedP
    // the switch passes while B's push of the bases is in flight; B writes on, folding them
    clock.set(FOLD_SWITCH + 10)
    add(b, 'k1', 5)
    add(a, 'k2', 5)
    release()
    await inFlight
    t.ok(
      heldGenerations(b).every((g) => g.suffix !== ''),
      'B holds the twins in the bases’ places',
    )
    clock.set(FOLD_SWITCH + 2 * FOLD_TIMEOUT_MS + 10)
    for (let round = 0; round < 3; round++) {
      await a.sync(true)
      await b.sync(true)
    }
    const full = new FullPullCheck(t, admin, prefix, L)
    for (const s of [a, b]) {
      for (const g of heldGenerations(s)) {
        t.equal(g.awaitFoldFrom, 0, `generation ${g.id}${g.suffix} synced`)
        await full.generation(g)
      }
    }
    t.equal(full.mismatches, 0, 'every cell as a full pull')
    t.equal(
      added.readsBelow(t, [a, b]).below,
      0,
      'every key reads at least what the fleet added to it, the failed push’s sums included',
    )
    await a.close()
    await b.close()
  })
})
