// Sync mode's folding twins (spec/cluster.md "Early growth", _The fold_, one slot): three sync
// stores on one driven clock share a self-sized counter whose two live generations (32 cells per
// level) get folding twins of 128 (records written by the test, as another instance would). At
// the switch each store folds its base into its twin locally (cells and unpushed sums); Redis
// folds the twin's string from the base's once every base push has landed (switch +
// 2·timeoutMs), after which the twin syncs like a generation. Checked after every sync: every
// cell of every generation held (the twins once Redis holds them) is what a full pull of the
// strings would make it (as test/cluster/sync-delta.test.ts); at the end, after every store
// synced twice, every key reads in every store at least everything the fleet added to it (no
// decay, adds only: a write lost across the fold would read below).
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import { mulberry32 } from '../fixtures/mulberry32.js'
import {
  AddedTotals,
  FOLD_SWITCH,
  FOLD_T0,
  FOLD_TIMEOUT_MS,
  FullPullCheck,
  foldSpec,
  foldSyncStore,
  heldGenerations,
  writeFoldRecords,
} from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

t.test('sync mode: folding twins lose no write and pull as a full pull would', async (t) => {
  const opts = await needRedis(t)
  // lagMs: the third store's clock (its time, and the time it sends to the scripts) runs that far
  // behind the others', as an instance whose server-time estimate lags: it switches later and
  // pushes to the base until then, which the fold (at switch + 2·timeoutMs of the time of the
  // store that asks for it) must still take in
  for (const lagMs of [0, 1500])
    t.test(`three stores, one slot, 32 → 128 cells per level, one ${lagMs} ms behind`, opts, async (t) => {
      const { admin, prefix } = adminFor(t, `s30h1-sync-fold${lagMs}`)
      const L = 3
      const clock = new FakeClock(FOLD_T0)
      const spec = foldSpec(L)
      const behind = { now: () => clock.now() - lagMs }
      const stores = [0, 1, 2].map((i) => foldSyncStore(admin, prefix, i === 2 ? behind : clock, spec))
      for (const s of stores) await s.ready()
      await writeFoldRecords(admin, prefix, stores[0].shape.fingerprint)
      const random = mulberry32(0xf01d)
      const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`)
      const added = new AddedTotals()
      const full = new FullPullCheck(t, admin, prefix, L)
      let twinsChecked = 0
      /** Every cell of every generation `s` syncs against the full pull of the strings as they are now. */
      const check = async (s: RedisSyncStore) => {
        for (const g of heldGenerations(s)) {
          if (g.awaitFoldFrom > 0) continue // not synced until Redis holds its folded cells
          if (g.suffix !== '') twinsChecked++
          await full.generation(g)
        }
      }
      let switchedSeen = 0
      for (let step = 0; step < 500; step++) {
        clock.advance(Math.floor(random() * 60))
        const s = stores[Math.floor(random() * 3)]
        const key = keys[Math.floor(random() * keys.length)]
        const x = random()
        if (x < 0.4) {
          if (s.tryConsume(key, 1, 1e8).admitted) added.count(key, 1)
        } else if (x < 0.6) added.add(s, key, 1 + Math.floor(random() * 3))
        else {
          const sync = s.sync(true)
          // a write while the sync is in flight (around the switch: into the base's sums, then folded)
          if (random() < 0.4) added.add(s, key, 1)
          await sync
          await check(s)
          if (heldGenerations(s).every((g) => g.suffix !== '')) switchedSeen++
        }
      }
      t.ok(
        clock.now() > FOLD_SWITCH + 2 * FOLD_TIMEOUT_MS + lagMs,
        `the run crossed the switch and the fold (${clock.now() - FOLD_T0} ms)`,
      )
      for (let round = 0; round < 2; round++) for (const s of stores) await s.sync(true)
      for (const s of stores) await check(s)
      t.equal(full.mismatches, 0, `every cell as a full pull (${full.compared} compared)`)
      t.ok(twinsChecked > 20, `twins compared after the fold: ${twinsChecked}`)
      t.ok(switchedSeen > 0, 'the stores hold the twins in their bases’ places')
      for (const id of [100, 101]) {
        t.equal(await admin.strlen(`${prefix}:{f}:g${id}+`), L * 128 * 16, `generation ${id}: the twin folded in Redis`)
      }
      for (const s of stores)
        t.same(
          s.liveShapes().map((g) => g.cellsPerLevel),
          [128, 128],
          'the twins decide',
        )
      const { below, reads: keysRead } = added.readsBelow(t, stores)
      t.equal(below, 0, `every key reads at least what the fleet added to it (${keysRead} reads)`)
      for (const s of stores) await s.close()
    })
})
