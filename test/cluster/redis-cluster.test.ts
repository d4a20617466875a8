// Redis Cluster (issue #15): a real 3-master cluster (`.ci/run` starts one and names it in
// GRUDGE_REDIS_CLUSTER; otherwise the helper starts its own on free ports). Exact mode spreads
// a policy over S = 16 hash slots, so the limit holds across two stores with their own
// Cluster clients, and one hot policy's keys land on every master.
import t from 'tap'
import { redisStore } from '../../src/index.js'
import { clusterClient, clusterFor } from './redis-helper.js'

const SEED = '00112233445566778899aabbccddeeff'

t.test('exact mode on a 3-master Redis Cluster', async (t) => {
  const cluster = await clusterFor(t)
  if (cluster === undefined) return
  const prefix = `grudge-test:h4-cluster:${process.pid}`
  const spec = {
    name: 'limit:default',
    sketch: { levels: 3, cellsPerLevel: 1024, decay: { kind: 'linear' as const, ratePerSecond: 0.001 }, lo: 0, hi: 50 },
    generations: 2,
    periodMs: 60_000_000,
  }
  // one store from a list of node URLs (grudge creates the Cluster), one from a Cluster we pass
  const own = clusterClient(t, cluster)
  const a = redisStore({ redis: cluster.urls, seed: SEED, prefix, timeoutMs: 2000 })(spec)
  const b = redisStore({ redis: own, seed: SEED, prefix, timeoutMs: 2000 })(spec)
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  await a.ready()
  await b.ready()
  t.pass('both stores start: ready() checked all 16 slots, across the masters')

  // the limit holds across the two stores: a burst of 5 per key, alternating
  for (const key of ['alice', 'bob', 'carol']) {
    const got: boolean[] = []
    for (let i = 0; i < 8; i++) got.push((await (i % 2 === 0 ? a : b).tryConsume(key, 1, 5)).admitted)
    t.same(got, [true, true, true, true, true, false, false, false], `${key}: 5 admitted of 8 across both stores`)
  }

  // 200 keys of one policy: their generation keys land on every master
  for (let i = 0; i < 200; i++) await a.tryConsume(`user-${i}`, 1, 5)
  const masters = own.nodes('master')
  t.equal(masters.length, 3, 'three masters')
  const counts = await Promise.all(
    masters.map(async (m) => {
      let n = 0
      let cursor = '0'
      do {
        const [next, keys] = await m.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
        cursor = next
        n += keys.length
      } while (cursor !== '0')
      return n
    }),
  )
  t.ok(
    counts.every((n) => n > 0),
    `the policy's keys are on every master (${counts.join(', ')} keys)`,
  )
  for (const m of masters) {
    let cursor = '0'
    do {
      const [next, keys] = await m.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      cursor = next
      for (const k of keys) await m.unlink(k)
    } while (cursor !== '0')
  }
})
