// Sync mode's delta pull (spec/cluster.md "The change log"): after every sync, each instance's
// local cells are exactly what a full pull would make them — the fleet's raw cells in Redis at
// that moment, each decayed from its stamp to the sync's `now`, plus what the instance added
// while the sync was in flight, clamped — computed here from the strings themselves (a GET of
// every slot string right after the sync, nothing else running in between: the script's state).
// Random traffic (admissions, adds of both signs, writes during a sync's flight) from three
// stores under one driven clock, over generations that rotate, with logs small enough to start
// anew often (so both the delta and the full path run), on 1 and 3 slots, linear and
// exponential decay.
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { applyDecay, exponential, linear } from '../../src/sketch/decay.js'
import type { Decay } from '../../src/sketch/shape.js'
import { redisStore } from '../../src/index.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import { slotKeyPrefix } from '../../src/cluster/connection.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { mulberry32 } from '../fixtures/mulberry32.js'
import { heldGenerations, scriptClient } from '../fixtures/fleet-fold.js'
import { adminFor, needRedis } from './redis-helper.js'

const SEED = '3333333333333333cccccccccccccccc'

const cases: { name: string; decay: Decay; levels: number; cells: number; slots: number; lo: number }[] = [
  { name: 'linear, 1 slot', decay: linear(5), levels: 3, cells: 64, slots: 1, lo: 0 },
  {
    name: 'linear, 3 slots (the last padded), scores below 0',
    decay: linear(5),
    levels: 2,
    cells: 50,
    slots: 3,
    lo: -20,
  },
  { name: 'exponential, 1 slot', decay: exponential(0.5), levels: 4, cells: 40, slots: 1, lo: 0 },
]

t.test('a delta pull leaves exactly the cells a full pull would', async (t) => {
  const opts = await needRedis(t)
  for (const c of cases) {
    t.test(c.name, opts, async (t) => {
      const { admin, prefix } = adminFor(t, 'sync-delta')
      const clock = new FakeClock(9_000_000)
      const PERIOD = 20_000
      const spec: StoreSpec = {
        name: 'd',
        sketch: { levels: c.levels, cellsPerLevel: c.cells, decay: c.decay, lo: c.lo, hi: 50 },
        generations: 2,
        periodMs: PERIOD,
      }
      // the script commands of the shared client, MGET (the full pulls) counted
      let fullPulls = 0
      const counted = scriptClient(admin, {
        mgetBuffer: (...keys: string[]) => {
          fullPulls += keys.length
          return admin.mgetBuffer(...keys)
        },
      })
      const stores = [0, 1, 2].map(
        () =>
          redisStore({
            redis: counted,
            seed: SEED,
            prefix,
            mode: 'sync',
            slots: c.slots,
            clock,
            ticker: new FakeTicker(),
            timeoutMs: 2000,
          })(spec) as RedisSyncStore,
      )
      for (const s of stores) await s.ready()
      const random = mulberry32(0x5eed + c.cells)
      const keys = Array.from({ length: 12 }, (_, i) => `key-${i}`)
      const M = c.cells
      const Ms = Math.ceil(M / c.slots)
      let checked = 0
      let mismatches = 0
      let nonzero = 0
      let syncs = 0
      /** The logs' epochs the stores pulled: each log started anew is one more. */
      const epochs = new Set<string>()
      /** Compare every cell score of `s` with the full pull of the strings as they are now. */
      const check = async (s: RedisSyncStore) => {
        const now = clock.now()
        for (const g of heldGenerations(s)) {
          const strings = await Promise.all(
            Array.from({ length: c.slots }, (_, slot) =>
              admin.getBuffer(slotKeyPrefix(prefix, 'd', slot) + 'g' + g.id + g.suffix),
            ),
          )
          const cells = g.sketch.cells
          for (let p = 0; p < c.levels * M; p++) {
            const i = Math.floor(p / M)
            const j = p % M
            const slot = Math.floor(j / Ms)
            const q = i * Ms + j - slot * Ms
            const raw = strings[slot]
            let fleet = 0
            if (raw !== null && raw.length >= 16 * (q + 1)) {
              fleet = raw.readDoubleLE(16 * q)
              if (fleet !== 0) fleet = applyDecay(fleet, c.decay, now - raw.readDoubleLE(16 * q + 8))
            }
            let want = fleet + g.pending[p]
            want = want < c.lo ? c.lo : want > 50 ? 50 : want
            checked++
            if (want !== 0) nonzero++
            if (!Object.is(cells[2 * p], want)) {
              if (mismatches++ < 5) t.fail(`gen ${g.id} cell ${p}: ${cells[2 * p]} locally, a full pull ${want}`)
            }
          }
        }
      }
      for (let step = 0; step < 400; step++) {
        clock.advance(Math.floor(random() * 200))
        const s = stores[Math.floor(random() * 3)]
        const key = keys[Math.floor(random() * keys.length)]
        const x = random()
        if (x < 0.45) s.tryConsume(key, 1 + Math.floor(random() * 3), 40)
        else if (x < 0.6) s.add(key, -Math.floor(random() * 6))
        else if (x < 0.65) {
          // a burst of keys: pushes whose entries fill the log past its cap (the cells' size),
          // or alone pass it, so logs start anew
          const n = 10 + Math.floor(random() * 50)
          for (let k = 0; k < n; k++) s.add(`bulk-${Math.floor(random() * 500)}`, 1)
        } else {
          const sync = s.sync(true)
          // a write while the sync is in flight: in the pending sums the pull adds back (half of
          // them to a new key, whose cells the fleet may not hold yet)
          if (random() < 0.4) s.add(random() < 0.5 ? key : `new-${step}`, 1 + Math.floor(random() * 2))
          // two that cross hi (50) on a new key: the local cell is clamped in between, the pull's
          // sum (what was added, undecayed and unclamped, then clamped) is not
          else if (random() < 0.3) {
            s.add(`new-${step}`, 60)
            s.add(`new-${step}`, -20)
          }
          await sync
          syncs++
          for (const g of heldGenerations(s)) for (const m of g.seen) epochs.add(m.split(':')[0])
          await check(s)
        }
      }
      t.equal(mismatches, 0, `every cell of every pulled generation as a full pull (${checked} compared)`)
      t.ok(nonzero > 100, `the fleet's cells were not all zero (${nonzero} nonzero)`)
      // both paths ran: most pulls were deltas, some (first pulls, new generations, logs started anew) full
      const pulls = syncs * 2 * c.slots
      t.ok(fullPulls > 6 && fullPulls < pulls / 2, `full pulls: ${fullPulls} of ${pulls}`)
      // 2 generations per slot at first, and about 2 more per slot as the clock crosses periods
      t.ok(epochs.size > 6 * c.slots, `logs started anew: ${epochs.size} epochs over ${c.slots} slot(s)`)
      for (const s of stores) await s.close()
    })
  }
})

t.test('a log that is lost or replaced makes the next pull a full one', async (t) => {
  const opts = await needRedis(t)
  t.test('deleted, and its cells string recreated', opts, async (t) => {
    const { admin, prefix } = adminFor(t, 'sync-delta-lost')
    const clock = new FakeClock(9_000_000)
    const spec: StoreSpec = {
      name: 'z',
      sketch: { levels: 2, cellsPerLevel: 32, decay: linear(1), hi: 100 },
      generations: 2,
      periodMs: 300_000,
    }
    const mk = () =>
      redisStore({ redis: admin, seed: SEED, prefix, mode: 'sync', clock, ticker: new FakeTicker(), timeoutMs: 2000 })(
        spec,
      ) as RedisSyncStore
    const a = mk()
    const b = mk()
    await a.ready()
    await b.ready()
    a.add('k', 5)
    await a.sync()
    await b.sync()
    t.equal(b.read('k'), 5, "B sees A's 5")
    // the fleet's cells vanish (an eviction, FLUSHALL): a full pull reads zeros, not B's old 5
    const G = Math.floor(clock.now() / 300_000)
    await admin.del(`${prefix}:{z}:g${G}`, `${prefix}:{z}:g${G + 1}`)
    a.add('other', 1) // A's push recreates the strings, which starts their logs anew
    await a.sync()
    await b.sync()
    t.equal(b.read('k'), 0, 'B reads the recreated (empty) cells after a full pull')
    t.equal(b.read('other'), 1, "and A's write after it")
    await a.close()
    await b.close()
  })
})
