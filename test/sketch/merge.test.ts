import t from 'tap'
import fc from 'fast-check'
import { Sketch, exponential, linear, none, type SketchOptions } from '../../src/index.js'
import { murmur3, sipHash } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'

const near = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))

t.test('incompatible sketches are refused naming what differs; a sketch cannot merge itself', async (t) => {
  const base: SketchOptions = {
    levels: 3,
    cellsPerLevel: 32,
    decay: exponential(0.1),
    lo: -1,
    hi: 50,
    aggregator: 'min',
    hasher: murmur3(5),
  }
  const a = new Sketch(base)
  const variants: [string, SketchOptions][] = [
    ['levels', { ...base, levels: 4 }],
    ['cellsPerLevel', { ...base, cellsPerLevel: 33 }],
    ['decay', { ...base, decay: linear(0.1) }],
    ['decay rate', { ...base, decay: exponential(0.2) }],
    ['lo', { ...base, lo: -2 }],
    ['hi', { ...base, hi: 51 }],
    ['aggregator', { ...base, aggregator: 'max' }],
    ['hasher', { ...base, hasher: sipHash(5) }],
    ['seed', { ...base, hasher: murmur3(6) }],
  ]
  for (const [field, config] of variants) {
    const b = new Sketch(config)
    t.notOk(a.isCompatible(b), `${field}: not compatible`)
    t.throws(
      () => a.merge(b),
      { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE', message: new RegExp(`different ${field}:`) },
      `${field}: merge refused`,
    )
  }
  t.ok(a.isCompatible(new Sketch(base)), 'same config and seed')
  t.throws(() => a.merge(a), { code: 'ERR_GRUDGE_MERGE_SELF' })
  t.throws(() => a.merge({} as never), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE' })
})

/** Random update histories over a few keys, split between two sketches. */
const history = fc.array(
  fc.record({
    key: fc.integer({ min: 0, max: 5 }),
    delta: fc.double({ min: 0, max: 100, noNaN: true }),
    dtMs: fc.integer({ min: 0, max: 5_000 }),
    side: fc.integer({ min: 0, max: 2 }),
  }),
  { maxLength: 40 },
)

for (const decay of [exponential(0.3), none()]) {
  t.test(`${decay.kind} decay: merge equals one sketch that saw every update (linearity)`, async () => {
    fc.assert(
      fc.property(history, fc.integer({ min: 0, max: 10_000 }), (ops, tailMs) => {
        const clock = new FakeClock(1_000)
        const cfg = { levels: 3, cellsPerLevel: 16, decay, hi: 1e12, hasher: murmur3(11), clock }
        const parts = [new Sketch(cfg), new Sketch(cfg), new Sketch(cfg)]
        const all = new Sketch(cfg)
        for (const op of ops) {
          clock.advance(op.dtMs)
          parts[op.side].update(`k${op.key}`, op.delta)
          all.update(`k${op.key}`, op.delta)
        }
        clock.advance(tailMs)
        parts[0].merge(parts[1])
        parts[0].merge(parts[2])
        for (let k = 0; k < 6; k++) if (!near(parts[0].estimate(`k${k}`), all.estimate(`k${k}`))) return false
        return true
      }),
      { seed: 42, numRuns: 200 },
    )
  })
}

t.test('merge order does not matter (exponential, any permutation of three sources)', async () => {
  fc.assert(
    fc.property(history, (ops) => {
      const clock = new FakeClock(0)
      const cfg = { levels: 2, cellsPerLevel: 8, decay: exponential(0.05), hi: 1e12, hasher: murmur3(2), clock }
      const src = [new Sketch(cfg), new Sketch(cfg), new Sketch(cfg)]
      for (const op of ops) {
        clock.advance(op.dtMs)
        src[op.side].update(`k${op.key}`, op.delta)
      }
      const results: number[][] = []
      for (const order of [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
      ]) {
        const acc = new Sketch(cfg)
        for (const i of order) acc.merge(src[i])
        results.push([0, 1, 2, 3, 4, 5].map((k) => acc.estimate(`k${k}`)))
      }
      return results.every((r) => r.every((v, k) => near(v, results[0][k])))
    }),
    { seed: 7, numRuns: 150 },
  )
})

t.test('merge clamps to [lo, hi] and leaves the source unchanged', async (t) => {
  const clock = new FakeClock(0)
  const cfg = { levels: 2, cellsPerLevel: 64, hi: 10, lo: -3, hasher: murmur3(2), clock }
  const a = new Sketch(cfg)
  const b = new Sketch(cfg)
  const [ck, cn] = [a.estimateDetailed('k').cells, a.estimateDetailed('n').cells]
  t.ok(ck[0] !== cn[0] && ck[1] !== cn[1], 'precondition: k and n share no cell')
  a.update('k', 7)
  b.update('k', 6)
  a.update('n', -2)
  b.update('n', -2)
  a.merge(b)
  t.equal(a.estimate('k'), 10, '7 + 6 clamped to hi')
  t.equal(a.estimate('n'), -3, '−2 − 2 clamped to lo')
  t.equal(b.estimate('k'), 6)
  t.equal(b.estimate('n'), -2)
})

t.test('at one instant, clamping at hi does not depend on merge order when every score is ≥ 0', async (t) => {
  const clock = new FakeClock(0)
  const cfg = { levels: 1, cellsPerLevel: 1, hi: 10, hasher: murmur3(1), clock }
  const vals = [4, 5, 6]
  for (const order of [
    [0, 1, 2],
    [1, 2, 0],
    [2, 0, 1],
    [2, 1, 0],
  ]) {
    const src = vals.map((v) => {
      const s = new Sketch(cfg)
      s.update('k', v)
      return s
    })
    const acc = new Sketch(cfg)
    for (const i of order) acc.merge(src[i])
    t.equal(acc.estimate('k'), 10, `order ${order.join(',')}: min(hi, 4 + 5 + 6)`)
  }
})

t.test('merge decays each side on its own clock', async (t) => {
  const ca = new FakeClock(100_000)
  const cb = new FakeClock(0)
  const a = new Sketch({ decay: exponential(Math.LN2), hasher: murmur3(4), clock: ca }) // half-life 1 s
  const b = new Sketch({ decay: exponential(Math.LN2), hasher: murmur3(4), clock: cb })
  b.update('k', 8)
  cb.set(2_000) // two half-lives on b's clock
  a.merge(b)
  t.ok(near(a.estimate('k'), 2), "8 → 2 on b's clock, added at a's now")
})

t.test("linear decay: merge charges the source's current debt to the target at the merge instant", async (t) => {
  // spec/rotator.md: merged(t) = max(0, a(t₀) + b(t₀) − rate·(t − t₀)) for t ≥ t₀ (one drain
  // over the sum, like a single token bucket), hence ≥ a(t) + b(t) drained separately.
  const clock = new FakeClock(0)
  const cfg = { levels: 2, cellsPerLevel: 64, decay: linear(1), hi: 100, hasher: murmur3(8), clock }
  const a = new Sketch(cfg)
  const b = new Sketch(cfg)
  a.update('k', 10)
  clock.set(3_000)
  b.update('k', 5)
  clock.set(4_000)
  // a(4 s) = 6, b(4 s) = 4
  a.merge(b)
  t.equal(a.estimate('k'), 10, 'the sum at the merge instant')
  clock.set(7_000)
  t.equal(a.estimate('k'), 7, 'one drain of 1/s over the sum')
  t.equal(b.estimate('k'), 1, 'b drained alone')
  fc.assert(
    fc.property(
      fc.double({ min: 0, max: 50, noNaN: true }),
      fc.double({ min: 0, max: 50, noNaN: true }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      (x, y, gapMs, laterMs) => {
        clock.advance(200_000)
        const a2 = new Sketch(cfg)
        const b2 = new Sketch(cfg)
        a2.update('k', x)
        b2.update('k', y)
        clock.advance(gapMs)
        const [ax, by] = [a2.estimate('k'), b2.estimate('k')]
        a2.merge(b2)
        clock.advance(laterMs)
        const merged = a2.estimate('k')
        const separate = Math.max(0, ax - laterMs / 1000) + Math.max(0, by - laterMs / 1000)
        return near(merged, Math.max(0, ax + by - laterMs / 1000)) && merged >= separate - 1e-9
      },
    ),
    { seed: 3, numRuns: 200 },
  )
})
