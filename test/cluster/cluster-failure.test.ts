// Redis Cluster failures (issue #15), on a 3-master cluster of this test's own (its nodes are
// the only processes it kills): a master killed bounds every request by timeoutMs, sends only
// the keys of the slots it served to onStoreError, and the store resumes without a restart when
// the node comes back; a cluster that lacks a hash slot is onStoreError for that slot's keys
// only, with one log line and no crash.
import t from 'tap'
import type { Cluster } from 'ioredis'
import { redisStore, type RedisStoreEvent } from '../../src/index.js'
import type { ScoreStore } from '../../src/limit/store.js'
import { slotKeyPrefix } from '../../src/cluster/connection.js'
import { clusterClient, clusterFor, uniquePrefix } from './redis-helper.js'

const SEED = '00112233445566778899aabbccddeeff'
const TIMEOUT_MS = 300
/** Event-loop and timer slack on a loaded 2-core machine, on top of timeoutMs. */
const SLACK_MS = 150
const spec = {
  name: 'limit:default',
  sketch: { levels: 3, cellsPerLevel: 1024, decay: { kind: 'linear' as const, ratePerSecond: 0.001 }, lo: 0, hi: 50 },
  generations: 2,
  periodMs: 60_000_000,
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The store's slot of a request key (the store's own choice, read through its private method). */
const slotOf = (store: ScoreStore, key: string) => (store as unknown as { slotOf(k: string): number }).slotOf(key)

/** Port of the master serving each Redis Cluster hash slot, from CLUSTER SLOTS. */
async function owners(admin: Cluster): Promise<(slot: number) => number | undefined> {
  const ranges = (await admin.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>
  return (slot) => ranges.find(([a, b]) => slot >= a && slot <= b)?.[2][1]
}

/** The Redis Cluster hash slot of each of the policy's 16 grudge slots (their keys' hash tags), by CLUSTER KEYSLOT. */
async function hashSlots(admin: Cluster): Promise<number[]> {
  const out: number[] = []
  for (let s = 0; s < 16; s++) out.push(await admin.cluster('KEYSLOT', slotKeyPrefix('p', spec.name, s)))
  return out
}

t.test('Redis Cluster failures', async (t) => {
  const cluster = await clusterFor(t, { own: true })
  if (cluster === undefined) return
  const admin = clusterClient(t, cluster)
  const keys = Array.from({ length: 120 }, (_, i) => `user-${i}`)
  const slotTable = await hashSlots(admin)
  const hashSlotOf = (s: number) => slotTable[s]

  t.test('a master killed: timeoutMs, onStoreError for its slots only, back without a restart', async (t) => {
    const events: RedisStoreEvent[] = []
    const store = redisStore({
      redis: cluster.urls,
      seed: SEED,
      prefix: uniquePrefix('h6-cluster-kill'),
      timeoutMs: TIMEOUT_MS,
      retryMs: 100,
      onStoreError: 'closed',
      onEvent: (e) => events.push(e),
    })(spec)
    t.teardown(() => store.close())
    await store.ready()
    const owner = await owners(admin)
    const victim = cluster.ports[0]
    const onVictim = (key: string) => owner(hashSlotOf(slotOf(store, key))) === victim
    t.ok(keys.some(onVictim) && !keys.every(onVictim), 'some keys are served by the victim, some by the others')
    for (const key of keys) t.equal((await store.tryConsume(key, 1, 5)).failure, undefined)

    await cluster.kill(victim)
    let worstMs = 0
    const wrong: string[] = []
    // twice over: the first pass meets the dead master, the second its slots' retryMs window
    for (let pass = 0; pass < 2; pass++) {
      for (const key of keys) {
        const t0 = performance.now()
        const r = await store.tryConsume(key, 1, 5)
        worstMs = Math.max(worstMs, performance.now() - t0)
        const expected = onVictim(key) ? 'closed' : undefined
        if (r.failure !== expected) wrong.push(`${key}: ${String(r.failure)}`)
      }
      await sleep(150)
    }
    t.ok(worstMs <= TIMEOUT_MS + SLACK_MS, `no request waited longer than timeoutMs (worst ${worstMs.toFixed(0)} ms)`)
    t.same(wrong, [], "onStoreError ('closed') for the keys of the killed master's slots only")
    const downs = events.filter((e) => e.type === 'down')
    t.ok(downs.length >= 1, `a 'down' line per failing slot (${downs.length})`)
    t.ok(
      downs.every((e) => /slot \d+ of 16 \(Redis Cluster hash tag \{limit:default(#\d+)?\}/.test(e.message)),
      `the line names the slot and its hash tag: ${downs[0]?.message}`,
    )
    t.ok(
      downs.every((e) => !e.message.includes(SEED)),
      'and never the seed',
    )

    await cluster.restart(victim)
    const deadline = performance.now() + 20_000
    let back = false
    while (!back && performance.now() < deadline) {
      await sleep(200)
      const rs = []
      for (const key of keys.filter(onVictim)) rs.push(await store.tryConsume(key, 0, 5))
      back = rs.every((r) => r.failure === undefined)
    }
    t.ok(back, 'the restarted master serves its slots again: the same store decides on Redis, no restart')
    t.ok(
      events.some((e) => e.type === 'up'),
      "an 'up' line once every slot answers",
    )
  })

  t.test('a hash slot nobody serves: onStoreError for its keys, a log line, no crash', async (t) => {
    const events: RedisStoreEvent[] = []
    const store = redisStore({
      redis: cluster.urls,
      seed: SEED,
      prefix: uniquePrefix('h6-cluster-noslot'),
      timeoutMs: TIMEOUT_MS,
      retryMs: 100,
      onStoreError: 'closed',
      onEvent: (e) => events.push(e),
    })(spec)
    t.teardown(() => store.close())
    await store.ready()
    const lost = 5 // grudge slot whose hash slot is taken away
    const hashSlot = hashSlotOf(lost)
    const owner = (await owners(admin))(hashSlot)!
    // unassign it on every node, so no node claims it and none learns it back by gossip
    for (const n of admin.nodes('master')) await n.cluster('DELSLOTS', hashSlot).catch(() => {})
    t.teardown(async () => {
      const n = admin.nodes('master').find((m) => m.options.port === owner)
      await n?.cluster('ADDSLOTS', hashSlot).catch(() => {})
    })
    await sleep(300)
    let worstMs = 0
    const wrong: string[] = []
    for (const key of keys) {
      const t0 = performance.now()
      const r = await store.tryConsume(key, 1, 5)
      worstMs = Math.max(worstMs, performance.now() - t0)
      const expected = slotOf(store, key) === lost ? 'closed' : undefined
      if (r.failure !== expected) wrong.push(`${key}: ${String(r.failure)}`)
    }
    t.ok(
      keys.some((k) => slotOf(store, k) === lost),
      'some keys fall in the unserved slot',
    )
    t.same(wrong, [], 'onStoreError for the keys of the unserved slot only')
    t.ok(worstMs <= TIMEOUT_MS + SLACK_MS, `within timeoutMs (worst ${worstMs.toFixed(0)} ms)`)
    const downs = events.filter((e) => e.type === 'down')
    t.equal(downs.length, 1, `one line: ${downs[0]?.message}`)
    t.match(downs[0]?.message ?? '', new RegExp(`slot ${lost} of 16`), 'naming the slot')
  })

  t.test('resharding: MOVED/ASK followed, no request waits longer than timeoutMs, cells moved intact', async (t) => {
    const store = redisStore({
      redis: cluster.urls,
      seed: SEED,
      prefix: uniquePrefix('h6-cluster-reshard'),
      timeoutMs: TIMEOUT_MS,
      retryMs: 50,
      onStoreError: 'closed',
    })(spec)
    t.teardown(() => store.close())
    await store.ready()
    const moving = 9 // grudge slot whose hash slot moves to another master
    const hashSlot = hashSlotOf(moving)
    const movingKeys = keys.filter((k) => slotOf(store, k) === moving)
    t.ok(movingKeys.length > 0, `${movingKeys.length} keys in the moving slot`)
    // the moving keys at their limit before the move: 5 of 5
    for (const k of movingKeys) for (let i = 0; i < 5; i++) await store.tryConsume(k, 1, 5)
    const masters = admin.nodes('master')
    const srcPort = (await owners(admin))(hashSlot)!
    const src = masters.find((m) => m.options.port === srcPort)!
    const dst = masters.find((m) => m.options.port !== srcPort)!
    const srcId = await src.cluster('MYID')
    const dstId = await dst.cluster('MYID')

    // requests flow on every key while the slot migrates
    let worstMs = 0
    let flowing = true
    let requests = 0
    let failed = 0
    const lane = async () => {
      while (flowing) {
        for (const k of keys) {
          const t0 = performance.now()
          if ((await store.tryConsume(k, 0, 5)).failure !== undefined) failed++
          worstMs = Math.max(worstMs, performance.now() - t0)
          requests++
        }
      }
    }
    const lanes = [lane(), lane()]
    await dst.cluster('SETSLOT', hashSlot, 'IMPORTING', srcId)
    await src.cluster('SETSLOT', hashSlot, 'MIGRATING', dstId)
    await sleep(100)
    // key by key, with requests in between: the window where ASK (and TRYAGAIN for the script's keys) happens
    for (;;) {
      const batch = await src.cluster('GETKEYSINSLOT', hashSlot, 1)
      if (batch.length === 0) break
      await src.migrate('127.0.0.1', dst.options.port!, '', 0, 5000, 'KEYS', ...batch)
      await sleep(50)
    }
    for (const m of masters) await m.cluster('SETSLOT', hashSlot, 'NODE', dstId)
    await sleep(300)
    flowing = false
    await Promise.all(lanes)
    t.ok(
      requests > keys.length,
      `${requests} requests during the move (${failed} answered by onStoreError: a multi-key script meets TRYAGAIN while its keys are split between the two masters)`,
    )
    t.ok(worstMs <= TIMEOUT_MS + SLACK_MS, `no request waited longer than timeoutMs (worst ${worstMs.toFixed(0)} ms)`)
    t.equal((await owners(admin))(hashSlot), dst.options.port, 'the slot now lives on another master')
    const after = []
    for (const k of movingKeys) after.push(await store.tryConsume(k, 1, 5))
    t.same(
      after.map((r) => [r.admitted, r.failure]),
      movingKeys.map(() => [false, undefined]),
      'the moved keys decide on Redis again, still at their limit (the cells moved with the slot)',
    )
  })
})
