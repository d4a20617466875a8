// Sync mode over S > 1 slots proposes a written-beside twin for every live generation smaller
// than the size it wants (spec/cluster.md "Early growth"): each was capped by the budget alone,
// so two of them (a period longer than the promotion age) held 768 cells per level against the
// budget's N × largest = 512. The proposals now share the room, the youngest first.
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '6666666666666666ffffffffffffffff'

t.test('sync, 3 slots: twins within N x the largest shape', async (t) => {
  const opts = await needRedis(t)
  t.test('two live generations of 128, largest 256', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('s30r1-early-budget')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const PERIOD = 600_000
    const T0 = 100 * PERIOD + 1000
    const clock = new FakeClock(T0)
    const spec: StoreSpec = {
      name: 'b',
      sketch: { levels: 3, cellsPerLevel: 128, decay: linear(1), lo: 0, hi: 10, aggregator: 'min' },
      generations: 2,
      periodMs: PERIOD,
      sizing: {
        sizeNextGeneration: () => 256,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 256,
        growEarlyWhen: () => true,
        checkEveryMs: 1000,
      },
    }
    const s = redisStore({
      redis: admin,
      seed: SEED,
      prefix,
      mode: 'sync',
      slots: 3,
      clock,
      ticker: new FakeTicker(),
      timeoutMs: 500,
      onStoreError: 'local',
    })(spec) as RedisSyncStore
    await s.ready()
    for (let step = 0; step < 6; step++) {
      for (let i = 0; i < 20; i++) s.tryConsume(`k${step}-${i}`, 1, 10)
      clock.advance(1000)
      await s.sync(true)
    }
    const shapes = s.liveShapes()
    t.comment(JSON.stringify(shapes))
    let cells = 0
    for (const g of shapes) cells += g.cellsPerLevel + (g.twin ?? 0)
    t.ok(cells <= 2 * 256, `cells per level held ${cells} ≤ N × largest = 512`)
    await s.close()
  })
})
