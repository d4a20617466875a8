// Sync mode's bounded fold (spec/cluster.md "Early growth", _The fold_): a folding twin larger
// than the store's `foldSliceCells` is folded lazily, chunk by chunk, a slice per call plus the
// chunks of the call's key's cells, the rest by the next sync. Two stores run the same calls on one driven clock, each on
// a fleet of its own (two prefixes, one seed): A folds lazily (slices of 8 cells in chunks of 4,
// of 1 cell in chunks of 1, or of 64 in chunks of 32), B at
// once by `Sketch.foldFrom` and the sums' fold (`foldSliceCells = Infinity`, the synchronous
// fold as it was). After every call and sync every cell of every live generation of A, read as
// the fold defines it (a twin cell of a chunk not folded yet is its base's cell j mod M, its
// base sum still to add), is bit for bit B's (score, time, pending sum), and every call answers the same: the
// calls cross the switch, write during the fold (linear decay: the carried floor on the younger
// generation), a push of the bases fails across the switch (its sums put back on the twins
// while A's fold is in progress), and syncs finish A's fold. A copies at most its slice plus L
// chunks of each folding twin per call and every twin cell exactly once; B copies both twins'
// cells in the one call that crosses the switch.
import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisLike } from '../../src/cluster/client.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { client, dropPrefix, needRedis, uniquePrefix } from './redis-helper.js'
import { mulberry32 as rng } from '../fixtures/mulberry32.js'

const SEED = '7777777777777777eeeeeeeeeeeeeeee'

/** What the test reads of a store's live generations (private fields). */
interface Held {
  gens: {
    id: number
    suffix: string
    awaitFoldFrom: number
    pending: Float64Array
    sketch: {
      cells: Float64Array
      cellsPerLevel: number
      lazy: { fromCells: number; shift: number; from: Float64Array; done: Uint8Array; next: number } | undefined
      foldSums: { pending: Float64Array } | undefined
    }
  }[]
}

t.test('sync mode: a lazy fold reads and writes as the synchronous fold, a bounded slice per call', async (t) => {
  const opts = await needRedis(t)
  for (const [slice, chunk] of [
    [8, 4],
    [1, 1],
    [64, 256], // chunks of the base's 32 cells per level: two mark blocks each
  ])
    t.test(`slices of ${slice} cell(s), chunks of ${chunk}, two twins 32 → 128 × 3 levels`, opts, async (t) => {
      const admin = client()
      const prefixes = [uniquePrefix(`s31h3-fold-lazy${slice}`), uniquePrefix(`s31h3-fold-sync${slice}`)]
      t.teardown(async () => {
        for (const p of prefixes) await dropPrefix(admin, p)
        await admin.quit()
      })
      const PERIOD = 600_000
      const T0 = 100 * PERIOD + 1000
      const TIMEOUT_MS = 2000
      const L = 3
      const clock = new FakeClock(T0)
      const spec: StoreSpec = {
        name: 'f',
        sketch: { levels: L, cellsPerLevel: 32, decay: linear(2), lo: 0, hi: 40, aggregator: 'min' },
        generations: 2,
        periodMs: PERIOD,
        sizing: {
          sizeNextGeneration: () => 32,
          minCellsPerLevel: 16,
          maxCellsPerLevel: 256,
          growEarlyWhen: () => false, // the twins are the test's own records
          checkEveryMs: 1000,
        },
      }
      // each store's client can hold one sync-script call at a gate and then reject it unsent
      const gates = prefixes.map(() => ({
        hold: false,
        reached: () => {},
        release: () => {},
        reachedP: Promise.resolve(),
        gate: Promise.resolve(),
      }))
      const arm = (g: (typeof gates)[number]) => {
        g.hold = true
        g.reachedP = new Promise<void>((r) => (g.reached = r))
        g.gate = new Promise<void>((r) => (g.release = r))
      }
      const r = admin as unknown as Required<RedisLike>
      const stores = prefixes.map((prefix, i) => {
        const g = gates[i]
        const wrapped: RedisLike = {
          evalsha: (sha, n, ...a) => admin.evalsha(sha, n, ...a),
          evalshaBuffer: async (sha, n, ...a) => {
            // the sync script has 1 + 2K keys (the fold script 3)
            if (g.hold && n > 3) {
              g.hold = false
              g.reached()
              await g.gate
              throw new Error('injected: the push failed before Redis saw it')
            }
            return r.evalshaBuffer(sha, n, ...a)
          },
          eval: (src, n, ...a) => admin.eval(src, n, ...a),
          evalBuffer: (src, n, ...a) => r.evalBuffer(src, n, ...a),
          mgetBuffer: (...keys) => admin.mgetBuffer(...keys),
          script: (sub, src) => admin.script(sub, src),
        }
        return redisStore({
          redis: wrapped,
          seed: SEED,
          prefix,
          mode: 'sync',
          clock,
          ticker: new FakeTicker(),
          timeoutMs: TIMEOUT_MS,
          onStoreError: 'local',
        })(spec) as RedisSyncStore
      })
      const [a, b] = stores
      a.foldSliceCells = slice
      a.foldChunkCells = chunk
      b.foldSliceCells = Infinity
      for (const s of stores) await s.ready()
      const SWITCH = T0 + 5000
      for (let i = 0; i < 2; i++)
        for (const id of [100, 101])
          await admin.set(`${prefixes[i]}:{f}:s${id}+`, `${stores[i].shape.fingerprint}:${SWITCH}:128:fold`)

      let compared = 0
      let mismatches = 0
      const fail = (what: string) => {
        if (mismatches++ < 8) t.fail(what)
      }
      /** Every cell of every live generation of A, as its fold defines it, against B's. */
      const compare = (when: string) => {
        const ga = (a as unknown as Held).gens
        const gb = (b as unknown as Held).gens
        if (ga.length !== gb.length) return fail(`${when}: ${ga.length} generations against ${gb.length}`)
        for (let k = 0; k < ga.length; k++) {
          const x = ga[k]
          const y = gb[k]
          const M2 = x.sketch.cellsPerLevel
          if (x.id !== y.id || x.suffix !== y.suffix || M2 !== y.sketch.cellsPerLevel)
            return fail(
              `${when}: generation ${x.id}${x.suffix} × ${M2} against ${y.id}${y.suffix} × ${y.sketch.cellsPerLevel}`,
            )
          if (x.awaitFoldFrom !== y.awaitFoldFrom)
            fail(`${when}: awaitFoldFrom ${x.awaitFoldFrom} / ${y.awaitFoldFrom}`)
          const f = x.sketch.lazy
          for (let p = 0; p < L * M2; p++) {
            let score = x.sketch.cells[2 * p]
            let time = x.sketch.cells[2 * p + 1]
            let pending = x.pending[p]
            if (f !== undefined && p >> f.shift >= f.next && f.done[p >> f.shift] === 0) {
              // a chunk not folded yet: its base's cell, the mapping of Sketch.foldFrom (level i
              // repeated), read from the base's cells the fold holds
              const q = Math.floor(p / M2) * f.fromCells + ((p % M2) % f.fromCells)
              score = f.from[2 * q]
              time = f.from[2 * q + 1]
              pending += x.sketch.foldSums!.pending[q]
            }
            compared++
            if (!Object.is(score, y.sketch.cells[2 * p]) || !Object.is(time, y.sketch.cells[2 * p + 1]))
              fail(
                `${when}: gen ${x.id}${x.suffix} cell ${p}: (${score}, ${time}) lazily, (${y.sketch.cells[2 * p]}, ${y.sketch.cells[2 * p + 1]}) folded at once`,
              )
            if (!Object.is(pending, y.pending[p]))
              fail(
                `${when}: gen ${x.id}${x.suffix} cell ${p}: pending ${pending} lazily, ${y.pending[p]} folded at once`,
              )
          }
        }
      }

      const random = rng(0xb0ded + slice)
      const keys = Array.from({ length: 50 }, (_, i) => `key-${i}`)
      let callsA = 0
      let maxCopiedA = 0
      let callsCopyingA = 0
      let maxCopiedB = 0
      /** One random call on both stores: the same answer, the cells the same, and A's cells copied bounded. */
      const call = (when: string) => {
        const key = keys[Math.floor(random() * keys.length)]
        const x = random()
        const cost = 1 + Math.floor(random() * 3)
        const before = [a.foldCellsCopied, b.foldCellsCopied]
        let answers: unknown[]
        if (x < 0.5) answers = stores.map((s) => s.tryConsume(key, cost, 12))
        else if (x < 0.75) answers = stores.map((s) => s.add(key, cost))
        else if (x < 0.85) answers = stores.map((s) => s.add(key, -1))
        else answers = stores.map((s) => s.read(key))
        const copiedA = a.foldCellsCopied - before[0]
        const copiedB = b.foldCellsCopied - before[1]
        callsA++
        if (copiedA > 0) callsCopyingA++
        if (copiedA > maxCopiedA) maxCopiedA = copiedA
        if (copiedB > maxCopiedB) maxCopiedB = copiedB
        if (JSON.stringify(answers[0]) !== JSON.stringify(answers[1]))
          fail(`${when}: ${key} answers ${JSON.stringify(answers[0])} lazily, ${JSON.stringify(answers[1])} at once`)
        compare(when)
      }
      const syncBoth = async (when: string) => {
        await Promise.all(stores.map((s) => s.sync(true)))
        compare(when)
      }

      // before the switch: calls and syncs, both stores adopt the early records
      for (let step = 0; step < 120; step++) {
        clock.advance(Math.floor(random() * 30))
        call(`before, step ${step}`)
        if (step % 30 === 29) await syncBoth(`before, sync at ${step}`)
      }
      t.ok(clock.now() < SWITCH - 500, 'still before the switch')
      clock.set(SWITCH - 200)
      for (let step = 0; step < 10; step++) call(`just before, step ${step}`)
      // a push of the bases in flight across the switch fails: its sums go to the twins (A: mid-fold)
      for (const g of gates) arm(g)
      const inFlight = stores.map((s) => s.sync())
      await Promise.all(gates.map((g) => g.reachedP))
      // writes to the bases after the push took their sums: unpushed at the switch (folded into the twins' sums)
      for (let step = 0; step < 10; step++) call(`in flight before the switch, step ${step}`)
      clock.set(SWITCH + 5)
      for (let step = 0; step < 10; step++) call(`in flight, step ${step}`)
      t.ok(
        (a as unknown as Held).gens.some((g) => g.sketch.lazy !== undefined),
        'A folds lazily, in progress',
      )
      for (const g of gates) g.release()
      await Promise.all(inFlight)
      compare('after the failed push')
      t.ok(
        (a as unknown as Held).gens.every((g) => g.suffix !== ''),
        'A holds the twins in the bases’ places',
      )
      // calls with no sync: A's fold goes on a slice at a time
      for (let step = 0; step < 130; step++) {
        clock.advance(Math.floor(random() * 20))
        call(`folding, step ${step}`)
      }
      const inProgress = (a as unknown as Held).gens.some((g) => g.sketch.lazy !== undefined)
      t.equal(inProgress, slice === 1, slice === 1 ? 'a sync finishes the fold' : 'the calls finished the fold')
      // syncs from here (the first finishes a fold still in progress), past the Redis fold
      for (let step = 0; step < 200; step++) {
        clock.advance(Math.floor(random() * 40))
        call(`after, step ${step}`)
        if (step % 25 === 24) await syncBoth(`after, sync at ${step}`)
      }
      t.ok(clock.now() > SWITCH + 2 * TIMEOUT_MS, 'past the Redis fold')
      await syncBoth('last sync')
      t.ok(
        (a as unknown as Held).gens.every((g) => g.sketch.lazy === undefined && g.awaitFoldFrom === 0),
        'A: the folds are done and Redis holds the twins',
      )
      for (const key of keys) {
        const [x, y] = stores.map((s) => s.read(key))
        if (!Object.is(x, y)) fail(`${key} reads ${x} lazily, ${y} at once`)
      }
      t.equal(mismatches, 0, `A as B in every cell and answer (${compared} cells compared over ${callsA} calls)`)
      const twinCells = 2 * L * 128
      t.equal(maxCopiedB, twinCells, `the synchronous fold copies both twins' ${twinCells} cells in one call`)
      t.ok(
        maxCopiedA <= Math.max(slice, chunk) + 2 * L * Math.min(chunk, 32),
        `A copies at most its slice + L chunks of each folding twin per call (at most ${maxCopiedA})`,
      )
      const fewest = Math.min(100, Math.ceil(twinCells / (Math.max(slice, chunk) + 2 * L * Math.min(chunk, 32))))
      t.ok(callsCopyingA >= fewest, `A's fold spread over ${callsCopyingA} calls (at least ${fewest})`)
      t.equal(a.foldCellsCopied, twinCells, 'A copied every twin cell exactly once')
      for (const s of stores) await s.close()
    })
})
