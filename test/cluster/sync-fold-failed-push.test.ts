// A sync push of a base that fails after the store folded the base into its folding twin (the
// switch passed while the push was in flight): putBack must put its sums on the twin cells they
// repeat into (spec/cluster.md "Early growth", sync mode), so that once Redis folds the twin and
// the store pushes them there nothing is lost and every cell reads what a full pull makes it.
// The failure is injected by a client wrapper that holds the store's first sync-script call at a
// gate and then rejects it without sending it.
// (r1, s30: putBack onto the replaced base instead of its twin reads 6 < 10 added here.)
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { none } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisLike } from '../../src/cluster/client.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '6666666666666666ffffffffffffffff'

interface Held {
  gens: {
    id: number
    suffix: string
    awaitFoldFrom: number
    pending: Float64Array
    sketch: { cells: Float64Array; cellsPerLevel: number }
  }[]
}

t.test('sync: a failed base push across the local fold goes to the twin', async (t) => {
  const opts = await needRedis(t)
  t.test('two stores, one slot, 32 → 128', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('s30r1-fold-failed-push')
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
        growEarlyWhen: () => false,
        checkEveryMs: 1000,
      },
    }
    let hold = false
    let reached: () => void = () => {}
    let release: () => void = () => {}
    const reachedP = new Promise<void>((r) => (reached = r))
    const gate = new Promise<void>((r) => (release = r))
    const r = admin as unknown as Required<RedisLike>
    const wrapped: RedisLike = {
      evalsha: (sha, n, ...a) => admin.evalsha(sha, n, ...a),
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
      eval: (src, n, ...a) => admin.eval(src, n, ...a),
      evalBuffer: (src, n, ...a) => r.evalBuffer(src, n, ...a),
      mgetBuffer: (...keys) => admin.mgetBuffer(...keys),
      script: (sub, src) => admin.script(sub, src),
    }
    const make = (redis: RedisLike) =>
      redisStore({
        redis,
        seed: SEED,
        prefix,
        mode: 'sync',
        clock,
        ticker: new FakeTicker(),
        timeoutMs: TIMEOUT_MS,
        onStoreError: 'local',
      })(spec) as RedisSyncStore
    const a = make(admin)
    const b = make(wrapped)
    await a.ready()
    await b.ready()
    const SWITCH = T0 + 5000
    for (const id of [100, 101]) await admin.set(`${prefix}:{f}:s${id}+`, `${a.shape.fingerprint}:${SWITCH}:128:fold`)
    const total = new Map<string, number>()
    const add = (s: RedisSyncStore, key: string, v: number) => {
      s.add(key, v)
      total.set(key, (total.get(key) ?? 0) + v)
    }
    for (let i = 0; i < 40; i++) add(i % 2 === 0 ? a : b, `k${i % 17}`, 1 + (i % 3))
    await a.sync(true)
    await b.sync(true) // both adopt the early records
    clock.set(SWITCH - 100)
    for (let i = 0; i < 30; i++) add(b, `k${i % 23}`, 2)
    hold = true
    const inFlight = b.sync()
    await reachedP
    // the switch passes while B's push of the bases is in flight; B writes on, folding them
    clock.set(SWITCH + 10)
    add(b, 'k1', 5)
    add(a, 'k2', 5)
    release()
    await inFlight
    t.ok(
      (b as unknown as Held).gens.every((g) => g.suffix !== ''),
      'B holds the twins in the bases’ places',
    )
    clock.set(SWITCH + 2 * TIMEOUT_MS + 10)
    for (let round = 0; round < 3; round++) {
      await a.sync(true)
      await b.sync(true)
    }
    let mismatches = 0
    for (const s of [a, b]) {
      for (const g of (s as unknown as Held).gens) {
        t.equal(g.awaitFoldFrom, 0, `generation ${g.id}${g.suffix} synced`)
        const raw = await admin.getBuffer(`${prefix}:{f}:g${g.id}${g.suffix}`)
        for (let p = 0; p < L * g.sketch.cellsPerLevel; p++) {
          const want = (raw !== null && raw.length >= 16 * (p + 1) ? raw.readDoubleLE(16 * p) : 0) + g.pending[p]
          if (!Object.is(g.sketch.cells[2 * p], want) && mismatches++ < 5)
            t.fail(`gen ${g.id}${g.suffix} cell ${p}: ${g.sketch.cells[2 * p]} locally, a full pull ${want}`)
        }
      }
    }
    t.equal(mismatches, 0, 'every cell as a full pull')
    let below = 0
    for (const s of [a, b])
      for (const [key, sum] of total)
        if (s.read(key) < sum - 1e-9 && below++ < 5) t.fail(`${key}: reads ${s.read(key)} < ${sum} added`)
    t.equal(below, 0, 'every key reads at least what the fleet added to it, the failed push’s sums included')
    await a.close()
    await b.close()
  })
})
