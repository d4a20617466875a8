import t from 'tap'
import fc from 'fast-check'
import { Sketch, Rotator, RotatorDelta, exponential, linear, none } from '../../src/index.js'
import { SketchDelta, type DeserializeOptions } from '../../src/index.js'
import { murmur3 } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { typo, unknownOption } from '../unknown-option.js'
import { serializeAtWall } from './fixtures/serialize-at-wall.js'

const WALL = 1_700_000_000_000
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4']
const near = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))

type Cmd =
  | { kind: 'update'; r: number; key: number; delta: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'sync'; r: number; bytes: boolean }
  | { kind: 'deliver'; r: number; pick: number }

const cmd = (replicas: number): fc.Arbitrary<Cmd> =>
  fc.oneof(
    fc.record({
      kind: fc.constant('update' as const),
      r: fc.integer({ min: 0, max: replicas - 1 }),
      key: fc.integer({ min: 0, max: KEYS.length - 1 }),
      delta: fc.double({ min: 0, max: 100, noNaN: true }),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 4_000 }) }),
    fc.record({
      kind: fc.constant('sync' as const),
      r: fc.integer({ min: 0, max: replicas - 1 }),
      bytes: fc.boolean(),
    }),
    fc.record({ kind: fc.constant('deliver' as const), r: fc.integer({ min: 0, max: replicas - 1 }), pick: fc.nat() }),
  )

/** Run a fleet: every sync broadcasts the replica's delta into the others' inboxes; deliveries happen in any order. */
function runFleet(replicas: number, cmds: Cmd[], decay = exponential(0.2)) {
  const clock = new FakeClock(1_000)
  const cfg = { levels: 2, cellsPerLevel: 16, decay, hi: 1e12, hasher: murmur3(77), clock }
  const reps = Array.from({ length: replicas }, () => new Sketch(cfg))
  const oracle = new Sketch(cfg) // one sketch that saw every update of every replica
  const inbox: (SketchDelta | Uint8Array)[][] = reps.map(() => [])
  const sync = (r: number, bytes: boolean): void => {
    const d = reps[r].takeDelta()
    const payload = bytes ? serializeAtWall(d, WALL) : d
    for (let j = 0; j < replicas; j++) if (j !== r) inbox[j].push(payload)
  }
  const deliver = (j: number, pick: number): void => {
    if (inbox[j].length === 0) return
    const [d] = inbox[j].splice(pick % inbox[j].length, 1)
    reps[j].applyDelta(d, { wallMs: WALL })
  }
  for (const c of cmds) {
    if (c.kind === 'update') {
      reps[c.r].update(KEYS[c.key], c.delta)
      oracle.update(KEYS[c.key], c.delta)
    } else if (c.kind === 'advance') clock.advance(c.ms)
    else if (c.kind === 'sync') sync(c.r, c.bytes)
    else deliver(c.r, c.pick)
  }
  // a final round: everyone ships what is left, everything is delivered
  for (let r = 0; r < replicas; r++) sync(r, r % 2 === 0)
  for (let j = 0; j < replicas; j++) while (inbox[j].length > 0) deliver(j, 0)
  return { reps, oracle, clock }
}

t.test(
  "exponential decay: after a full sync every replica's view equals the sum of all replicas' updates (any delivery order, objects or bytes)",
  async () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4 }).chain((n) => fc.tuple(fc.constant(n), fc.array(cmd(n), { maxLength: 60 }))),
        ([n, cmds]) => {
          const { reps, oracle } = runFleet(n, cmds)
          return reps.every((rep) => KEYS.every((k) => near(rep.estimate(k), oracle.estimate(k))))
        },
      ),
      { seed: 1, numRuns: 200 },
    )
  },
)

t.test('no decay: the same, exactly the plain sums', async () => {
  fc.assert(
    fc.property(fc.array(cmd(3), { maxLength: 60 }), (cmds) => {
      const { reps, oracle } = runFleet(3, cmds, none())
      return reps.every((rep) => KEYS.every((k) => near(rep.estimate(k), oracle.estimate(k))))
    }),
    { seed: 2, numRuns: 150 },
  )
})

t.test('syncing A→B→A twice does not double count', async (t) => {
  const clock = new FakeClock(0)
  const cfg = { levels: 2, cellsPerLevel: 64, decay: exponential(0.1), hi: 1e9, hasher: murmur3(2), clock }
  const a = new Sketch(cfg)
  const b = new Sketch(cfg)
  a.update('k', 3)
  b.update('k', 4)
  for (let round = 0; round < 2; round++) {
    b.applyDelta(a.takeDelta())
    a.applyDelta(b.takeDelta())
  }
  t.equal(a.estimate('k'), 7, 'A: 3 + 4, once each')
  t.equal(b.estimate('k'), 7, 'B: 4 + 3, once each')
  t.ok(a.takeDelta().isEmpty() && b.takeDelta().isEmpty(), 'nothing left to ship: applied deltas are never echoed')
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(
          fc.boolean(),
          fc.integer({ min: 0, max: 4 }),
          fc.double({ min: 0, max: 50, noNaN: true }),
          fc.integer({ min: 0, max: 3_000 }),
        ),
        { maxLength: 30 },
      ),
      (ups) => {
        const x = new Sketch(cfg)
        const y = new Sketch(cfg)
        const oracle = new Sketch(cfg)
        for (const [onX, key, delta, dt] of ups) {
          clock.advance(dt)
          ;(onX ? x : y).update(KEYS[key], delta)
          oracle.update(KEYS[key], delta)
          if (dt % 3 === 0) y.applyDelta(x.takeDelta()) // partial syncs in between
        }
        for (let round = 0; round < 2; round++) {
          y.applyDelta(x.takeDelta())
          x.applyDelta(y.takeDelta())
        }
        return KEYS.every((k) => near(x.estimate(k), oracle.estimate(k)) && near(y.estimate(k), oracle.estimate(k)))
      },
    ),
    { seed: 4, numRuns: 200 },
  )
})

t.test('applying deltas in any order gives the same view', async () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(
          fc.integer({ min: 0, max: 2 }),
          fc.integer({ min: 0, max: 4 }),
          fc.double({ min: -20, max: 20, noNaN: true }),
        ),
        { maxLength: 30 },
      ),
      (ups) => {
        const clock = new FakeClock(0)
        const cfg = {
          levels: 2,
          cellsPerLevel: 8,
          decay: exponential(0.5),
          lo: -1e9,
          hi: 1e9,
          hasher: murmur3(9),
          clock,
        }
        const src = [new Sketch(cfg), new Sketch(cfg), new Sketch(cfg)]
        for (const [r, key, delta] of ups) {
          clock.advance(250)
          src[r].update(KEYS[key], delta)
        }
        const deltas = src.map((s) => s.takeDelta())
        clock.advance(1_000)
        const views = [
          [0, 1, 2],
          [0, 2, 1],
          [1, 0, 2],
          [1, 2, 0],
          [2, 0, 1],
          [2, 1, 0],
        ].map((order) => {
          const acc = new Sketch(cfg)
          for (const i of order) acc.applyDelta(deltas[i])
          return KEYS.map((k) => acc.estimate(k))
        })
        return views.every((v) => v.every((x, i) => near(x, views[0][i])))
      },
    ),
    { seed: 5, numRuns: 150 },
  )
})

t.test(
  'linear decay: a full sync round at one instant leaves every replica with the same view, and nothing echoes',
  async () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 2 }),
            fc.integer({ min: 0, max: 4 }),
            fc.double({ min: 0, max: 30, noNaN: true }),
            fc.integer({ min: 0, max: 5_000 }),
            fc.boolean(),
          ),
          { maxLength: 40 },
        ),
        (ups) => {
          const clock = new FakeClock(0)
          const cfg = { levels: 2, cellsPerLevel: 8, decay: linear(1), hi: 1e9, hasher: murmur3(10), clock }
          const reps = [new Sketch(cfg), new Sketch(cfg), new Sketch(cfg)]
          const round = (): void => {
            const ds = reps.map((r) => r.takeDelta())
            reps.forEach((r, i) => ds.forEach((d, j) => i !== j && r.applyDelta(d)))
          }
          for (const [r, key, delta, dt, doRound] of ups) {
            clock.advance(dt)
            reps[r].update(KEYS[key], delta)
            if (doRound) round()
          }
          round()
          const same = KEYS.every(
            (k) => near(reps[0].estimate(k), reps[1].estimate(k)) && near(reps[0].estimate(k), reps[2].estimate(k)),
          )
          const silent = reps.every((r) => r.takeDelta().scores.every((v) => Math.abs(v) < 1e-9))
          return same && silent
        },
      ),
      { seed: 6, numRuns: 200 },
    )
  },
)

t.test("linear decay: a delta in transit joins the receiver's bucket at the time it was taken", async (t) => {
  const clock = new FakeClock(0)
  const cfg = { levels: 2, cellsPerLevel: 64, decay: linear(1), hi: 100, hasher: murmur3(2), clock }
  const a = new Sketch(cfg)
  const b = new Sketch(cfg)
  a.update('k', 5)
  b.applyDelta(a.takeDelta()) // both 5 at t=0
  clock.set(2_000)
  a.update('k', 4) // a: 3 + 4 = 7
  const d = a.takeDelta() // +4 at t=2 s
  clock.set(3_000)
  b.applyDelta(d) // b's bucket was never empty in transit: 5 − 3 + 4, as one bucket fed 5 at 0 s and 4 at 2 s
  t.equal(b.estimate('k'), 6)
  t.equal(a.estimate('k'), 6, 'a: 7 − 1: both replicas agree')
  t.ok(b.takeDelta().isEmpty(), 'nothing echoes')

  // a delta of +4 taken at t=0 and applied at t=3 s, against a single token bucket
  // (rate 1/s) that got the receiver's history and the +4 at t=0:
  const rows = [
    { receiver: 0, expected: 1 }, // empty bucket: 4 − 3
    { receiver: 10, expected: 11 }, // 10 + 4 − 3: the bucket never emptied
    { receiver: 2, expected: 3 }, // 2 + 4 − 3
    { receiver: 0.5, expected: 1.5 }, // 0.5 + 4 − 3
  ]
  for (const row of rows) {
    clock.set(100_000)
    const src = new Sketch(cfg)
    const dst = new Sketch(cfg)
    if (row.receiver > 0) dst.update('k', row.receiver)
    src.update('k', 4)
    const delta = src.takeDelta()
    clock.advance(3_000)
    dst.applyDelta(delta)
    t.equal(dst.estimate('k'), row.expected, `receiver held ${row.receiver}: ${row.expected}`)
  }
  fc.assert(
    fc.property(
      fc.double({ min: 0, max: 40, noNaN: true }),
      fc.double({ min: 0, max: 40, noNaN: true }),
      fc.integer({ min: 0, max: 30_000 }),
      fc.integer({ min: 0, max: 30_000 }),
      (held, x, heldAgeMs, transitMs) => {
        clock.advance(200_000)
        const dst = new Sketch(cfg)
        const src = new Sketch(cfg)
        dst.update('k', held)
        clock.advance(heldAgeMs)
        src.update('k', x)
        const delta = src.takeDelta()
        clock.advance(transitMs)
        dst.applyDelta(delta)
        const bucketAtTake = Math.max(0, held - heldAgeMs / 1000)
        const single = Math.max(0, bucketAtTake + x - transitMs / 1000)
        return near(dst.estimate('k'), single)
      },
    ),
    { seed: 12, numRuns: 300 },
  )
})

t.test(
  'linear decay: a delta in transit adds the same amount to view and baseline, so the receiver never echoes it',
  async (t) => {
    const clock = new FakeClock(0)
    const cfg = { levels: 1, cellsPerLevel: 1, decay: linear(1), hi: 100, hasher: murmur3(1), clock }
    const a = new Sketch(cfg)
    const b = new Sketch(cfg)
    b.update('k', 10) // b's own, not yet shipped
    a.update('k', 4)
    const d = a.takeDelta() // +4 at t=0
    clock.set(3_000)
    b.applyDelta(d) // view: 10 − 3 + 4 (its bucket never emptied)
    t.equal(b.estimate('k'), 11)
    const back = b.takeDelta()
    t.equal(back.scores[0], 7, 'b ships only its own 10 drained for 3 s')
    a.applyDelta(back)
    t.equal(a.estimate('k'), 8, 'a: 4 − 3 + 7')
  },
)

t.test(
  'linear decay: several deltas in transit to one cell land between separate drains and no drain, in any order',
  async () => {
    // spec/rotator.md § 4: the result, like a single token bucket fed every delta at its own
    // time, lies in [receiver drained + Σ dᵢ drained over Δᵢ, receiver drained + Σ dᵢ].
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 20, noNaN: true }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 20, noNaN: true }), fc.integer({ min: 0, max: 20_000 }), fc.nat()), {
          minLength: 1,
          maxLength: 6,
        }),
        fc.integer({ min: 0, max: 20_000 }),
        (held, ds, extraMs) => {
          const clock = new FakeClock(0)
          const cfg = { levels: 1, cellsPerLevel: 1, decay: linear(1), hi: 1e9, hasher: murmur3(1), clock }
          const dst = new Sketch(cfg)
          dst.update('k', held)
          const deltas = ds.map(([x, atMs]) => {
            clock.set(atMs)
            const s = new Sketch(cfg)
            s.update('k', x)
            return s.takeDelta()
          })
          const applyAt = Math.max(...ds.map((d) => d[1])) + extraMs
          clock.set(applyAt)
          const order = ds
            .map((d, i) => [d[2], i])
            .sort((a, b) => a[0] - b[0])
            .map((p) => p[1])
          for (const i of order) dst.applyDelta(deltas[i])
          const own = Math.max(0, held - applyAt / 1000)
          const separate = own + ds.reduce((acc, [x, atMs]) => acc + Math.max(0, x - (applyAt - atMs) / 1000), 0)
          const undrained = own + ds.reduce((acc, [x]) => acc + x, 0)
          const got = dst.estimate('k')
          return got >= separate - 1e-9 && got <= undrained + 1e-9
        },
      ),
      { seed: 13, numRuns: 300 },
    )
  },
)

t.test('markSynced: a loaded fleet snapshot is not shipped back; without it, it is', async (t) => {
  const clock = new FakeClock(0)
  const cfg = { levels: 2, cellsPerLevel: 32, decay: none(), hi: 1e9, hasher: murmur3(3), clock }
  const fleet = new Sketch(cfg)
  fleet.update('k', 10)
  const snapshot = serializeAtWall(fleet, WALL)
  const joined = Sketch.deserialize(snapshot, { clock, wallMs: WALL })
  joined.markSynced()
  t.ok(joined.takeDelta().isEmpty(), 'after markSynced nothing is pending')
  joined.update('k', 1)
  const d = joined.takeDelta()
  fleet.applyDelta(d)
  t.equal(fleet.estimate('k'), 11)
  const naive = Sketch.deserialize(snapshot, { clock, wallMs: WALL })
  const all = naive.takeDelta()
  const other = new Sketch(cfg)
  other.applyDelta(all)
  t.equal(other.estimate('k'), 10, 'without markSynced the loaded state counts as local')
})

t.test('applyDelta refuses incompatible deltas and bad values', async (t) => {
  const clock = new FakeClock(0)
  const a = new Sketch({ hasher: murmur3(1), clock })
  const b = new Sketch({ hasher: murmur3(2), clock })
  const c = new Sketch({ hasher: murmur3(1), clock, levels: 3 })
  b.update('k', 1)
  c.update('k', 1)
  t.throws(() => a.applyDelta(b.takeDelta()), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /seed/ })
  t.throws(() => a.applyDelta(c.takeDelta()), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /levels/ })
  t.throws(() => a.applyDelta({} as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.throws(() => a.applyDelta(new Uint8Array(10)), { code: 'ERR_GRUDGE_FORMAT_TRUNCATED' })
  t.equal(a.estimate('k'), 0, 'nothing was applied')
})

t.test('Rotator deltas per generation: a fleet rotating in step converges on the sum of all updates', async () => {
  type RCmd =
    | { kind: 'update'; r: number; key: number; delta: number }
    | { kind: 'advance'; ms: number }
    | { kind: 'sync'; r: number; bytes: boolean }
    | { kind: 'rotate' }
  const rcmd: fc.Arbitrary<RCmd> = fc.oneof(
    fc.record({
      kind: fc.constant('update' as const),
      r: fc.integer({ min: 0, max: 2 }),
      key: fc.integer({ min: 0, max: 4 }),
      delta: fc.double({ min: 0, max: 100, noNaN: true }),
    }),
    fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
    fc.record({ kind: fc.constant('sync' as const), r: fc.integer({ min: 0, max: 2 }), bytes: fc.boolean() }),
    fc.constant({ kind: 'rotate' as const }),
  )
  fc.assert(
    fc.property(fc.array(rcmd, { maxLength: 50 }), (cmds) => {
      const clock = new FakeClock(0)
      const ticker = new FakeTicker()
      const mk = (): Rotator =>
        new Rotator({
          sketch: { levels: 2, cellsPerLevel: 16, decay: exponential(0.1), hi: 1e12 },
          generations: 3,
          periodMs: 10_000,
          seed: 21,
          clock,
          ticker,
        })
      const reps = [mk(), mk(), mk()]
      const oracle = mk()
      const sync = (r: number, bytes: boolean): void => {
        const d = reps[r].takeDelta()
        for (let j = 0; j < 3; j++)
          if (j !== r) reps[j].applyDelta(bytes ? serializeAtWall(d, WALL) : d, { wallMs: WALL })
      }
      for (const c of cmds) {
        if (c.kind === 'update') {
          reps[c.r].update(KEYS[c.key], c.delta)
          oracle.update(KEYS[c.key], c.delta)
        } else if (c.kind === 'advance') clock.advance(c.ms)
        else if (c.kind === 'sync') sync(c.r, c.bytes)
        else {
          // replicas sync before the fleet-wide rotation, so no generation's delta is lost
          for (let r = 0; r < 3; r++) sync(r, false)
          ticker.tick()
        }
      }
      for (let r = 0; r < 3; r++) sync(r, r === 1)
      const ok = reps.every(
        (rep) => rep.rotations === oracle.rotations && KEYS.every((k) => near(rep.estimate(k), oracle.estimate(k))),
      )
      for (const r of [...reps, oracle]) r.close()
      return ok
    }),
    { seed: 8, numRuns: 120 },
  )
})

t.test('Rotator deltas: generations retired or not yet created are skipped; other seeds are refused', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const mk = (seed: number): Rotator =>
    new Rotator({
      sketch: { levels: 2, cellsPerLevel: 64, hasher: murmur3(1) },
      generations: 3,
      periodMs: 1_000,
      seed,
      clock,
      ticker,
    })
  const a = mk(5)
  const b = mk(5)
  a.update('k', 2)
  a.rotate() // a holds generations 1, 2, 3; b holds 0, 1, 2
  a.update('k', 1)
  const d = a.takeDelta()
  t.equal(d.rotations, 1)
  t.equal(b.applyDelta(d), 2, 'generations 1 and 2 applied, 3 does not exist at b yet')
  t.equal(b.estimate('k'), 0, "b's oldest (generation 0) got nothing from a")
  b.rotate()
  t.equal(b.estimate('k'), 3, 'generation 1 holds 2 + 1')
  t.equal(RotatorDelta.deserialize(serializeAtWall(d, WALL), { wallMs: WALL, clock }).deltas.length, 3)
  const back = b.takeDelta()
  t.equal(a.applyDelta(back), 3)
  t.equal(a.estimate('k'), 3, 'nothing echoed back')
  const c = mk(6)
  t.throws(() => c.applyDelta(a.takeDelta()), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /seed/ })
  const e = new Rotator({
    sketch: { levels: 3, cellsPerLevel: 64 },
    generations: 3,
    periodMs: 1_000,
    seed: 5,
    clock,
    ticker,
  })
  t.throws(() => e.applyDelta(a.takeDelta()), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /levels/ })
  t.throws(() => Rotator.deserialize(serializeAtWall(d, WALL)), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /delta/,
  })
  for (const r of [a, b, c, e]) r.close()
  t.equal(ticker.size, 0)
})

t.test('Rotator.merge: generation by generation, same seeds and rotation count required', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const mk = (seed?: number): Rotator =>
    new Rotator({
      sketch: { levels: 2, cellsPerLevel: 64, decay: none(), hasher: murmur3(1) },
      generations: 2,
      periodMs: 1_000,
      seed,
      clock,
      ticker,
    })
  const a = mk(3)
  const b = mk(3)
  a.update('k', 2)
  b.update('k', 5)
  a.merge(b)
  t.equal(a.estimate('k'), 7)
  t.equal(b.estimate('k'), 5)
  a.rotate()
  t.equal(a.estimate('k'), 7, 'the successor generation was merged too')
  t.throws(() => a.merge(b), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: /rotations/ })
  t.throws(() => a.merge(a), { code: 'ERR_GRUDGE_MERGE_SELF' })
  t.throws(() => a.merge(mk()), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE' })
  for (const r of [a, b]) r.close()
})

t.test('RotatorDelta.isEmpty: empty after a sync, not after an update; applyDelta refuses other values', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const mk = (): Rotator =>
    new Rotator({
      sketch: { levels: 2, cellsPerLevel: 16, hi: 1e9 },
      generations: 2,
      periodMs: 10_000,
      seed: 5,
      clock,
      ticker,
    })
  const a = mk()
  const b = mk()
  t.ok(a.takeDelta().isEmpty(), 'a fresh rotator has nothing to ship')
  a.update('k', 3)
  const d = a.takeDelta()
  t.notOk(d.isEmpty(), 'an update is something to ship')
  t.equal(b.applyDelta(d), 2, 'both generations applied')
  t.equal(b.estimate('k'), 3)
  t.ok(a.takeDelta().isEmpty(), 'taken once: nothing new since')
  for (const bad of [{}, a.takeDelta().deltas[0], 'bytes']) {
    t.throws(() => b.applyDelta(bad as never), {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /applyDelta: expected a RotatorDelta or its bytes, received another value/,
    })
  }
  t.equal(b.estimate('k'), 3, 'a refused delta changes nothing')
})

t.test('deserializing a delta refuses an unknown option', async (t) => {
  const clock = new FakeClock(0)
  const s = new Sketch({ seed: 1, clock, decay: none() })
  s.update('a', 1)
  const bytes = serializeAtWall(s.takeDelta(), 0)
  t.throws(
    () => SketchDelta.deserialize(bytes, typo<DeserializeOptions>({ wallms: 0 })),
    unknownOption('wallms', 'wallMs'),
  )
  t.doesNotThrow(() => SketchDelta.deserialize(bytes, { clock, wallMs: 0 }))
  const ticker = new FakeTicker()
  const r = new Rotator({ sketch: { decay: none() }, periodMs: 1000, clock, ticker, seed: 2 })
  r.update('a', 1)
  const rbytes = serializeAtWall(r.takeDelta(), 0)
  r.close()
  t.throws(
    () => RotatorDelta.deserialize(rbytes, typo<DeserializeOptions>({ clocks: clock })),
    unknownOption('clocks', 'clock'),
  )
  t.doesNotThrow(() => RotatorDelta.deserialize(rbytes, { clock, wallMs: 0 }))
})
