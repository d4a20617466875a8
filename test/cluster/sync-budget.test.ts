// A sync store holds 21 bytes per cell in this process (the Sketch's 8-byte cell, the
// pending sum since the last push, the dirty list entry and mark), but the `memory` budget
// counts 8, so a sync policy could hold about 2.6× its budget. It sizes its largest shape at
// 21 B per cell from the store's share of the budget (StoreSpec.memoryBytes), and a fixed
// shape that does not fit that share is refused. `examples/bench/sync-store-memory.ts`
// measured the bytes with process.memoryUsage() after GC (29 B while cells were 16 B).
// Expected values below are computed from the rule (largest power of two M with
// meter + N × L × M × bytes per cell ≤ budget), not read from the code.
import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import { redisStore } from '../../src/cluster/redis-store.js'
import { SYNC_BYTES_PER_CELL } from '../../src/cluster/sync-store.js'
import { telemetryMaxBytes } from '../../src/limit/telemetry.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { REDIS_URL, client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '0123456789abcdef0123456789abcdef'

t.test('the sync store keeps a self-sized policy within its budget at 21 B per cell', async (t) => {
  const opts = await needRedis(t)
  t.test('sync', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('sync-budget')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    t.equal(
      SYNC_BYTES_PER_CELL,
      8 + 8 + 4 + 1,
      'cell (Float32 + Uint32), pending (Float64), dirty (Uint32), mark (Uint8)',
    )
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const store = redisStore({ redis: REDIS_URL, seed: SEED, prefix, mode: 'sync', ticker: new FakeTicker() })
    // 1.5 MiB: at 8 B per cell (1,572,864 − 2,048 − 30,720) / (4 × 2 × 8) = 24,064 → 16,384 cells per
    // level, which the sync store would hold at 16,384 × 4 × 2 × 21 = 2,752,512 B; at 21 B the budget
    // holds (1,572,864 − 30,720 − 2,048) / (4 × 2 × 21) = 9,167.2 → 8,192
    const memory = 1.5 * 1024 * 1024
    const l = new Limiter({ memory, limit: { rate: 1, burst: 10 }, clock, ticker, store })
    t.equal(l.sketch.cellsPerLevel, 16384, 'the in-process rule at 8 B per cell')
    t.same(l.limit!.store.generationShapes?.().generationCellsPerLevel, [8192, 8192], 'the sync store: 8,192')
    t.equal(l.limit!.store.sizeBytes(), 2048 + 2 * 4 * 8192 * 21)
    t.ok(l.limit!.store.sizeBytes() + telemetryMaxBytes() <= memory, 'store and telemetry within the budget')
    await l.close()

    // a fixed shape that fits at 8 B per cell but not at 21 is refused at construction:
    // 4 × 1,024 × 2 × 21 = 172,032 B > 200,000 − 30,720
    t.throws(
      () =>
        new Limiter({
          memory: 200_000,
          levels: 4,
          cellsPerLevel: 1024,
          limit: { rate: 1, burst: 10 },
          clock,
          ticker,
          store,
        }),
      { code: 'ERR_GRUDGE_SIZING_CONFLICT', message: /expected a memory budget ≥ 172032 bytes .*received 169280/ },
    )
    // a budget the Limiter accepts at 8 B (≥ 2,048 + 30,720 + 4 × 16 × 2 × 8 = 33,792) but whose
    // store share, 35,000 − 30,720 = 4,280, holds fewer than 16 cells per level at 21 B
    // (2,048 + 2 × 4 × 16 × 21 = 4,736)
    t.throws(() => new Limiter({ memory: 35_000, limit: { rate: 1, burst: 10 }, clock, ticker, store }), {
      code: 'ERR_GRUDGE_SIZING_BUDGET',
      message: /sync store .*expected a memory budget ≥ 4736/,
    })
  })
})
