// Rolling deploys (issue #15): two Fastify instances on one Redis prefix, the old one with
// `limit: { rate: 1, burst: 10 }` and the new one with `burst: 20`, used to answer 500 on
// every request of the new one (ERR_GRUDGE_CLUSTER_FINGERPRINT: the fingerprint covered rate,
// bounds and the period derived from them). The fingerprint now covers placement only, each
// instance applies its own figures to the shared cells, and a period derived from another
// burst joins the fleet's recorded one. A change of placement still fails, first at ready().
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { redisStore, type RedisStoreEvent } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { fleetShape } from '../../src/cluster/connection.js'
import { parseRedisOptions } from '../../src/cluster/options.js'
import { exactScript } from '../../src/cluster/scripts.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, ownRedis, uniquePrefix, REDIS_URL } from './redis-helper.js'

const SEED = '00112233445566778899aabbccddeeff'

async function app(
  store: ReturnType<typeof redisStore>,
  limit: { rate: number; burst: number },
  cellsPerLevel?: number,
): Promise<FastifyInstance> {
  const f = Fastify()
  await f.register(grudge, {
    ticker: new FakeTicker(),
    store,
    limit,
    key: (req) => String(req.headers['x-user']),
    storeTimeoutMs: 10_000,
    ...(cellsPerLevel !== undefined ? { cellsPerLevel } : {}),
  })
  f.get('/', async () => 'ok')
  await f.ready()
  return f
}

t.test('the policy figures are script arguments: one script for every burst', async (t) => {
  const o = parseRedisOptions({ redis: REDIS_URL, seed: SEED })
  const spec = (hi: number, rate: number, periodMs: number): StoreSpec => ({
    name: 'limit:default',
    sketch: { levels: 4, cellsPerLevel: 1024, decay: linear(rate), lo: 0, hi, aggregator: 'min' },
    generations: 2,
    periodMs,
  })
  const a = fleetShape(spec(100, 1, 100_000), o)
  const b = fleetShape(spec(200, 2, 200_000), o)
  t.equal(a.fingerprint, b.fingerprint, 'rate, maxDebt and period do not change the fingerprint')
  t.equal(exactScript(a.scriptConstants), exactScript(b.scriptConstants), 'nor the script (the same SHA)')
  t.not(a.hiArg, b.hiArg, 'hi travels as an argument')
  t.not(a.ratePerMsArg, b.ratePerMsArg, 'the decay rate too')
  const c = fleetShape({ ...spec(100, 1, 100_000), sketch: { ...spec(100, 1, 100_000).sketch, cellsPerLevel: 512 } }, o)
  t.not(a.fingerprint, c.fingerprint, 'cells per level place keys: they change it')
})

t.test('burst 10 and burst 20 side by side on one prefix', async (t) => {
  const opts = await needRedis(t)
  t.test('Fastify × 2, old and new config', opts, async (t) => {
    const prefix = uniquePrefix('h4-rolling')
    const admin = client()
    const events: RedisStoreEvent[] = []
    const oldStore = redisStore({ redis: REDIS_URL, seed: SEED, prefix, timeoutMs: 2000 })
    const newStore = redisStore({ redis: REDIS_URL, seed: SEED, prefix, timeoutMs: 2000 })
    newStore.onEvent((e) => events.push(e))
    const old = await app(oldStore, { rate: 1, burst: 10 })
    await oldStore.ready()
    const neu = await app(newStore, { rate: 1, burst: 20 })
    await newStore.ready()
    t.teardown(async () => {
      await old.close()
      await neu.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    t.match(
      events,
      [{ type: 'schedule', message: /recorded period of 100000 ms instead of this policy's 200000 ms/ }],
      'the new instance says once, at ready(), that it rotates on the fleet period',
    )
    const started = performance.now()
    const statuses = { old: [] as number[], neu: [] as number[] }
    // alternate: one key, both instances, 60 requests in well under a second
    for (let i = 0; i < 60; i++) {
      const which = i % 2 === 0 ? 'old' : 'neu'
      const r = await (which === 'old' ? old : neu).inject({ url: '/', headers: { 'x-user': 'alice' } })
      statuses[which].push(r.statusCode)
    }
    const elapsedS = (performance.now() - started) / 1000
    const all = [...statuses.old, ...statuses.neu]
    t.equal(all.filter((s) => s >= 500).length, 0, 'no 500 (nor 503) from either instance')
    t.ok(
      all.every((s) => s === 200 || s === 429),
      'every answer is a decision',
    )
    const admittedOld = statuses.old.filter((s) => s === 200).length
    const admittedNew = statuses.neu.filter((s) => s === 200).length
    // the shared debt drains at 1/s: within elapsedS at most ceil(elapsedS) more fit
    const slack = Math.ceil(elapsedS) + 1
    t.ok(
      admittedOld + admittedNew >= 20 && admittedOld + admittedNew <= 20 + slack,
      `the shared limit is the largest burst: ${admittedOld} + ${admittedNew} admitted, expected 20..${20 + slack}`,
    )
    t.ok(admittedOld <= 10 + slack, `the old instance stops at its own burst on the shared debt (${admittedOld} ≤ 10)`)
    t.equal(
      statuses.old.slice(-5).join(),
      '429,429,429,429,429',
      'the old instance refuses once the shared debt passed 10',
    )
    t.equal(statuses.neu.slice(-5).join(), '429,429,429,429,429', 'and the new one once it passed 20')
    const other = await old.inject({ url: '/', headers: { 'x-user': 'bob' } })
    t.equal(other.statusCode, 200, 'other keys are untouched')
  })

  t.test('a placement change still fails loudly, first at ready()', opts, async (t) => {
    const prefix = uniquePrefix('h4-rolling-shape')
    const admin = client()
    const a = redisStore({ redis: REDIS_URL, seed: SEED, prefix, timeoutMs: 2000 })
    const b = redisStore({ redis: REDIS_URL, seed: SEED, prefix, timeoutMs: 2000 })
    const appA = await app(a, { rate: 1, burst: 10 })
    await a.ready()
    const appB = await app(b, { rate: 1, burst: 10 }, 512)
    t.teardown(async () => {
      await appA.close()
      await appB.close()
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    await t.rejects(b.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, 'another cellsPerLevel refuses to start')
  })
})

t.test('slots = 1 and slots > 1 on one prefix refuse each other instead of splitting the counts', async (t) => {
  const opts = await needRedis(t)
  // S = 1 kept every cell under {split} and S > 1 every slot under {split#s}: two sets of keys,
  // two fingerprint records, and each instance counted alone. Slot 0 now lives under {split}
  // for every S, so both check one record, and S is in the fingerprint.
  const spec = (ratePerSecond: number): StoreSpec => ({
    name: 'split',
    sketch: { levels: 2, cellsPerLevel: 64, decay: linear(ratePerSecond), lo: 0, hi: 10 },
    generations: 2,
    periodMs: 60_000,
  })
  for (const mode of ['exact', 'sync'] as const)
    for (const [first, second] of [
      [1, 4],
      [4, 1],
    ])
      t.test(`${mode} mode: slots ${first} starts first, slots ${second} joins`, opts, async (t) => {
        const admin = client()
        const prefix = uniquePrefix(`split-${mode}-${first}`)
        const store = (slots: number, rate: number) =>
          redisStore({ redis: admin, seed: SEED, prefix, mode, slots, timeoutMs: 2000, ticker: new FakeTicker() })(
            spec(rate),
          )
        // another rate is a rolling deploy's change (never refused); only the slot count differs in placement
        const a = store(first, 1)
        const b = store(second, 2)
        t.teardown(async () => {
          await a.close()
          await Promise.resolve(b.close()).catch(() => {})
          await dropPrefix(admin, prefix)
          await admin.quit()
        })
        await a.ready()
        await t.rejects(b.ready(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, `slots ${second} refuses to start`)
        t.equal((await a.tryConsume('alice', 1, 5)).admitted, true, 'the fleet that started first decides')
        if (second === 1) {
          // every key of S = 1 is in slot 0: each request of the joiner is refused too
          const b1 = async () => await b.tryConsume('alice', 1, 5)
          await t.rejects(b1(), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' }, 'and so is its request')
        }
      })
})

t.test('exact mode: a server clock stepping back 10 s across a boundary grants no amnesty', async (t) => {
  const opts = await needRedis(t)
  t.test('FakeClock-driven store', opts, async (t) => {
    const admin = client()
    const prefix = uniquePrefix('h4-stepback')
    t.teardown(async () => {
      await dropPrefix(admin, prefix)
      await admin.quit()
    })
    const periodMs = 60_000
    // 5 s past a boundary: the live generations are k, k + 1
    const clock = new FakeClock(100 * periodMs + 5_000)
    const store = redisStore({ redis: admin, seed: SEED, slots: 1, prefix, clock, timeoutMs: 2000 })({
      name: 'limit:default',
      sketch: { levels: 3, cellsPerLevel: 64, decay: linear(1), lo: 0, hi: 50, aggregator: 'min' },
      generations: 2,
      periodMs,
    })
    t.teardown(() => store.close())
    const rows: Array<{ stepMs: number; want: boolean[] }> = [
      { stepMs: 0, want: [true, true, true, true, true, false] }, // a burst of 5, then blocked
      { stepMs: -10_000, want: [false, false, false, false, false, false] }, // back across the boundary: still blocked
      { stepMs: 10_000, want: [false] }, // back to where it was: nothing drained (cells never decay backwards)
      { stepMs: 1_000, want: [true, false] }, // 1 s of drain at 1/s: one more
    ]
    for (const [i, row] of rows.entries()) {
      clock.advance(row.stepMs)
      const got: boolean[] = []
      for (const _ of row.want) got.push((await store.tryConsume('alice', 1, 5)).admitted)
      t.same(got, row.want, `row ${i}: step ${row.stepMs} ms → ${row.want.map((a) => (a ? 200 : 429)).join(',')}`)
    }
    const record = await admin.get(`${prefix}:{limit:default}:fp`)
    t.match(
      record,
      /^[0-9a-f]{16}:60000:101$/,
      'Redis records the fingerprint, the period and the newest generation (k + 1)',
    )
  })
})

t.test("onStoreError 'local': ready() starts without Redis; down and up are events for the logger", async (t) => {
  t.test('private redis-server started late', async (t) => {
    const server = await ownRedis(t, 'start it after the store', { start: false })
    if (server === undefined) return
    const events: RedisStoreEvent[] = []
    const factory = redisStore({
      redis: server.url,
      seed: SEED,
      onStoreError: 'local',
      timeoutMs: 100,
      retryMs: 20,
      prefix: 'h4-events',
    })
    factory.onEvent((e) => events.push(e))
    const store = factory({
      name: 'limit:default',
      sketch: { levels: 2, cellsPerLevel: 16, decay: linear(1), lo: 0, hi: 50 },
      generations: 2,
      periodMs: 60_000,
    })
    t.teardown(() => store.close())
    await factory.ready()
    t.equal(events.length, 1, 'one event, not one per request')
    t.match(events[0], {
      type: 'down',
      policy: 'limit:default',
      onStoreError: 'local',
      message: new RegExp(
        `redis at 127\\.0\\.0\\.1:${server.port}: .*connection refused \\(ECONNREFUSED\\).*in-process fallback`,
      ),
    })
    for (let i = 0; i < 3; i++) t.notOk('failure' in (await store.tryConsume('k', 1, 5)), 'the fallback decides')
    t.equal(events.length, 1, 'still one event through the outage')
    await server.start()
    const until = performance.now() + 5000
    while (!events.some((e) => e.type === 'up') && performance.now() < until) {
      await store.tryConsume('k', 1, 5)
      await new Promise((r) => setTimeout(r, 50))
    }
    t.match(
      events[1],
      { type: 'up', policy: 'limit:default', message: /answers again after \d+ ms/ },
      'and one when it is back',
    )
    t.notOk(store.failing, 'deciding on the shared cells again')
  })
})
