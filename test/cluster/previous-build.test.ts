// An old build next to a new one in exact mode (issue #15 item 1, rolling deploys): while a
// deploy rolls, instances of the previous build run the previous exact script (another text and
// SHA, another ARGV layout: one decision per call, no floor, the block id) on the same prefix as
// instances of this build. The CHANGELOG promises they share the fleet because cells, records and
// fingerprint did not change (0.1.0 "Changed": the span/record-check script; "Added": batches).
// The previous build is test/fixtures/previous-exact-build.ts (git 317afd1's script, frozen).
// Fixed shapes only: exact-mode early growth changed the self-sized fingerprint, so for
// self-sized policies the test is that the two builds' fingerprints differ.
//
// Both decide alternately on the same keys under one driven clock; the reference is an exact
// token bucket per key, computed here (debt drains at `rate`, a request admitted iff debt + 1 ≤
// burst), and what one current instance alone admits for the same requests on its own prefix.
// The figures are chosen binary-exact: rate 1000/1024 per s is 2^-10 per ms, steps of 128 ms
// drain 1/8, so no decision sits on a rounding edge.
import t, { type Test } from 'tap'
import { once } from 'node:events'
import { Redis } from 'ioredis'
import Fastify, { type FastifyInstance } from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { redisStore, type RedisScoreStore } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { fleetShape } from '../../src/cluster/connection.js'
import { FLEET_FINGERPRINT_VERSION } from '../../src/cluster/fleet-hash.js'
import { SipHasher } from '../../src/hash/hasher.js'
import { parseRedisOptions } from '../../src/cluster/options.js'
import { exactScript, scriptSha } from '../../src/cluster/scripts.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { previousBuild, previousBuildStore, previousExactScript } from '../fixtures/previous-exact-build.js'
import { client as adminClient, dropPrefix, needRedis, uniquePrefix, REDIS_URL } from './redis-helper.js'

const SEED = '7a6b5c4d3e2f10011f2e3d4c5b6a7988'
const RATE = 1000 / 1024 // per second: 2^-10 per ms
const BURST = 4
const PERIOD_MS = 4096 // the amnesty guard: (N − 1)·P ≥ hi / rate · 1000 = 4096
const STEP_MS = 128
const STEPS = 160 // 20.48 s: five periods, so both builds open generations and rewrite records
const KEYS = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank']
const spec = ({ sized = false, levels = 4 } = {}): StoreSpec => ({
  name: 'limit:rolling',
  sketch: { levels, cellsPerLevel: 1024, decay: linear(RATE), lo: 0, hi: BURST },
  generations: 2,
  periodMs: PERIOD_MS,
  // self-sized (the adapters' default): generations of 256 cells per level after the first
  ...(sized
    ? { sizing: { sizeNextGeneration: () => 256, minCellsPerLevel: 64, maxCellsPerLevel: 1024, checkEveryMs: 500 } }
    : {}),
})

/** A test that needs Redis on 6379: skipped outside CI when it is missing (redis-helper). */
function redisTest(name: string, fn: (t: Test) => Promise<void>): void {
  t.test(name, async (t) => {
    const opts = await needRedis(t)
    await t.test(name, opts, fn)
  })
}

/** A connected client; `shas` collects the SHA of every EVALSHA it sends. */
async function connected(shas?: Set<string>): Promise<Redis> {
  const r = new Redis(REDIS_URL, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
  r.on('error', () => {})
  await once(r, 'ready')
  if (shas !== undefined) {
    const evalsha = r.evalsha.bind(r) as (...a: unknown[]) => Promise<unknown>
    ;(r as unknown as { evalsha: unknown }).evalsha = (sha: string, ...rest: unknown[]) => {
      shas.add(sha)
      return evalsha(sha, ...rest)
    }
  }
  return r
}

/** The exact bucket's admissions per key for the test's requests (`perStep` per key and step), cumulative after each step. */
function bucketSeries(perStep: number): number[] {
  let debt = 0
  let admitted = 0
  const out: number[] = []
  for (let step = 0; step < STEPS; step++) {
    if (step > 0) debt = Math.max(0, debt - (RATE / 1000) * STEP_MS)
    for (let r = 0; r < perStep; r++) {
      if (debt + 1 <= BURST) {
        debt += 1
        admitted++
      }
    }
    out.push(admitted)
  }
  return out
}

t.test('the two scripts differ in text, SHA and arguments, not in placement', async (t) => {
  const o = parseRedisOptions({ redis: 'redis://127.0.0.1:6379', seed: SEED })
  const shape = fleetShape(spec(), o)
  const prev = previousExactScript(shape.scriptConstants)
  const cur = exactScript(shape.scriptConstants)
  t.not(scriptSha(prev), scriptSha(cur), 'another SHA: each build loads its own script')
  t.match(prev, /local gb = tonumber\(ARGV\[9\]\)/, 'the previous layout: gb at ARGV[9]')
  t.match(cur, /local gb = tonumber\(ARGV\[6\]\)/, 'this layout: gb at ARGV[6], then Q and floors')
  // the fingerprint is compiled into both: the same constant, so each accepts the other's record
  t.ok(prev.includes(`local fp = '${shape.fingerprint}'`) && cur.includes(`local fp = '${shape.fingerprint}'`))
})

// Self-sized policies are not in this loop: this build's early growth in exact mode (twins in
// the sized script) changed the self-sized fingerprint (`|sized` → `|sized|early`), so a
// previous-build self-sized fleet refuses this build at ready() (the test after the loop).
for (const [first, sized] of [
  ['previous', false],
  ['current', false],
] as const) {
  const shapeName = sized ? 'self-sized' : 'fixed shape'
  redisTest(
    `previous and current build alternate on one prefix (${shapeName}, ${first} build starts first)`,
    async (t) => {
      const admin = adminClient()
      const prefix = uniquePrefix(`h2-previous-build-${first}`)
      const alonePrefix = `${prefix}-alone`
      const clock = new FakeClock(409_600_000 + 1024) // mid-period
      const aShas = new Set<string>()
      const bShas = new Set<string>()
      const a = await connected(aShas)
      const b = await connected(bShas)
      const errors: unknown[] = []
      const options = {
        seed: SEED,
        timeoutMs: 5000,
        onStoreError: 'closed' as const,
        clock,
        onError: (e: unknown) => errors.push(e),
      }
      const previous = previousBuildStore({ ...options, redis: a, prefix }, spec({ sized }))
      const current = redisStore({ ...options, redis: b, prefix })(spec({ sized }))
      const alone = redisStore({ ...options, redis: b, prefix: alonePrefix })(spec({ sized }))
      t.teardown(async () => {
        await Promise.all([previous.close(), current.close(), alone.close()])
        await dropPrefix(admin, prefix)
        await dropPrefix(admin, alonePrefix)
        a.disconnect()
        b.disconnect()
        admin.disconnect()
      })
      const [one, two] = first === 'previous' ? [previous, current] : [current, previous]
      await one.ready()
      await two.ready()
      await alone.ready()

      const shared = new Map(KEYS.map((k) => [k, { previous: 0, current: 0 }]))
      const single = new Map(KEYS.map((k) => [k, 0]))
      let failures = 0
      // one request per key by one build, then one by the other (the previous build first
      // on every third step: a key is admitted about every 8th step, so either build gets some),
      // each build's requests of a turn batched; the lone instance gets the same two per key
      const turn = async (s: RedisScoreStore, counts?: 'previous' | 'current') => {
        const results = await Promise.all(KEYS.map(async (k) => s.tryConsume(k, 1, BURST)))
        results.forEach((r, i) => {
          if (r.failure !== undefined) failures++
          if (!r.admitted) return
          if (counts === undefined) single.set(KEYS[i], single.get(KEYS[i])! + 1)
          else shared.get(KEYS[i])![counts]++
        })
      }
      const series = bucketSeries(2)
      // steps after which a key's admissions so far (both builds) differed from the bucket's
      const off: string[] = []
      for (let step = 0; step < STEPS; step++) {
        if (step > 0) clock.advance(STEP_MS)
        const order: ('previous' | 'current')[] = step % 3 === 0 ? ['previous', 'current'] : ['current', 'previous']
        for (const who of order) await turn(who === 'previous' ? previous : current, who)
        await turn(alone)
        await turn(alone)
        for (const k of KEYS) {
          const so = shared.get(k)!
          if (so.previous + so.current !== series[step]) off.push(`${k}@${step}: ${so.previous + so.current}`)
        }
      }

      // each build ran its own script, and only that one
      const sha = (s: RedisScoreStore) => (s as unknown as { sha: string }).sha
      t.not(sha(previous), sha(current))
      t.ok(aShas.has(sha(previous)) && !aShas.has(sha(current)), 'the previous build sent the previous script only')
      t.ok(bShas.has(sha(current)) && !bShas.has(sha(previous)), 'the current build sent the current script only')
      t.equal(failures, 0, 'no request fell back to onStoreError')
      t.same(errors, [], 'no Redis error absorbed')
      t.same(off, [], 'throughout: after every step each key admitted as many as the exact bucket so far')
      const exact = series[STEPS - 1]
      // by hand: admitted = final debt + drained; 159 steps drain 159/8 = 19.875 (the debt never
      // reaches 0 after the first burst) and the final debt lies in (3, 4], so 23 (final debt 3.125)
      t.equal(exact, 23, 'the exact bucket admits 23 of 320 per key over 20.48 s')
      for (const k of KEYS) {
        const s = shared.get(k)!
        const total = s.previous + s.current
        t.ok(total <= Math.floor(BURST + (RATE * (STEPS - 1) * STEP_MS) / 1000), `${k}: within burst + drain`)
        t.equal(total, exact, `${k}: the two builds together admit what the exact bucket does`)
        t.equal(total, single.get(k), `${k}: and what one current instance alone admits`)
        t.ok(s.previous > 0 && s.current > 0, `${k}: both builds decided admissions (${s.previous} + ${s.current})`)
      }
      // both builds can still be refused: a placement change under this prefix fails loudly
      for (const build of ['previous', 'current'] as const) {
        const c = await connected()
        const other =
          build === 'previous'
            ? previousBuildStore({ ...options, redis: c, prefix }, spec({ sized, levels: 3 }))
            : redisStore({ ...options, redis: c, prefix })(spec({ sized, levels: 3 }))
        await t.rejects(
          other.ready(),
          { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
          `${build} build, 3 levels: refused at ready()`,
        )
        await t.rejects(
          async () => other.tryConsume('alice', 1, BURST),
          { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
          `${build} build, 3 levels: its requests too`,
        )
        await other.close()
        c.disconnect()
      }
    },
  )
}

t.test("a previous-build self-sized fleet is refused: this build's self-sized fingerprint differs", async (t) => {
  // The previous build's fingerprint text of a self-sized exact policy ended in `|sized`
  // (317afd1's fleet-hash.ts), this build's in `|sized|early|fold|foldsteps`: the records differ, so the two
  // refuse each other at ready() (a record mismatch is ERR_GRUDGE_CLUSTER_FINGERPRINT, tested in
  // the placement test below and in fleet-shape.test.ts). The text is rebuilt here from its
  // fields and checked against this build's own fingerprint first, so the comparison is of the
  // real texts.
  const o = parseRedisOptions({ redis: 'redis://127.0.0.1:6379', seed: SEED })
  const sized = fleetShape(spec({ sized: true }), o, true)
  const fixed = fleetShape(spec(), o)
  const { levels, cellsPerLevel, slots, blockCells } = sized
  const fields = `${FLEET_FINGERPRINT_VERSION}|exact|murmur3x86|${levels}|${cellsPerLevel}|${slots}|linear|min|2|W${blockCells}`
  const slot0 = slots > 1 ? '|slot0' : ''
  const hash = (text: string) => new SipHasher(o.secret).hash(text).toString(16).padStart(16, '0')
  t.equal(hash(fields + slot0), fixed.fingerprint, 'the rebuilt text is the fixed shape fingerprint')
  t.equal(
    hash(`${fields}|sized|early|fold|foldsteps${slot0}`),
    sized.fingerprint,
    "and with |sized|early|fold|foldsteps this build's self-sized one",
  )
  // the build before the incremental fold wrote `|sized|early|fold`: it remakes a partly folded
  // twin string whole from the base (spec/cluster.md "Early growth", Fingerprint)
  t.not(hash(`${fields}|sized|early|fold${slot0}`), sized.fingerprint, "the one-call fold's build's is another too")
  t.not(hash(`${fields}|sized${slot0}`), sized.fingerprint, "the previous build's self-sized fingerprint is another")
  // the build before folding twins (spec/cluster.md "Early growth") wrote `|sized|early`: its
  // twins are written beside their base from their start, this build's folding ones are not
  t.not(hash(`${fields}|sized|early${slot0}`), sized.fingerprint, "the written-beside twins' build's is another too")
  const lazy = new Redis(REDIS_URL, { lazyConnect: true })
  t.throws(() => previousBuildStore({ redis: lazy, seed: SEED }, spec({ sized: true })), { message: /self-sized/ })
  lazy.disconnect()
})

redisTest('a previous-build fleet of another placement refuses a current instance at ready()', async (t) => {
  const admin = adminClient()
  const prefix = uniquePrefix('h2-previous-build-placement')
  const clock = new FakeClock(409_600_000)
  const a = await connected()
  const b = await connected()
  const options = { seed: SEED, timeoutMs: 5000, clock }
  t.teardown(async () => {
    await dropPrefix(admin, prefix)
    a.disconnect()
    b.disconnect()
    admin.disconnect()
  })
  for (const [p, seed] of [
    ['seed', '00000000000000000000000000000001'],
    ['levels', SEED],
  ] as const) {
    const old = previousBuildStore(
      { ...options, seed, redis: a, prefix: `${prefix}:${p}` },
      spec({ levels: p === 'levels' ? 3 : 4 }),
    )
    await old.ready()
    t.equal((await old.tryConsume('alice', 1, BURST)).admitted, true, `${p}: the previous-build fleet runs`)
    const cur = redisStore({ ...options, redis: b, prefix: `${prefix}:${p}` })(spec())
    await t.rejects(
      cur.ready(),
      { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' },
      `${p}: the current instance is refused at ready()`,
    )
    await t.rejects(async () => cur.tryConsume('alice', 1, BURST), { code: 'ERR_GRUDGE_CLUSTER_FINGERPRINT' })
    await cur.close()
    await old.close()
  }
})

redisTest(
  'through Fastify on Redis TIME, a fixed shape: an old-build and a new-build app, one key, no 500',
  async (t) => {
    const admin = adminClient()
    const prefix = uniquePrefix('h2-previous-build-fastify')
    const aShas = new Set<string>()
    const bShas = new Set<string>()
    const a = await connected(aShas)
    const b = await connected(bShas)
    const options = { seed: SEED, prefix, timeoutMs: 2000 }
    const stores = { old: previousBuild({ ...options, redis: a }), neu: redisStore({ ...options, redis: b }) }
    const apps: Partial<Record<'old' | 'neu', FastifyInstance>> = {}
    for (const which of ['old', 'neu'] as const) {
      const f = Fastify()
      await f.register(grudge, {
        ticker: new FakeTicker(),
        store: stores[which],
        limit: { rate: 1, burst: 10 },
        // a fixed shape: a self-sized one is refused across these builds (see above)
        levels: 4,
        cellsPerLevel: 1024,
        key: (req) => String(req.headers['x-user']),
        storeTimeoutMs: 10_000,
      })
      f.get('/', async () => 'ok')
      await f.ready()
      await stores[which].ready()
      apps[which] = f
    }
    t.teardown(async () => {
      await apps.old?.close()
      await apps.neu?.close()
      await dropPrefix(admin, prefix)
      a.disconnect()
      b.disconnect()
      admin.disconnect()
    })
    const started = performance.now()
    const statuses = { old: [] as number[], neu: [] as number[] }
    for (let i = 0; i < 60; i++) {
      const which = i % 2 === 0 ? 'old' : 'neu'
      statuses[which].push((await apps[which]!.inject({ url: '/', headers: { 'x-user': 'alice' } })).statusCode)
    }
    const elapsedS = (performance.now() - started) / 1000
    const all = [...statuses.old, ...statuses.neu]
    // each app its own exact script
    const own = (x: Set<string>, y: Set<string>) => [...x].filter((sha) => !y.has(sha)).length
    t.same([own(aShas, bShas), own(bShas, aShas)], [1, 1], 'each app ran its own exact script')
    t.ok(
      all.every((s) => s === 200 || s === 429),
      'every answer is a decision: no 500',
    )
    const admitted = all.filter((s) => s === 200).length
    // the shared debt drains at 1/s: within elapsedS at most ceil(elapsedS) more fit
    const slack = Math.ceil(elapsedS) + 1
    t.ok(admitted >= 10 && admitted <= 10 + slack, `one shared burst: ${admitted} admitted, expected 10..${10 + slack}`)
    t.ok(statuses.old.includes(200) && statuses.neu.includes(200), 'both builds admitted some')
    t.equal(statuses.old.slice(-5).join(), '429,429,429,429,429', 'the old build refuses once the shared debt is spent')
    t.equal(statuses.neu.slice(-5).join(), '429,429,429,429,429', 'and so does the new one')
    t.equal(
      (await apps.old!.inject({ url: '/', headers: { 'x-user': 'bob' } })).statusCode,
      200,
      'other keys untouched',
    )
  },
)
