// (r1, s30: a fold that starts at zeros fails every case here.)
// Exact mode's folding twins (spec/cluster.md "Early growth") under two stores on one Redis and
// one clock, S = 1, 4 and 16 slots, both live generations of 128 cells per level with folding
// twins of 512 (records written here, as an instance would), switching mid-period, just before
// the deciding generation retires, or exactly at a period boundary (the younger generation's twin
// becomes the oldest at its switch). Linear decay with carry-forward. Checked at every step: every
// key reads at least its exact per-key debt (a GCRA over what the stores admitted for it), so no
// fold, rotation or carry-forward forgives anything; around a mid-period switch every key reads
// after it what it read before (less 1 ms of decay).
import t from 'tap'
import { FakeClock } from '../../src/testing/index.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'
import { mulberry32 as rng } from '../fixtures/mulberry32.js'
import {
  EXACT_FOLD_BURST as BURST,
  EXACT_FOLD_PERIOD_MS as P,
  EXACT_FOLD_RATE as RATE,
  EXACT_FOLD_SEED as SEED,
  exactFoldSpec,
} from '../fixtures/exact-fold.js'

t.test('exact folding twins: no key reads below its exact debt', async (t) => {
  const opts = await needRedis(t)
  for (const S of [1, 4, 16])
    for (const variant of ['mid', 'retire', 'boundary'] as const)
      t.test(`${S} slot(s), switch ${variant}`, opts, async (t) => {
        const admin = client()
        const prefix = uniquePrefix(`s30r1-xfold-${S}-${variant}`)
        t.teardown(async () => {
          for (let s = 0; s < S; s++) await dropPrefix(admin, s === 0 ? prefix : `${prefix}:{x#${s}}`)
          await dropPrefix(admin, prefix)
          await admin.quit()
        })
        const T0 = 100 * P + 1000
        const clock = new FakeClock(T0)
        const spec: StoreSpec = exactFoldSpec(4, 512)
        const make = () =>
          redisStore({ redis: admin, seed: SEED, prefix, mode: 'exact', slots: S, clock, timeoutMs: 2000 })(
            spec,
          ) as RedisExactStore
        const stores = [make(), make()]
        for (const s of stores) await s.ready()
        const fp = stores[0].shape.fingerprint
        const sw =
          variant === 'mid'
            ? { 100: T0 + 5000, 101: T0 + 5000 }
            : variant === 'retire'
              ? { 100: 101 * P - 1, 101: 101 * P - 1 }
              : { 100: 101 * P - 1, 101: 101 * P }
        for (const id of [100, 101] as const) await admin.set(`${prefix}:{x}:s${id}+`, `${fp}:${sw[id]}:512:fold`)
        const random = rng(0x5eed + S)
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
        const checkAll = async (now: number, label: string) => {
          for (const key of keys) {
            const r = await stores[reads++ % 2].read(key)
            if (r < exact(key, now) - 1e-9 && below++ < 5)
              t.fail(`${label}: ${key} reads ${r} < exact debt ${exact(key, now)}`)
          }
        }
        const END = 101 * P + 8000
        const marks = [sw[100], sw[101], 101 * P].sort((a, b) => a - b)
        for (let now = T0; now < END;) {
          // land exactly on the switches and the boundary (and 1 ms before each)
          const nextMark = marks.find((m) => m - 1 > now)
          let step = 1 + Math.floor(random() * 150)
          if (nextMark !== undefined && now + step >= nextMark - 1) step = nextMark - 1 - now
          now += step
          clock.set(now)
          const before = variant === 'mid' && now === sw[100] - 1 ? new Map<string, number>() : undefined
          if (marks.includes(now + 1) || marks.includes(now)) {
            await checkAll(now, `t = ${now - T0}`)
            if (before !== undefined) {
              for (const key of keys) before.set(key, await stores[0].read(key))
              // the switch: 1 ms later, nothing else between (the other store reads)
              clock.set(now + 1)
              now += 1
              let moved = 0
              for (const key of keys) {
                const after = await stores[1].read(key)
                const b = before.get(key) ?? 0
                if (!(after <= b + 1e-9 && after >= b - 0.001 - 1e-9) && moved++ < 5)
                  t.fail(`${key}: ${b} before the switch, ${after} after`)
              }
              t.equal(moved, 0, 'every key reads after the mid-period switch what it read before (less 1 ms of decay)')
            }
          }
          const calls: Promise<void>[] = []
          for (let i = 0; i < 6; i++) {
            const key = keys[Math.floor(random() ** 2 * keys.length)]
            const s = stores[Math.floor(random() * 2)]
            calls.push(
              s.tryConsume(key, 1, BURST).then((r) => {
                if (r.failure !== undefined) throw new Error(`failure ${r.failure}`)
                if (r.admitted) {
                  admitted++
                  debt.set(key, { d: exact(key, now) + 1, at: now })
                } else refused++
              }),
            )
          }
          await Promise.all(calls)
          for (const s of stores) await s.settled()
          if (random() < 0.1) {
            const key = keys[Math.floor(random() * keys.length)]
            const r = await stores[Math.floor(random() * 2)].read(key)
            reads++
            if (r < exact(key, now) - 1e-9 && below++ < 5) t.fail(`${key} reads ${r} < exact debt ${exact(key, now)}`)
          }
        }
        await checkAll(clock.now(), 'end')
        const shapes = stores.map((s) => JSON.stringify(s.generationShapes().generationCellsPerLevel))
        t.comment(`admitted ${admitted}, refused ${refused}, reads ${reads}; shapes ${shapes.join(' ')}`)
        t.equal(below, 0, `no read below the exact per-key debt (${reads} reads)`)
        t.ok(refused > 100, 'keys were held at their limit')
        let twins = 0
        for (let s = 0; s < S; s++) {
          const p = s === 0 ? `${prefix}:{x}:` : `${prefix}:{x#${s}}:`
          for (const id of [100, 101]) if ((await admin.strlen(`${p}g${id}+`)) > 0) twins++
        }
        t.ok(twins >= S, `twin slot strings folded: ${twins} of ${2 * S}`)
        for (const s of stores) await s.close()
      })
})
