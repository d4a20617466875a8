// Issue 14 item 5 in Redis sync mode (spec/cluster.md "Early growth", spec/sizing.md §7): a
// twin of the youngest generation, recorded on a load jump, shows in generationShapes(), in
// the telemetry's perPolicy and in the Prometheus text — its cells, that it is a twin, the
// fleet's switch time — its cells are in the bytes while it is held beside its base, and the
// growth is in the resizes. Before, generationShapes() gave the bases only: a fleet growing
// early looked unchanged until the twin decided.
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import { SYNC_BYTES_PER_CELL, type RedisSyncStore } from '../../src/cluster/sync-store.js'
import { METER_BYTES } from '../../src/sketch/rotator-sizing.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { Telemetry } from '../../src/limit/telemetry.js'
import { prometheusText } from '../../src/http/prometheus.js'
import { parsePrometheusText, promSample } from '../fixtures/prometheus-text.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '44444444444444448888888888888888'
const P = 10_000 // periodMs; A = hi / rate = 10 s
const RATE = 1
const HI = 10
const SYNC_MS = 200
const TIMEOUT_MS = 500
const L = 4

t.test('sync mode: a twin is in the shapes, the bytes, the resizes and the Prometheus text', async (t) => {
  const opts = await needRedis(t)
  t.test('one store on a fake clock', opts, async (t) => {
    const admin = client()
    const redis = client()
    const prefix = uniquePrefix('h4-sync-early-telemetry')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await Promise.all([admin.quit(), redis.quit()])
    })
    const T0 = 1000 * P
    const clock = new FakeClock(T0)
    const spec: StoreSpec = {
      name: 'e',
      sketch: { levels: L, cellsPerLevel: 128, decay: linear(RATE), lo: 0, hi: HI, aggregator: 'min' },
      generations: 2,
      periodMs: P,
      sizing: {
        sizeNextGeneration: (l) => (4 * l.costPerSecond) / RATE,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 4096,
        growAtLoadFactor: 0.5,
        checkEveryMs: SYNC_MS,
      },
    }
    const s = redisStore({
      redis,
      seed: SEED,
      prefix,
      mode: 'sync',
      // 3 slots: the twin written beside its base (over one slot it would fold, see
      // fleet-early.test.ts, and hold nothing before its switch)
      slots: 3,
      clock,
      ticker: new FakeTicker(),
      syncMs: SYNC_MS,
      timeoutMs: TIMEOUT_MS,
    })(spec) as RedisSyncStore
    await s.ready()
    const tel = new Telemetry({ clock, bucketMs: 1000 })
    tel.addSketch({
      policy: 'limit',
      levels: L,
      cellsPerLevel: 128,
      sizeBytes: () => s.sizeBytes(),
      shape: () => s.generationShapes(),
      debt: { rate: RATE, burst: 4, cost: 1, maxDebt: HI, generations: 2, periodMs: P },
    })
    const base = s.generationShapes()
    t.same(base.early, [], 'no twin before the jump')
    t.equal(base.earlyGrowths, 0)

    const T_JUMP = T0 + 18_000 // generation 1002 is the youngest over [T0 + 10 s, T0 + 20 s)
    let fresh = 0
    let twinAt = NaN
    let resizesBefore = NaN
    let pending: ReturnType<RedisSyncStore['generationShapes']> | undefined
    let now = T0
    for (; now < T0 + 20_000; now += 50) {
      clock.set(now)
      const n = now >= T_JUMP ? 5 : 1 // fresh keys per 50 ms: 20/s, then 100/s
      for (let i = 0; i < n; i++) s.tryConsume(`fresh-${fresh++}`, 1, 4)
      if ((now - T0) % SYNC_MS !== 0) continue
      if (now === T_JUMP) resizesBefore = s.generationShapes().resizes
      await s.sync()
      const g = s.generationShapes()
      if (Number.isNaN(twinAt) && g.early!.length > 0) {
        twinAt = now
        pending = g
      }
    }
    t.ok(twinAt >= T_JUMP && twinAt <= T_JUMP + 2 * SYNC_MS, `a twin ${twinAt - T_JUMP} ms after the jump`)
    const rec = (await admin.get(`${prefix}:{e}:s1002+`)) ?? '::'
    const [, switchText, cellsText] = rec.split(':')
    const twinCells = Number(cellsText)
    t.ok(twinCells >= 512, `the fleet's record: ${twinCells} cells per level`)
    const g = pending!
    t.same(
      g.early,
      [{ generation: 1, cellsPerLevel: twinCells, twin: true, decidesAtMs: Number(switchText), deciding: false }],
      "the twin beside the youngest (1002), deciding from the fleet's recorded switch time",
    )
    t.same(g.generationCellsPerLevel, [128, 128], 'the bases as they decide now')
    t.equal(g.earlyGrowths, 1)
    t.equal(g.resizes, resizesBefore + 1, 'the twin of another size is a resize')

    // the telemetry and the Prometheus text say the same, and the bytes hold the twin
    clock.set(twinAt)
    const stats = tel.stats()
    const m = stats.perPolicy.limit!
    t.same(m.early, s.generationShapes().early, 'stats().perPolicy.limit.early')
    t.equal(m.earlyGrowths, 1)
    t.equal(
      m.sizeBytes,
      METER_BYTES + L * (128 + 128 + twinCells) * SYNC_BYTES_PER_CELL,
      'bytes: both bases and the twin',
    )
    const fam = parsePrometheusText(await prometheusText(stats)) // throws on invalid text
    const labels = { policy: 'limit', generation: '1', twin: 'true' }
    t.equal(promSample(fam, 'grudge_generation_early_cells_per_level', labels), twinCells)
    t.equal(promSample(fam, 'grudge_generation_early_decides_at_seconds', labels), Number(switchText) / 1000)
    t.equal(promSample(fam, 'grudge_generation_early_deciding', labels), 0)
    t.equal(promSample(fam, 'grudge_early_growths', { policy: 'limit' }), 1)
    t.equal(promSample(fam, 'grudge_policy_memory_bytes', { policy: 'limit' }), m.sizeBytes)
    t.equal(promSample(fam, 'grudge_generation_cells_per_level', { policy: 'limit', generation: '1' }), 128)

    // 1002 decides from T0 + 20 s on its base, from the switch time on its twin
    for (; now <= Number(switchText); now += 50) {
      clock.set(now)
      s.tryConsume(`fresh-${fresh++}`, 1, 4)
      if ((now - T0) % SYNC_MS === 0) await s.sync()
    }
    const after = s.generationShapes()
    t.equal(after.generationCellsPerLevel[0], twinCells, 'the twin decides')
    t.same(
      after.early!.find((e) => e.generation === 0),
      { generation: 0, cellsPerLevel: twinCells, twin: true, decidesAtMs: Number(switchText), deciding: true },
      'marked as a deciding twin since the switch time',
    )
    // its base is dropped: the bytes are the live generations' and any twin still held
    let cells = 0
    for (const e of after.early!) if (!e.deciding) cells += e.cellsPerLevel
    for (const c of after.generationCellsPerLevel) cells += c
    t.equal(s.sizeBytes(), METER_BYTES + L * cells * SYNC_BYTES_PER_CELL, 'bytes after the switch')
    t.comment(JSON.stringify(after))
    await s.close()
  })
})
