// Exact mode's incremental fold (spec/cluster.md "Early growth", _The incremental fold_): a
// folding twin's slot string is built from its base by the script calls that reach it, one
// step of at most FOLD_CHUNK_BYTES per call; a key whose span lies below the twin string's
// length reads and writes the twin, any other its base. Self-sized, 4 levels, both live
// generations at 128 cells per level with folding twins of 16,384 (1 MiB of twin per generation:
// 16 steps each), records written here as an instance would, S = 1 and 4 slots. Every EVALSHA
// of the stores goes through a wrapper that runs them one at a time and measures the twin
// strings' lengths in Redis before and after each: the bytes a call folded, counted, not timed.
import t from 'tap'
import type { Test } from 'tap'
import type { Redis } from 'ioredis'
import { FakeClock } from '../../src/testing/index.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import { FOLD_CHUNK_BYTES } from '../../src/cluster/scripts.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'
import { mulberry32 as rng } from '../fixtures/mulberry32.js'
import {
  EXACT_FOLD_BURST as BURST,
  EXACT_FOLD_HI as HI,
  EXACT_FOLD_PERIOD_MS as P,
  EXACT_FOLD_RATE as RATE,
  EXACT_FOLD_SEED as SEED,
  exactFoldSpec as specOf,
} from '../fixtures/exact-fold.js'

const T0 = 100 * P + 1000
const SWITCH = T0 + 5000

/** The shapes run: slots, levels and the twins' cells per level (1 MiB of twin per generation and slot string of 256 KiB to 4.4 MiB; or 16 strings of 4 KiB, several folded by one call). */
const CASES = [
  { S: 1, L: 4, TWIN: 16_384 },
  { S: 4, L: 4, TWIN: 16_384 },
  { S: 1, L: 17, TWIN: 16_384 },
  { S: 16, L: 4, TWIN: 1024 },
]

/** What one EVALSHA did to the twin strings: bytes added in total, and how many strings grew. */
interface CallFold {
  bytes: number
  strings: number
}

/**
 * Two stores on one Redis and one fake clock, each with its own client whose EVALSHA runs one
 * at a time across both (a shared chain) between two reads of every twin string's length.
 */
async function fleet(t: Test, S: number, L: number, TWIN: number, label: string) {
  const admin = client()
  const prefix = uniquePrefix(`f4-xfold-${S}-${L}-${TWIN}-${label}`)
  const clients: Redis[] = [client(), client()]
  const calls: CallFold[] = []
  let twinKeys: string[] = []
  const lengths = () => Promise.all(twinKeys.map((k) => admin.strlen(k)))
  let chain: Promise<unknown> = Promise.resolve()
  for (const r of clients) {
    const orig = r.evalsha.bind(r) as (...a: unknown[]) => Promise<unknown>
    ;(r as unknown as { evalsha: (...a: unknown[]) => Promise<unknown> }).evalsha = (...a: unknown[]) => {
      const run = chain.then(async () => {
        const before = await lengths()
        try {
          return await orig(...a)
        } finally {
          const after = await lengths()
          let bytes = 0
          let strings = 0
          for (let i = 0; i < after.length; i++) {
            if (after[i] !== before[i]) strings++
            bytes += after[i] - before[i]
          }
          calls.push({ bytes, strings })
        }
      })
      chain = run.catch(() => {})
      return run
    }
  }
  const clock = new FakeClock(T0)
  const stores = clients.map(
    (r) =>
      redisStore({ redis: r, seed: SEED, prefix, mode: 'exact', slots: S, clock, timeoutMs: 5000 })(
        specOf(L, TWIN),
      ) as RedisExactStore,
  )
  t.teardown(async () => {
    for (const s of stores) await s.close()
    for (const p of stores[0].shape.keyPrefixes) await dropPrefix(admin, p.slice(0, -1))
    await dropPrefix(admin, prefix)
    for (const r of clients) await r.quit()
    await admin.quit()
  })
  for (const s of stores) await s.ready()
  const fp = stores[0].shape.fingerprint
  for (const id of [100, 101]) await admin.set(`${prefix}:{x}:s${id}+`, `${fp}:${SWITCH}:${TWIN}:fold`)
  // per generation, its twin's slot strings (slot s's prefix, then g<k>+)
  const twinOf = (id: number) => stores[0].shape.keyPrefixes.map((p) => `${p}g${id}+`)
  twinKeys = [...twinOf(100), ...twinOf(101)]
  const full = L * (TWIN / S) * 16
  return { admin, stores, clock, calls, twinOf, full }
}

t.test('exact mode: a large fold runs over many calls, each bounded; reads are unchanged at every step', async (t) => {
  const opts = await needRedis(t)
  for (const { S, L, TWIN } of CASES)
    t.test(`${S} slot(s), ${L} levels, twins of ${TWIN}`, opts, async (t) => {
      const { admin, stores, clock, calls, twinOf, full } = await fleet(t, S, L, TWIN, 'reads')
      const store = stores[0]
      const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`)
      // every slot's bases written before the switch
      await Promise.all(keys.map((k, i) => store.tryConsume(k, 1 + (i % 4), HI)))
      // past 2 x checkEveryMs: the next call waits for a round that reads the early records
      clock.set(T0 + 1100)
      await store.read('key-0')
      await store.settled()
      const twins = store.liveShapes().filter((g) => g.twin === TWIN)
      t.same(
        twins.map((g) => g.id),
        [100, 101],
        'both live generations have the folding twin',
      )
      // debts that outlast the fold (linear decay of 1 per s): 2..9, 200 ms before the switch
      clock.set(SWITCH - 200)
      await Promise.all(keys.map((k, i) => store.tryConsume(k, 2 + (i % 8), HI)))
      clock.set(SWITCH - 1)
      const before = await Promise.all(keys.map((k) => store.read(k)))
      t.ok(before.filter((v) => v > 0).length > 250, 'keys hold debt before the switch')
      for (const k of twinOf(100)) t.equal(await admin.strlen(k), 0, `${k.slice(-6)}: no twin before the switch`)
      // from the switch on, at one instant: every read is the one before less 1 ms of linear decay
      clock.set(SWITCH)
      const expected = before.map((v) => Math.max(0, v - (RATE * 1) / 1000))
      calls.length = 0
      let wrong = 0
      let passes = 0
      const folded = async () => (await Promise.all(twinOf(100).map((k) => admin.strlen(k)))).every((n) => n === full)
      for (; passes < 60; passes++) {
        const done = await folded()
        // all of a pass's reads in one turn: batches of MAX_BATCH, each one call (one fold step at most)
        const got = await Promise.all(keys.map((k) => store.read(k)))
        for (let i = 0; i < keys.length; i++) {
          if (Math.abs(got[i] - expected[i]) > 1e-12 && wrong++ < 5)
            t.fail(`pass ${passes}: ${keys[i]} reads ${got[i]}, ${expected[i]} before the fold`)
        }
        if (done) break
      }
      t.equal(wrong, 0, `every read during and after the fold is the read before it (${passes + 1} passes)`)
      t.ok(await folded(), `generation 100's twin strings all folded, ${S} x ${full} bytes`)
      const growing = calls.filter((c) => c.bytes > 0)
      const most = Math.max(...calls.map((c) => c.bytes))
      t.comment(`${calls.length} calls, ${growing.length} fold steps, the largest ${most} bytes`)
      t.ok(
        calls.every((c) => c.bytes <= FOLD_CHUNK_BYTES),
        `no call folds more than FOLD_CHUNK_BYTES (largest ${most})`,
      )
      // the budget is the call's, in bytes: small strings, several in one call
      if (full < FOLD_CHUNK_BYTES)
        t.ok(
          calls.some((c) => c.strings > 1),
          `one call folds several strings of ${full} bytes (at most ${Math.max(...calls.map((c) => c.strings))})`,
        )
      t.equal(
        growing.reduce((a, c) => a + c.bytes, 0),
        S * full,
        'the steps add up to the twin strings, each byte once',
      )
      t.ok(
        growing.length >= Math.ceil((S * full) / FOLD_CHUNK_BYTES),
        `the fold took ${growing.length} calls (>= ${Math.ceil((S * full) / FOLD_CHUNK_BYTES)})`,
      )
      // reads decide on the oldest only: the younger generation's twin is folded by writes
      for (const k of twinOf(101)) t.equal(await admin.strlen(k), 0, `${k.slice(-6)}: untouched by reads`)
    })
})

t.test('exact mode: two stores writing during a partial fold lose nothing against the exact bucket', async (t) => {
  const opts = await needRedis(t)
  for (const { S, L, TWIN } of CASES)
    t.test(`${S} slot(s), ${L} levels, twins of ${TWIN}`, opts, async (t) => {
      const { admin, stores, clock, calls, twinOf, full } = await fleet(t, S, L, TWIN, 'writes')
      const random = rng(0xf4 + S)
      const keys = Array.from({ length: 300 }, (_, i) => `key-${i}`)
      const debt = new Map<string, { d: number; at: number }>()
      const exact = (key: string, now: number) => {
        const e = debt.get(key)
        return e === undefined ? 0 : Math.max(0, e.d - (RATE * (now - e.at)) / 1000)
      }
      let below = 0
      let reads = 0
      let admitted = 0
      let refused = 0
      let partialSteps = 0
      let partialAdmits = 0
      const allTwins = [...twinOf(100), ...twinOf(101)]
      const END = SWITCH + 9000
      for (let now = T0; now < END;) {
        now += 1 + Math.floor(random() * 60)
        clock.set(now)
        const lens = await Promise.all(allTwins.map((k) => admin.strlen(k)))
        const partial = lens.some((n) => n > 0 && n < full)
        if (partial) partialSteps++
        const pending: Promise<void>[] = []
        for (let i = 0; i < 8; i++) {
          const key = keys[Math.floor(random() ** 2 * keys.length)]
          const s = stores[Math.floor(random() * 2)]
          pending.push(
            s.tryConsume(key, 1, BURST).then((r) => {
              if (r.failure !== undefined) throw new Error(`failure ${r.failure}`)
              if (r.admitted) {
                admitted++
                if (partial) partialAdmits++
                debt.set(key, { d: exact(key, now) + 1, at: now })
              } else refused++
            }),
          )
        }
        await Promise.all(pending)
        for (const s of stores) await s.settled()
        // a few reads per step from either store, each against the exact per-key debt
        for (let i = 0; i < 3; i++) {
          const key = keys[Math.floor(random() * keys.length)]
          const r = await stores[reads++ % 2].read(key)
          if (r < exact(key, now) - 1e-9 && below++ < 5)
            t.fail(`t = ${now - T0}: ${key} reads ${r} < exact ${exact(key, now)}`)
        }
      }
      for (const key of keys) {
        const r = await stores[reads++ % 2].read(key)
        if (r < exact(key, clock.now()) - 1e-9 && below++ < 5)
          t.fail(`end: ${key} reads ${r} < exact ${exact(key, clock.now())}`)
      }
      t.comment(`admitted ${admitted} (${partialAdmits} during a partial fold), refused ${refused}, reads ${reads}`)
      t.equal(below, 0, `no read below the exact per-key debt (${reads} reads)`)
      t.ok(refused > 100, 'keys were held at their limit')
      // (the small twins fold within a few calls: no partial state to speak of there)
      if (2 * S * full >= 16 * FOLD_CHUNK_BYTES)
        t.ok(
          partialSteps >= 10 && partialAdmits >= 50,
          `writes admitted while a twin was partly folded (${partialSteps} steps)`,
        )
      const most = Math.max(...calls.map((c) => c.bytes))
      t.ok(
        calls.every((c) => c.bytes <= FOLD_CHUNK_BYTES),
        `no call folds more than FOLD_CHUNK_BYTES (largest ${most} bytes)`,
      )
      const lens = await Promise.all(allTwins.map((k) => admin.strlen(k)))
      t.ok(
        lens.every((n) => n === full),
        `every twin string folded in the end (${lens.join(', ')})`,
      )
    })
})
