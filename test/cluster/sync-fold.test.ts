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
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { none } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '6666666666666666ffffffffffffffff'

/** mulberry32: a small seeded PRNG, so a failure replays. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

/** What the test reads of a store's live generations (private fields). */
interface Held {
  gens: {
    id: number
    suffix: string
    awaitFoldFrom: number
    pending: Float64Array
    sketch: { cells: Float64Array; cellsPerLevel: number }
  }[]
}

t.test('sync mode: folding twins lose no write and pull as a full pull would', async (t) => {
  const opts = await needRedis(t)
  // lagMs: the third store's clock (its time, and the time it sends to the scripts) runs that far
  // behind the others', as an instance whose server-time estimate lags: it switches later and
  // pushes to the base until then, which the fold (at switch + 2·timeoutMs of the time of the
  // store that asks for it) must still take in
  for (const lagMs of [0, 1500])
    t.test(`three stores, one slot, 32 → 128 cells per level, one ${lagMs} ms behind`, opts, async (t) => {
      const admin = client()
      const prefix = uniquePrefix(`s30h1-sync-fold${lagMs}`)
      t.teardown(async () => {
        await dropPrefix(admin, prefix)
        await admin.quit()
      })
      const PERIOD = 600_000
      const T0 = 100 * PERIOD + 1000
      const TIMEOUT_MS = 2000
      const L = 3
      const clock = new FakeClock(T0)
      const spec: StoreSpec = {
        name: 'f',
        sketch: { levels: L, cellsPerLevel: 32, decay: none(), lo: 0, hi: 1e9, aggregator: 'min' },
        generations: 2,
        periodMs: PERIOD,
        sizing: {
          sizeNextGeneration: () => 32,
          minCellsPerLevel: 16,
          maxCellsPerLevel: 256,
          growEarlyWhen: () => false, // the twins are the test's own records
          checkEveryMs: 1000,
        },
      }
      const behind = { now: () => clock.now() - lagMs }
      const stores = [0, 1, 2].map(
        (i) =>
          redisStore({
            redis: admin,
            seed: SEED,
            prefix,
            mode: 'sync',
            clock: i === 2 ? behind : clock,
            ticker: new FakeTicker(),
            timeoutMs: TIMEOUT_MS,
            // syncs are the test's, far apart at times: a stale view keeps deciding on its cells
            onStoreError: 'local',
          })(spec) as RedisSyncStore,
      )
      for (const s of stores) await s.ready()
      const fp = stores[0].shape.fingerprint
      const SWITCH = T0 + 5000
      const ids = [100, 101]
      for (const id of ids) await admin.set(`${prefix}:{f}:s${id}+`, `${fp}:${SWITCH}:128:fold`)
      const random = rng(0xf01d)
      const keys = Array.from({ length: 40 }, (_, i) => `key-${i}`)
      const total = new Map<string, number>()
      const add = (s: RedisSyncStore, key: string, v: number) => {
        s.add(key, v)
        total.set(key, (total.get(key) ?? 0) + v)
      }
      let checked = 0
      let mismatches = 0
      let twinsChecked = 0
      /** Every cell of every generation `s` syncs against the full pull of the strings as they are now. */
      const check = async (s: RedisSyncStore) => {
        for (const g of (s as unknown as Held).gens) {
          if (g.awaitFoldFrom > 0) continue // not synced until Redis holds its folded cells
          const raw = await admin.getBuffer(`${prefix}:{f}:g${g.id}${g.suffix}`)
          const M = g.sketch.cellsPerLevel
          if (g.suffix !== '') twinsChecked++
          for (let p = 0; p < L * M; p++) {
            const fleet = raw !== null && raw.length >= 16 * (p + 1) ? raw.readDoubleLE(16 * p) : 0
            const want = fleet + g.pending[p]
            checked++
            if (!Object.is(g.sketch.cells[2 * p], want) && mismatches++ < 5) {
              t.fail(`gen ${g.id}${g.suffix} cell ${p}: ${g.sketch.cells[2 * p]} locally, a full pull ${want}`)
            }
          }
        }
      }
      let switchedSeen = 0
      for (let step = 0; step < 500; step++) {
        clock.advance(Math.floor(random() * 60))
        const s = stores[Math.floor(random() * 3)]
        const key = keys[Math.floor(random() * keys.length)]
        const x = random()
        if (x < 0.4) {
          if (s.tryConsume(key, 1, 1e8).admitted) total.set(key, (total.get(key) ?? 0) + 1)
        } else if (x < 0.6) add(s, key, 1 + Math.floor(random() * 3))
        else {
          const sync = s.sync(true)
          // a write while the sync is in flight (around the switch: into the base's sums, then folded)
          if (random() < 0.4) add(s, key, 1)
          await sync
          await check(s)
          if ((s as unknown as Held).gens.every((g) => g.suffix !== '')) switchedSeen++
        }
      }
      t.ok(
        clock.now() > SWITCH + 2 * TIMEOUT_MS + lagMs,
        `the run crossed the switch and the fold (${clock.now() - T0} ms)`,
      )
      for (let round = 0; round < 2; round++) for (const s of stores) await s.sync(true)
      for (const s of stores) await check(s)
      t.equal(mismatches, 0, `every cell as a full pull (${checked} compared)`)
      t.ok(twinsChecked > 20, `twins compared after the fold: ${twinsChecked}`)
      t.ok(switchedSeen > 0, 'the stores hold the twins in their bases’ places')
      for (const id of ids) {
        t.equal(await admin.strlen(`${prefix}:{f}:g${id}+`), L * 128 * 16, `generation ${id}: the twin folded in Redis`)
      }
      let below = 0
      let keysRead = 0
      for (const s of stores) {
        t.same(
          s.liveShapes().map((g) => g.cellsPerLevel),
          [128, 128],
          'the twins decide',
        )
        for (const [key, sum] of total) {
          keysRead++
          if (s.read(key) < sum - 1e-9 && below++ < 5) t.fail(`${key}: reads ${s.read(key)} < ${sum} added`)
        }
      }
      t.equal(below, 0, `every key reads at least what the fleet added to it (${keysRead} reads)`)
      for (const s of stores) await s.close()
    })
})
