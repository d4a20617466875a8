import t from 'tap'
import { Rotator, suggestPeriodMs, linear, exponential, none } from '../../src/index.js'
import { generationSeed } from '../../src/sketch/generation-seed.js'
import { murmur3, sipHash } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import {
  ROTATOR_OPTION_KEYS,
  ROTATOR_DESERIALIZE_KEYS,
  type RotatorDeserializeOptions,
} from '../../src/sketch/shape.js'
import type { RotatorOptions, SketchOptions, DeserializeOptions } from '../../src/index.js'
import { typo, unknownOption } from '../unknown-option.js'
import { serializeAtWall } from './fixtures/serialize-at-wall.js'

/** An exact single-key token bucket (GCRA form: a debt drained at `rate` per second), the reference of the acceptance timeline. */
class TokenBucket {
  private debt = 0
  private at = 0
  constructor(private readonly ratePerSecond: number) {}
  private drain(nowMs: number): void {
    if (nowMs > this.at) {
      this.debt = Math.max(0, this.debt - (this.ratePerSecond * (nowMs - this.at)) / 1000)
      this.at = nowMs
    }
  }
  read(nowMs: number): number {
    this.drain(nowMs)
    return this.debt
  }
  tryConsume(nowMs: number, cost: number, burst: number): boolean {
    this.drain(nowMs)
    if (this.debt + cost > burst) return false
    this.debt += cost
    return true
  }
}

type Row =
  | { atMs: number; action: 'try'; cost: number; limit: number; times: number; expected: boolean }
  | { atMs: number; action: 'estimate'; expected: number }
  | { atMs: number; action: 'tick'; expectedRotations: number }

t.test(
  'acceptance timeline: rate 1/s, hi = burst = 10, period 15 s, 2 generations, against a token bucket',
  async (t) => {
    // The rows are the timeline; the expected numbers are worked by hand:
    // t=5 s: 10 − 5·1 = 5; t=15 s: 9 taken at 14 s, drained 1 s → 8; t=30 s: 8 − 15 → 0.
    const rows: Row[] = [
      { atMs: 0, action: 'try', cost: 1, limit: 10, times: 10, expected: true },
      { atMs: 0, action: 'try', cost: 1, limit: 10, times: 1, expected: false },
      { atMs: 5_000, action: 'estimate', expected: 5 },
      { atMs: 14_000, action: 'estimate', expected: 0 },
      { atMs: 14_000, action: 'try', cost: 1, limit: 10, times: 9, expected: true },
      { atMs: 15_000, action: 'tick', expectedRotations: 1 },
      { atMs: 15_000, action: 'estimate', expected: 8 },
      { atMs: 15_000, action: 'try', cost: 5, limit: 10, times: 1, expected: false },
      { atMs: 30_000, action: 'tick', expectedRotations: 2 },
      { atMs: 30_000, action: 'estimate', expected: 0 },
      { atMs: 30_000, action: 'try', cost: 10, limit: 10, times: 1, expected: true },
      { atMs: 31_000, action: 'estimate', expected: 9 },
    ]
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const r = new Rotator({
      sketch: { decay: linear(1), hi: 10, levels: 4, cellsPerLevel: 256 },
      generations: 2,
      periodMs: 15_000,
      clock,
      ticker,
    })
    const ref = new TokenBucket(1)
    for (const row of rows) {
      clock.set(row.atMs)
      if (row.action === 'tick') {
        ticker.tick()
        t.equal(r.rotations, row.expectedRotations, `t=${row.atMs}: rotations`)
      } else if (row.action === 'estimate') {
        const got = r.estimate('k')
        t.equal(got, row.expected, `t=${row.atMs}: estimate reads ${row.expected}`)
        t.equal(got, ref.read(row.atMs), `t=${row.atMs}: estimate equals the token bucket`)
      } else {
        for (let i = 0; i < row.times; i++) {
          const want = ref.tryConsume(row.atMs, row.cost, row.limit)
          t.equal(want, row.expected, `t=${row.atMs}: reference tryConsume #${i + 1}`)
          t.equal(
            r.tryUpdate('k', row.cost, row.limit),
            row.expected,
            `t=${row.atMs}: tryUpdate(k, ${row.cost}, ${row.limit}) #${i + 1}`,
          )
        }
      }
      t.ok(r.estimate('k') >= ref.read(row.atMs), `t=${row.atMs}: never lower than the token bucket`)
    }
    r.close()
  },
)

t.test('amnesty guard: linear decay needs (N − 1)·periodMs ≥ hi / rate · 1000', async (t) => {
  const ticker = new FakeTicker()
  const sketch = { decay: linear(2), hi: 30 } // drains a full debt in 15 s
  t.throws(() => new Rotator({ sketch, periodMs: 14_999, ticker }), {
    code: 'ERR_GRUDGE_ROTATOR_AMNESTY',
    message: /expected ≥ 15000 ms/,
  })
  t.throws(() => new Rotator({ sketch, generations: 4, periodMs: 4_999, ticker }), {
    code: 'ERR_GRUDGE_ROTATOR_AMNESTY',
    message: /expected ≥ 5000 ms/,
  })
  t.doesNotThrow(() => new Rotator({ sketch, periodMs: 15_000, ticker }).close())
  t.doesNotThrow(() => new Rotator({ sketch, generations: 4, periodMs: 5_000, ticker }).close())
  // the default hi (MAX_VALUE) cannot drain in any finite period: the message says to bound it
  t.throws(() => new Rotator({ sketch: { decay: linear(1) }, periodMs: 1e9, ticker }), {
    code: 'ERR_GRUDGE_ROTATOR_AMNESTY',
    message: /set sketch\.hi/,
  })
  // other decays are not guarded
  t.doesNotThrow(() => new Rotator({ sketch: { decay: exponential(0.001), hi: 10 }, periodMs: 1, ticker }).close())
  t.doesNotThrow(() => new Rotator({ sketch: { decay: none(), hi: 10 }, periodMs: 1, ticker }).close())
  t.equal(ticker.size, 0, 'every rotator built here was closed')
})

t.test('suggestPeriodMs(hi, rate, generations) = ceil(hi / rate · 1000 / (N − 1))', async (t) => {
  t.equal(suggestPeriodMs(10, 1, 2), 10_000)
  t.equal(suggestPeriodMs(30, 2, 4), 5_000)
  t.equal(suggestPeriodMs(10, 3, 2), 3_334) // 3333.33… rounded up
  t.equal(suggestPeriodMs(1, 1000, 3), 1) // 0.5 ms rounded up
  const ticker = new FakeTicker()
  for (const [hi, rate, n] of [
    [10, 3, 2],
    [7, 0.3, 3],
    [100, 7, 5],
  ] as const) {
    const p = suggestPeriodMs(hi, rate, n)
    t.doesNotThrow(
      () => new Rotator({ sketch: { decay: linear(rate), hi }, generations: n, periodMs: p, ticker }).close(),
      `period ${p} passes`,
    )
    t.throws(() => new Rotator({ sketch: { decay: linear(rate), hi }, generations: n, periodMs: p - 1, ticker }), {
      code: 'ERR_GRUDGE_ROTATOR_AMNESTY',
    })
  }
  t.throws(() => suggestPeriodMs(0, 1, 2), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"hi"/ })
  t.throws(() => suggestPeriodMs(10, NaN, 2), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"ratePerSecond"/ })
  t.throws(() => suggestPeriodMs(10, 1, 1), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"generations"/ })
  t.throws(() => suggestPeriodMs(10, 1, 2.5), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"generations"/ })
})

t.test('construction validates its options', async (t) => {
  const ticker = new FakeTicker()
  t.throws(() => new Rotator(null as never), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.throws(() => new Rotator({ periodMs: 10 } as never), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"sketch"/ })
  t.throws(() => new Rotator({ sketch: {}, generations: 1, periodMs: 10, ticker }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"generations"/,
  })
  t.throws(() => new Rotator({ sketch: {}, periodMs: 0, ticker }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"periodMs"/,
  })
  t.throws(() => new Rotator({ sketch: {}, periodMs: Infinity, ticker }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"periodMs"/,
  })
  t.throws(() => new Rotator({ sketch: {}, periodMs: 10, ticker: {} as never }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"ticker"/,
  })
  t.throws(() => new Rotator({ sketch: {}, periodMs: 10, ticker, seed: -1 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"seed"/,
  })
  t.throws(() => new Rotator({ sketch: { levels: 0 }, periodMs: 10, ticker }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"levels"/,
  })
  t.equal(ticker.size, 0, 'a failed construction starts no ticker task')
})

t.test(
  'close() is idempotent, cancels the ticker task, and any later use throws ERR_GRUDGE_ROTATOR_CLOSED',
  async (t) => {
    const ticker = new FakeTicker()
    const clock = new FakeClock(0)
    const other = new Rotator({ sketch: {}, periodMs: 1000, ticker, clock, seed: 1 })
    const r = new Rotator({ sketch: {}, periodMs: 1000, ticker, clock, seed: 1 })
    t.equal(ticker.size, 2)
    t.same(ticker.periods(), [1000, 1000], 'the ticker runs every periodMs')
    r.close()
    t.equal(ticker.size, 1, 'close cancels its task')
    t.doesNotThrow(() => r.close(), 'a second close does nothing')
    t.equal(ticker.size, 1)
    ticker.tick()
    t.equal(r.rotations, 0, 'a closed rotator is no longer rotated')
    t.equal(other.rotations, 1)
    const closed = { code: 'ERR_GRUDGE_ROTATOR_CLOSED' }
    t.throws(() => r.update('k', 1), closed)
    t.throws(() => r.estimate('k'), closed)
    t.throws(() => r.updateAndEstimate('k', 1), closed)
    t.throws(() => r.tryUpdate('k', 1, 2), closed)
    t.throws(() => r.estimateDetailed('k'), closed)
    t.throws(() => r.rotate(), closed)
    t.throws(() => r.rotateTo(5), closed)
    t.throws(() => r.serialize(), closed)
    t.throws(() => r.takeDelta(), closed)
    t.throws(() => r.applyDelta(other.takeDelta()), closed)
    t.throws(() => r.markSynced(), closed)
    t.throws(() => r.merge(other), closed)
    t.throws(() => other.merge(r), closed, 'merging a closed rotator in is refused too')
    other.close()
  },
)

t.test("the default ticker is an unref'd setInterval that close() clears", async (t) => {
  const realSet = globalThis.setInterval
  const realClear = globalThis.clearInterval
  const started: NodeJS.Timeout[] = []
  const cleared: unknown[] = []
  globalThis.setInterval = ((fn: () => void, ms: number) => {
    const timer = realSet(fn, ms)
    started.push(timer)
    return timer
  }) as typeof setInterval
  globalThis.clearInterval = ((timer: NodeJS.Timeout) => {
    cleared.push(timer)
    realClear(timer)
  }) as typeof clearInterval
  try {
    const r = new Rotator({ sketch: {}, periodMs: 60_000 })
    t.equal(started.length, 1, 'one interval started')
    t.equal(started[0].hasRef(), false, 'it does not keep the process alive')
    r.close()
    r.close()
    t.same(cleared, [started[0]], 'close cleared exactly that interval, once')
  } finally {
    globalThis.setInterval = realSet
    globalThis.clearInterval = realClear
  }
})

t.test('reads answer from the oldest generation, writes warm the others, a rotation appends a fresh one', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({ sketch: { levels: 2, cellsPerLevel: 64 }, generations: 3, periodMs: 1000, clock, ticker })
  r.update('a', 5) // in all three generations
  ticker.tick()
  r.update('b', 2) // in generations 1, 2, 3
  t.equal(r.estimate('a'), 5)
  t.equal(r.estimate('b'), 2)
  ticker.tick()
  t.equal(r.estimate('a'), 5, 'generation 2 was warmed at t=0')
  ticker.tick()
  t.equal(r.estimate('a'), 0, 'after N rotations nothing written before the first is left')
  t.equal(r.estimate('b'), 2)
  ticker.tick()
  t.equal(r.estimate('b'), 0)
  t.equal(r.rotations, 4)
  t.equal(r.updateAndEstimate('c', 3), 3)
  t.equal(r.estimateDetailed('c').value, 3)
  t.equal(r.sizeBytes(), 3 * 2 * 64 * 16)
  r.close()
})

t.test('tryUpdate decides on the oldest generation and writes the others only when it admits', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 64, hi: 100 },
    generations: 2,
    periodMs: 1000,
    clock,
    ticker,
  })
  t.equal(r.tryUpdate('k', 6, 10), true)
  t.equal(r.tryUpdate('k', 6, 10), false, '12 > 10 on the oldest')
  ticker.tick()
  t.equal(r.estimate('k'), 6, 'the refused 6 was not written to the successor')
  r.close()
})

t.test('a master seed derives the generation seeds, so replicas share them', async (t) => {
  const ticker = new FakeTicker()
  const a = new Rotator({ sketch: { hasher: sipHash() }, generations: 3, periodMs: 1000, ticker, seed: 42 })
  const b = new Rotator({ sketch: { hasher: sipHash(), seed: 42 }, generations: 3, periodMs: 1000, ticker })
  const c = new Rotator({ sketch: { hasher: sipHash() }, generations: 3, periodMs: 1000, ticker })
  t.ok(a.isCompatible(b), 'same master seed (as seed or as sketch.seed): same generation seeds')
  t.notOk(a.isCompatible(c), 'random seeds differ')
  t.notOk(a.isCompatible(a), 'not with itself')
  const s0 = generationSeed(a.seed!, 0)
  const s1 = generationSeed(a.seed!, 1)
  t.equal(s0.length, 16)
  t.not(Buffer.from(s0).toString('hex'), Buffer.from(s1).toString('hex'), 'indexes get different seeds')
  t.same(generationSeed(a.seed!, 7), generationSeed(b.seed!, 7))
  a.rotate()
  t.notOk(a.isCompatible(b), 'rotation counts differ')
  b.rotateTo(1)
  t.ok(a.isCompatible(b), 'rotateTo aligns them')
  b.rotateTo(1)
  t.equal(b.rotations, 1, 'rotateTo never goes back or repeats')
  a.rotateTo(10)
  b.rotateTo(10)
  t.equal(a.rotations, 10)
  t.ok(a.isCompatible(b), 'a jump of ≥ N rotations derives the same fresh seeds')
  t.throws(() => a.rotateTo(-1), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  const m = new Rotator({ sketch: { hasher: murmur3() }, generations: 3, periodMs: 1000, ticker, seed: 42 })
  t.notOk(a.isCompatible(m), 'another hasher')
  for (const r of [a, b, c, m]) r.close()
})

t.test('replicas driven by rotateTo(floor(sharedTimeMs / periodMs)) hold the same generations', async (t) => {
  const never = { every: () => ({ cancel() {} }) }
  const mk = (): Rotator =>
    new Rotator({ sketch: { levels: 2, cellsPerLevel: 32 }, generations: 3, periodMs: 10_000, seed: 99, ticker: never })
  const a = mk()
  const b = mk()
  const shared = 1_750_000_123_456 // e.g. Redis TIME in ms
  a.rotateTo(Math.floor(shared / 10_000))
  b.rotateTo(Math.floor((shared + 2_000) / 10_000)) // b looks 2 s later, same period
  t.equal(a.rotations, 175_000_012)
  t.ok(a.isCompatible(b), 'same index, same seeds')
  a.update('k', 1)
  t.equal(b.applyDelta(a.takeDelta()), 3)
  t.equal(b.estimate('k'), 1)
  a.close()
  b.close()
})

t.test('merge refuses a value that is not a Rotator, and the rotator itself', async (t) => {
  const ticker = new FakeTicker()
  const clock = new FakeClock(0)
  const r = new Rotator({ sketch: { levels: 2, cellsPerLevel: 16 }, periodMs: 10_000, seed: 3, clock, ticker })
  r.update('k', 2)
  for (const bad of [{}, null, r.serialize()]) {
    t.throws(() => r.merge(bad as never), {
      code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
      message: /rotator: expected a Rotator to merge, received another value/,
    })
  }
  t.throws(() => r.merge(r), { code: 'ERR_GRUDGE_MERGE_SELF' })
  t.equal(r.estimate('k'), 2, 'a refused merge changes nothing')
  r.close()
})

t.test('an unknown option of the rotator or of its sketch throws naming its path; every option passes', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const sketch: SketchOptions = { levels: 2, cellsPerLevel: 16, decay: exponential(1) }
  t.throws(
    () => new Rotator(typo<RotatorOptions>({ sketch, periodMs: 1000, generation: 3, ticker })),
    unknownOption('generation', 'generations'),
  )
  t.throws(
    () => new Rotator({ sketch: typo<SketchOptions>({ level: 4 }), periodMs: 1000, ticker }),
    unknownOption('sketch.level', 'levels'),
    'the sketch option is checked with its path',
  )
  t.equal(ticker.size, 0, 'nothing was started')
  const sizing = { sizeNextGeneration: () => 64, minCellsPerLevel: 16, maxCellsPerLevel: 64 }
  const all: Required<RotatorOptions> = { sketch, generations: 3, periodMs: 1000, ticker, clock, seed: 5, sizing }
  t.same(Object.keys(all).sort(), [...ROTATOR_OPTION_KEYS].sort(), 'the test names every option')
  const r = new Rotator(all)
  const bytes = serializeAtWall(r, 0)
  r.close()

  t.throws(
    () => Rotator.deserialize(bytes, typo<DeserializeOptions>({ clock, ticker, tickr: ticker })),
    unknownOption('tickr', 'ticker'),
  )
  const read: Required<RotatorDeserializeOptions> = { clock, wallMs: 0, ticker, sizing }
  t.same(Object.keys(read).sort(), [...ROTATOR_DESERIALIZE_KEYS].sort())
  Rotator.deserialize(bytes, read).close()
})

t.test('the Rotator At forms equal the plain forms at the same time', async (t) => {
  const steps = [0, 3000, 1000, 8000, 12_000]
  const run = (explicit: boolean): number[] => {
    const clock = new FakeClock(0)
    const r = new Rotator({
      sketch: { levels: 2, cellsPerLevel: 64, decay: linear(1), hi: 10 },
      periodMs: 10_000,
      generations: 2,
      clock,
      ticker: new FakeTicker(),
      seed: 3,
    })
    const out: number[] = []
    for (const now of steps) {
      if (!explicit) clock.set(now)
      if (explicit) r.updateAt(now, 'a', 2)
      else r.update('a', 2)
      out.push(explicit ? r.estimateAt(now, 'a') : r.estimate('a'))
      out.push(explicit ? r.updateAndEstimateAt(now, 'b', 1) : r.updateAndEstimate('b', 1))
      out.push(Number(explicit ? r.tryUpdateAt(now, 'c', 3, 8) : r.tryUpdate('c', 3, 8)))
      out.push((explicit ? r.estimateDetailedAt(now, 'c') : r.estimateDetailed('c')).value)
    }
    r.close()
    return out
  }
  t.same(run(true), run(false))
})
