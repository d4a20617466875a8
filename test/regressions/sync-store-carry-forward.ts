// Sync mode decided "as Rotator.tryUpdate over the live generations" (spec/cluster.md) but
// wrote the younger generations with a plain update: without the Rotator's carry-forward
// (spec/rotator.md §1), a key held at its limit was given back about one burst per rotation,
// the amnesty test/regressions/rotator-sustained-key-amnesty.ts found in the Rotator.
// Same traffic here through one sync-mode store: one key, no collisions. Without syncs the
// store must admit exactly what the exact meter admits (1,818). Syncing every 10 s, the
// pushed deltas carry the raise too (or each pull would undo it); a push adds them without
// the drain over the gap, which over-counts by at most rate × syncMs per cell where the
// fleet's cell was at 0 (spec/cluster.md: "it never forgives"): here the fresh generation
// of each of the 8 rotations, 1/s × 10 s = 10 each. Before the fix: 1,840 (amnesty).
import t from 'tap'
import type * as Tap from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from '../cluster/redis-helper.js'

async function run(t: Tap.Test, syncEveryMs: number): Promise<number> {
  const admin = client()
  t.teardown(() => admin.quit())
  const prefix = uniquePrefix('sync-carry')
  const clock = new FakeClock(10_000_000)
  const store = redisStore({
    redis: admin,
    seed: '2222222222222222bbbbbbbbbbbbbbbb',
    prefix,
    mode: 'sync',
    clock,
    ticker: new FakeTicker(),
    timeoutMs: 2000,
    onStoreError: 'local',
  })({
    name: 'carry',
    // the debt meter's shape: linear drain at the rate, hi = maxDebt = 10 × burst
    sketch: { levels: 4, cellsPerLevel: 1024, decay: linear(1), hi: 200 },
    generations: 2,
    periodMs: 200_000,
  }) as RedisSyncStore
  await store.ready()
  let admitted = 0
  const start = clock.now()
  for (let ms = 0; ms < 1_800_000; ms += 2000) {
    clock.set(start + ms)
    if (syncEveryMs > 0 && ms % syncEveryMs === 0) await store.sync()
    for (let j = 0; j < 3; j++) if (store.tryConsume('k', 1, 20).admitted) admitted++
  }
  await store.close()
  await dropPrefix(admin, prefix)
  return admitted
}

t.test('a key sending 1.5/s against 1/s, burst 20, for 30 min (2 generations of 200 s)', async (t) => {
  const opts = await needRedis(t)
  // the exact meter: the debt never drains to 0 and is full (20) after the last step, so
  // admitted = final debt + drained = 20 + 1 × 1798
  t.test('no sync: exactly the exact meter', opts, async (t) => {
    const admitted = await run(t, 0)
    t.equal(admitted, 1818, `admitted ${admitted}`)
  })
  t.test('sync every 10 s: never more, at most 8 × 10 fewer', opts, async (t) => {
    const admitted = await run(t, 10_000)
    t.ok(admitted <= 1818, `admitted ${admitted} ≤ 1818: no debt given back at a rotation`)
    t.ok(admitted >= 1818 - 8 * 10, `admitted ${admitted} ≥ 1738: the stated over-count only`)
  })
})
