// A sync store holds 45 bytes per cell in this process (the Sketch's score and time, the
// fleet's cell as last pulled (the delta pull's mirror), the pending sum since the last push,
// the dirty list entry and mark), but the `memory` budget counted 16, so a sync policy could
// hold about 2.8× its budget. It sizes its largest shape at 45 B per cell from the store's share of the budget (StoreSpec.memoryBytes), and a
// fixed shape that does not fit that share is refused. `examples/bench/sync-store-memory.ts`
// measures the 45 B with process.memoryUsage() after GC.
import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import { redisStore } from '../../src/cluster/redis-store.js'
import { SYNC_BYTES_PER_CELL } from '../../src/cluster/sync-store.js'
import { telemetryMaxBytes } from '../../src/limit/telemetry.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { REDIS_URL, client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '0123456789abcdef0123456789abcdef'

t.test('the sync store keeps a self-sized policy within its budget at 45 B per cell', async (t) => {
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
      16 + 16 + 8 + 4 + 1,
      'cell (2 × Float64), mirror (2 × Float64), pending (Float64), dirty (Uint32), mark (Uint8)',
    )
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const store = redisStore({ redis: REDIS_URL, seed: SEED, prefix, mode: 'sync', ticker: new FakeTicker() })
    // 1.5 MiB: at 16 B per cell (1,572,864 − 2,048 − 36,864) / (4 × 2 × 16) = 11,984 → 8,192 cells per
    // level, which the sync store would hold at 8,192 × 4 × 2 × 45 = 2,949,120 B; at 45 B the budget
    // holds (1,572,864 − 36,864 − 2,048) / (4 × 2 × 45) = 4,261.0 → 4,096
    const memory = 1.5 * 1024 * 1024
    const l = new Limiter({ memory, limit: { rate: 1, burst: 10 }, clock, ticker, store })
    t.equal(l.sketch.cellsPerLevel, 8192, 'the in-process rule at 16 B per cell')
    t.same(l.limit!.store.generationShapes?.().generationCellsPerLevel, [4096, 4096], 'the sync store: 4,096')
    t.equal(l.limit!.store.sizeBytes(), 2048 + 2 * 4 * 4096 * 45)
    t.ok(l.limit!.store.sizeBytes() + telemetryMaxBytes() <= memory, 'store and telemetry within the budget')
    await l.close()

    // a fixed shape that fits at 16 B per cell but not at 45 is refused at construction:
    // 4 × 1,024 × 2 × 45 = 368,640 B > 200,000 − 36,864
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
      { code: 'ERR_GRUDGE_SIZING_CONFLICT', message: /expected a memory budget ≥ 368640 bytes .*received 163136/ },
    )
    // a budget the Limiter accepts at 16 B but that holds fewer than 16 cells per level at 45 B:
    // 2,048 + 2 × 4 × 16 × 45 = 7,808 B > 42,144 − 36,864
    t.throws(() => new Limiter({ memory: 42_144, limit: { rate: 1, burst: 10 }, clock, ticker, store }), {
      code: 'ERR_GRUDGE_SIZING_BUDGET',
      message: /sync store .*expected a memory budget ≥ 7808/,
    })
  })
})
