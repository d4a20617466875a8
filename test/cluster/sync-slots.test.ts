// Sync mode over S > 1 hash slots (spec/cluster.md, "Slots"): slot s holds the cells of index
// [s·ceil(M / S), (s + 1)·ceil(M / S)) of every level, and a sync runs one script per slot.
// On a single Redis (the shared one) and on a real 3-master Redis Cluster (`.ci/run` starts
// one and names it in GRUDGE_REDIS_CLUSTER; otherwise the helper starts its own on free ports).
import t from 'tap'
import type { Redis } from 'ioredis'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear, none } from '../../src/sketch/decay.js'
import { Sketch } from '../../src/sketch/sketch.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import { generationHasher } from '../../src/cluster/fleet-hash.js'
import { seedBytes } from '../../src/hash/hasher.js'
import type { StoreSpec } from '../../src/limit/store.js'
import type { RedisLike } from '../../src/cluster/client.js'
import { client, clusterClient, clusterFor, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'

const SEED = '2222222222222222bbbbbbbbbbbbbbbb'

/** A Sketch whose cells the test reads (score of cell p at 2p). */
class OpenSketch extends Sketch {
  get raw(): Float64Array {
    return this.cells
  }
}

t.test('sync mode over 5 slots on one Redis', async (t) => {
  const opts = await needRedis(t)
  t.test('instances see each other per slot; the slot strings hold the sketch split by index', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('sync-slots')
    const clock = new FakeClock(9_000_000)
    const L = 3
    const M = 64
    const S = 5 // 64 cells in 5 slots of 13: the last slot holds 12 of them, padded
    const spec: StoreSpec = {
      name: 's',
      sketch: { levels: L, cellsPerLevel: M, decay: none() },
      generations: 2,
      periodMs: 60_000,
    }
    const mk = (slots: number) =>
      redisStore({
        redis: admin,
        seed: SEED,
        prefix,
        mode: 'sync',
        slots,
        clock,
        ticker: new FakeTicker(),
        timeoutMs: 2000,
      })(spec) as RedisSyncStore
    const a = mk(S)
    const b = mk(S)
    await a.ready()
    await b.ready()
    const keys = Array.from({ length: 40 }, (_, i) => `user-${i}`)
    // a reference Sketch placed as the oldest live generation's, the one reads answer from
    // (the placement does not depend on S)
    const G = Math.floor(clock.now() / 60_000)
    const ref = new OpenSketch({
      ...spec.sketch,
      hasher: generationHasher(a.shape.base, seedBytes(SEED, 'seed'), G),
      clock,
    })
    for (const [i, k] of keys.entries()) {
      a.add(k, i + 1)
      ref.update(k, i + 1)
    }
    await a.sync()
    await b.sync()
    t.same(
      keys.map((k) => b.read(k)),
      keys.map((k) => a.read(k)),
      "B reads every key as A does after A's push and B's pull (40 keys over all 5 slots)",
    )
    t.same(
      keys.map((k) => b.read(k)),
      keys.map((k) => ref.estimate(k)),
      'and as one in-process Sketch that took every add (placement independent of S)',
    )
    // Redis: one string per slot and generation, L × ceil(M / S) cells each, the cells of
    // index [s·13, s·13 + 13) of every level (spec/cluster.md, "Slots")
    const Ms = Math.ceil(M / S)
    const cells = ref.raw
    let checked = 0
    for (let s = 0; s < S; s++) {
      // slot 0 under the policy's own hash tag, the others under {name#s} (spec/cluster.md, "Slots")
      const raw = await admin.getBuffer(`${prefix}:{${s === 0 ? 's' : `s#${s}`}}:g${G}`)
      t.equal(raw?.length, L * Ms * 16, `slot ${s}: one string of L × ceil(M / S) × 16 bytes`)
      for (let i = 0; i < L; i++) {
        for (let j = s * Ms; j < Math.min(M, (s + 1) * Ms); j++) {
          const q = i * Ms + j - s * Ms
          if (raw!.readDoubleLE(q * 16) !== cells[2 * (i * M + j)]) t.fail(`slot ${s} level ${i} index ${j}`)
          checked++
        }
      }
    }
    t.equal(checked, L * M, 'every cell of the sketch is in exactly one slot, as the in-process Sketch holds it')
    // both push, both pull: the sum of both
    b.add('user-3', 100)
    a.add('user-3', 1000)
    await b.sync()
    await a.sync()
    await b.sync()
    t.equal(a.read('user-3'), b.read('user-3'), 'both agree')
    t.equal(a.read('user-3'), ref.estimate('user-3') + 1100, 'A’s and B’s adds both merged')
    // another S shares slot keys {s}, {s#1}: refused by the fingerprint (S is in it)
    const other = mk(2)
    await t.rejects(other.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, 'another slot count is refused')
    for (const s of [a, b, other]) await s.close()
    await dropPrefix(admin, prefix)
  })
})

t.test('a failed sync over 5 slots puts every sum back into its own cell', async (t) => {
  const opts = await needRedis(t)
  t.test('the next push carries them: the slot strings hold one in-process Sketch', opts, async (t) => {
    const admin = client()
    t.teardown(() => admin.quit())
    const prefix = uniquePrefix('sync-slots-back')
    const clock = new FakeClock(9_000_000)
    const L = 3
    const M = 64
    const S = 5 // slots of 13 index positions: a record's position in its slot string differs from its cell's
    const spec: StoreSpec = {
      name: 'b',
      sketch: { levels: L, cellsPerLevel: M, decay: none() },
      generations: 2,
      periodMs: 60_000,
    }
    // the script refused before it runs (nothing merged) while `fail`: the push is put back
    const r = admin as unknown as Required<RedisLike>
    let fail = false
    const flaky: RedisLike = {
      evalsha: r.evalsha.bind(r),
      evalshaBuffer: (sha: string, numKeys: number, ...args: (string | number | Buffer)[]) =>
        fail ? Promise.reject(new Error('connection lost')) : r.evalshaBuffer(sha, numKeys, ...args),
      eval: r.eval.bind(r),
      evalBuffer: r.evalBuffer.bind(r),
      script: r.script.bind(r),
      mgetBuffer: r.mgetBuffer.bind(r),
    }
    const errors: unknown[] = []
    const a = redisStore({
      redis: flaky,
      seed: SEED,
      prefix,
      mode: 'sync',
      slots: S,
      clock,
      ticker: new FakeTicker(),
      timeoutMs: 2000,
      onError: (e) => errors.push(e),
    })(spec) as RedisSyncStore
    await a.ready()
    const G = Math.floor(clock.now() / 60_000)
    const ref = new OpenSketch({
      ...spec.sketch,
      hasher: generationHasher(a.shape.base, seedBytes(SEED, 'seed'), G),
      clock,
    })
    const keys = Array.from({ length: 40 }, (_, i) => `user-${i}`)
    for (const [i, k] of keys.entries()) {
      a.add(k, i + 1)
      ref.update(k, i + 1)
    }
    fail = true
    await a.sync()
    t.match(errors, [{ message: 'connection lost' }], 'the failed sync reaches onError')
    // more adds on the cells put back (the sums add up), then a sync that succeeds
    a.add('user-7', 1000)
    ref.update('user-7', 1000)
    fail = false
    await a.sync()
    const Ms = Math.ceil(M / S)
    const cells = ref.raw
    let wrong = 0
    for (let s = 0; s < S; s++) {
      const raw = await admin.getBuffer(`${prefix}:{${s === 0 ? 'b' : `b#${s}`}}:g${G}`)
      for (let i = 0; i < L; i++) {
        for (let j = s * Ms; j < Math.min(M, (s + 1) * Ms); j++) {
          const q = i * Ms + j - s * Ms
          const got = raw === null || raw.length < (q + 1) * 16 ? 0 : raw.readDoubleLE(q * 16)
          if (got !== cells[2 * (i * M + j)]) wrong++
        }
      }
    }
    t.equal(wrong, 0, `every one of the ${L * M} cells in Redis as the in-process Sketch holds it`)
    t.same(
      keys.map((k) => a.read(k)),
      keys.map((k) => ref.estimate(k)),
      'and the store reads every key as the Sketch after its pull',
    )
    await a.close()
    await dropPrefix(admin, prefix)
  })
})

t.test(
  'a self-sized sync policy over 4 slots: one recorded shape per generation, every slot string at its size',
  async (t) => {
    const opts = await needRedis(t)
    t.test('two instances, a generation sized 64 after 1024', opts, async (t) => {
      const admin = client()
      t.teardown(() => admin.quit())
      const prefix = uniquePrefix('sync-slots-sized')
      const PERIOD = 60_000
      const clock = new FakeClock(PERIOD * 1000 + 1)
      const L = 2
      const S = 4
      const spec: StoreSpec = {
        name: 'z',
        sketch: { levels: L, cellsPerLevel: 1024, decay: linear(2), lo: 0, hi: 1, aggregator: 'min' },
        generations: 2,
        periodMs: PERIOD,
        sizing: { sizeNextGeneration: () => 64, maxCellsPerLevel: 1024 },
      }
      const mk = () =>
        redisStore({
          redis: admin,
          seed: SEED,
          prefix,
          mode: 'sync',
          slots: S,
          clock,
          ticker: new FakeTicker(),
          timeoutMs: 2000,
        })(spec) as RedisSyncStore
      const a = mk()
      const b = mk()
      await a.ready()
      await b.ready()
      // past half the youngest's period A proposes 64 for the next generation; then it opens
      clock.advance(PERIOD * 0.6)
      await a.sync()
      await b.sync()
      clock.advance(PERIOD * 0.5)
      for (let i = 0; i < 100; i++) a.add(`k${i}`, 1)
      await a.sync()
      await b.sync()
      const shapesA = a.liveShapes()
      t.same(shapesA, b.liveShapes(), 'both hold the same live generations and shapes')
      t.same(
        shapesA.map((g) => g.cellsPerLevel),
        [1024, 64],
        'the older generation at its recorded 1024, the youngest at the 64 proposed',
      )
      for (const { id, cellsPerLevel } of shapesA) {
        t.equal(
          await admin.get(`${prefix}:{z}:s${id}`).then((v) => v?.split(':')[1]),
          String(cellsPerLevel),
          `g${id}: one record, in slot 0`,
        )
        const lengths = await Promise.all(
          Array.from({ length: S }, (_, s) => admin.strlen(`${prefix}:{${s === 0 ? 'z' : `z#${s}`}}:g${id}`)),
        )
        t.same(
          lengths,
          Array(S).fill(L * Math.ceil(cellsPerLevel / S) * 16),
          `g${id}: each slot string L × ceil(M_k / S) × 16 bytes (${lengths.join(', ')})`,
        )
      }
      t.same(
        Array.from({ length: 100 }, (_, i) => b.read(`k${i}`)),
        Array.from({ length: 100 }, (_, i) => a.read(`k${i}`)),
        'B reads what A added',
      )
      await a.close()
      await b.close()
      await dropPrefix(admin, prefix)
    })
  },
)

t.test('sync mode over 6 slots on a 3-master Redis Cluster', async (t) => {
  const cluster = await clusterFor(t)
  if (cluster === undefined) return
  const prefix = `grudge-test:h4-sync-slots:${process.pid}`
  const R = 0.01 // per second: the test must not see the debt drain between the syncs
  const B = 20
  const spec: StoreSpec = {
    name: 'limit:sync',
    sketch: { levels: 3, cellsPerLevel: 1024, decay: linear(R), lo: 0, hi: 30 },
    generations: 2,
    periodMs: 3_600_000,
  }
  const own = clusterClient(t, cluster)
  const opts = { seed: SEED, prefix, mode: 'sync' as const, slots: 6, ticker: new FakeTicker(), timeoutMs: 2000 }
  const a = redisStore({ ...opts, redis: cluster.urls })(spec) as RedisSyncStore
  const b = redisStore({ ...opts, redis: own })(spec) as RedisSyncStore
  await a.ready()
  await b.ready()
  t.pass('both start: ready() synced all 6 slots')
  // A takes a key's whole burst; after A's push and B's pull, B denies it
  let admitted = 0
  for (let i = 0; i < B; i++) if (a.tryConsume('alice', 1, B).admitted) admitted++
  t.equal(admitted, B, "A admits alice's burst")
  t.notOk(b.tryConsume('bob', B + 1, B).admitted, 'a cost over the burst is denied anywhere')
  await a.sync()
  await b.sync()
  t.notOk(b.tryConsume('alice', 1, B).admitted, 'B, synced, denies alice: the fleet holds her burst')
  t.ok(b.tryConsume('carol', 1, B).admitted, 'another key is admitted')
  // 200 more keys: every slot gets deltas, so each holds its strings of both live generations
  for (let i = 0; i < 200; i++) a.add(`user-${i}`, 1)
  await a.sync()
  // the policy's slot strings are spread over the masters
  const masters = own.nodes('master')
  const counts = await Promise.all(
    masters.map(async (m: Redis) => {
      let n = 0
      let cursor = '0'
      do {
        const [next, keys] = await m.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
        cursor = next
        n += keys.filter((k) => /:g\d+$/.test(k)).length
      } while (cursor !== '0')
      return n
    }),
  )
  t.equal(
    counts.reduce((x, y) => x + y, 0),
    6 * 2,
    `6 slots × 2 live generation strings, on ${counts.filter((n) => n > 0).length} masters (${counts.join(', ')})`,
  )
  t.ok(counts.filter((n) => n > 0).length >= 2, 'on more than one master')
  await a.close()
  await b.close()
  for (const m of masters) {
    let cursor = '0'
    do {
      const [next, keys] = await m.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      cursor = next
      for (const k of keys) await m.unlink(k)
    } while (cursor !== '0')
  }
})
