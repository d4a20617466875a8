import t from 'tap'
import { Rotator, linear, exponential } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import type { GenerationLoad, RotatorSizing, SizingLimitEvent } from '../../src/sketch/rotator-sizing.js'

// The self-sizing Rotator (spec/rotator.md §1 "Self-sizing"): generations of different
// cells per level, the load meter, the sizer's bounds, early growth on a load jump and the
// promotion-age guard. Every clock and ticker is fake: time moves only when told to.

const RATE = 1 // debt drained per second
const HI = 10 // the burst: hi / rate = 10 s, so periodMs 10 s passes the amnesty guard with N = 2
const PERIOD = 10_000

/** A sizer from the debt meter's load factor: cells so that ρ = cost/s / (M × rate) stays at `rho`. */
const byLoadFactor =
  (rho: number) =>
  (load: GenerationLoad): number =>
    load.costPerSecond / (load.decay.ratePerSecond * rho)

function sized(sizing: RotatorSizing, clock: FakeClock, ticker: FakeTicker, seed = 7, generations = 2): Rotator {
  return new Rotator({
    sketch: { levels: 4, decay: linear(RATE), hi: HI },
    generations,
    periodMs: PERIOD,
    clock,
    ticker,
    seed,
    sizing,
  })
}

t.test(
  'without sizing nothing changes: one ticker task per period, every generation of the sketch shape',
  async (t) => {
    const ticker = new FakeTicker()
    const r = new Rotator({
      sketch: { levels: 2, cellsPerLevel: 100, decay: linear(1), hi: 5 },
      periodMs: 5000,
      ticker,
      clock: new FakeClock(0),
    })
    t.same(ticker.periods(), [5000])
    t.notOk(r.selfSized)
    t.equal(r.measuredLoad(), undefined, 'a fixed shape measures nothing')
    ticker.tick()
    ticker.tick()
    t.equal(r.rotations, 2, 'each tick rotates')
    t.same(r.generationCellsPerLevel, [100, 100])
    t.equal(r.resizes, 0)
    t.equal(r.sizeBytes(), 2 * 2 * 100 * 16)
    r.close()
  },
)

t.test('the meter: distinct keys by HyperLogLog within 3 σ, admitted cost per second exactly', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = sized({ sizeNextGeneration: () => 64, maxCellsPerLevel: 1024, checkEveryMs: PERIOD }, clock, ticker)
  for (let i = 0; i < 5000; i++) {
    clock.set(i) // 5,000 keys over 5 s
    r.update(`key-${i}`, 2)
    r.update(`key-${i}`, -1) // a refund: the same key, no cost
  }
  r.tryUpdate('key-0', 1000, 10) // denied: not admitted, not counted
  clock.set(5000)
  const load = r.measuredLoad()!
  const sigma = 1.04 / Math.sqrt(1024)
  t.ok(Math.abs(load.distinctKeys / 5000 - 1) < 3 * sigma, `distinct keys ${load.distinctKeys.toFixed(0)} of 5000`)
  t.equal(load.costPerSecond, (5000 * 2) / 5, 'positive deltas only, per second of the generation')
  t.equal(load.periodMs, 5000)
  t.equal(load.currentCellsPerLevel, 1024, 'no cellsPerLevel given: the first generations take the budget')
  t.same(r.measuredLoad(), load, 'reading changes nothing')
  r.close()
})

t.test('options: the budget, the minimum, the sizer and the first size are checked', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const f = () => 64
  const bad: [string, RotatorSizing, RegExp][] = [
    ['no budget', { sizeNextGeneration: f }, /sizing\.maxCellsPerLevel.*exactly one/],
    ['both budgets', { sizeNextGeneration: f, maxCellsPerLevel: 64, maxBytes: 1e6 }, /exactly one/],
    ['max not a power of two', { sizeNextGeneration: f, maxCellsPerLevel: 1000 }, /sizing\.maxCellsPerLevel/],
    ['max below min', { sizeNextGeneration: f, maxCellsPerLevel: 32 }, /≥ sizing\.minCellsPerLevel \(64\)/],
    ['min not a power of two', { sizeNextGeneration: f, minCellsPerLevel: 3, maxCellsPerLevel: 64 }, /minCells/],
    // 2048 + (2 generations + the half of one a growth holds while it folds) × 4 levels × 64 cells × 16 B = 12,288 bytes
    ['budget too small for one generation pair', { sizeNextGeneration: f, maxBytes: 12_287 }, /at least 12288 bytes/],
    ['no sizer', { maxCellsPerLevel: 64 } as RotatorSizing, /sizeNextGeneration/],
    ['check period above periodMs', { sizeNextGeneration: f, maxCellsPerLevel: 64, checkEveryMs: 20_000 }, /check/],
    ['ρ threshold 0', { sizeNextGeneration: f, maxCellsPerLevel: 64, growAtLoadFactor: 0 }, /growAtLoadFactor/],
    ['unknown key', { sizeNextGeneration: f, maxCellsPerLevel: 64, maxCells: 3 } as RotatorSizing, /sizing\.maxCells/],
  ]
  for (const [name, sizing, message] of bad) {
    t.throws(() => sized(sizing, clock, ticker), { code: 'ERR_GRUDGE_OPTION_INVALID', message }, name)
  }
  t.throws(
    () =>
      new Rotator({
        sketch: { levels: 4, cellsPerLevel: 100, decay: linear(RATE), hi: HI },
        periodMs: PERIOD,
        clock,
        ticker,
        sizing: { sizeNextGeneration: f, maxCellsPerLevel: 1024 },
      }),
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /sketch\.cellsPerLevel/ },
    'a first size that is not a power of two in [min, max]',
  )
  t.equal(ticker.size, 0, 'nothing was started')
  const r = sized({ sizeNextGeneration: f, maxBytes: 12_288 }, clock, ticker)
  t.equal(r.maxCellsPerLevel, 64, 'the largest power of two that fits the budget')
  t.same(ticker.periods(), [1000], 'the ticker runs the checks: min(1000, periodMs / 4)')
  r.close()
})

t.test('a budget in bytes is never exceeded, whatever sizes the load asks for', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const maxBytes = 1_000_000
  const wanted = [1e9, 64, 5000, 1e6, 64, 70_000]
  let i = 0
  const r = sized({ sizeNextGeneration: () => wanted[i++ % wanted.length], maxBytes }, clock, ticker)
  // (1e6 − 2048) / (2.5 × 4 × 16) = 6,237 → 4,096 cells per level
  t.equal(r.maxCellsPerLevel, 4096)
  for (let k = 0; k < 12; k++) {
    r.rotate()
    t.ok(
      r.sizeBytes() <= maxBytes,
      `after rotation ${k + 1}: ${r.sizeBytes()} B (cells + the 2,048 B meter) ≤ ${maxBytes} B`,
    )
  }
  r.close()
})

t.test(
  'sizes: rounded up to a power of two, never below the minimum, clamped at the maximum and reported once',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const events: SizingLimitEvent[] = []
    let next: unknown = 100
    const r = sized(
      {
        sizeNextGeneration: () => next as number,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 256,
        onSizingLimit: (e) => events.push(e),
      },
      clock,
      ticker,
    )
    t.same(r.generationCellsPerLevel, [256, 256])
    const steps: [unknown, number][] = [
      [100, 128], // rounded up
      [1, 16], // the minimum
      [257, 256], // above the maximum: the maximum
      [1e12, 256], // again: counted, not reported again
      [NaN, 256], // invalid: the youngest's size is kept
      ['64', 256], // a string is not a size
      [() => 1, 256],
      [64, 64],
    ]
    for (const [answer, cells] of steps) {
      next = answer
      r.rotate()
      t.equal(r.generationCellsPerLevel[1], cells, `sizer → ${String(answer)}: ${cells} cells per level`)
    }
    t.equal(events.length, 2, 'one event per kind')
    t.same(
      events.map((e) => [e.kind, e.wanted, e.usedCellsPerLevel, e.maxCellsPerLevel, e.load.reason]),
      [
        ['budget', 257, 256, 256, 'rotation'],
        ['invalid', NaN, 256, 256, 'rotation'],
      ],
    )
    t.equal(r.sizingLimitCount, 5, 'every decision that could not be honoured is counted')
    t.equal(r.resizes, 4, 'generations whose size differs from the youngest before them: 256→128→16→256→64')
    r.close()
  },
)

t.test(
  'a sizer that throws keeps the size and is reported as invalid; a throwing hook leaves the state consistent',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const boom = new Error('model failed')
    const r = sized(
      {
        sizeNextGeneration: () => {
          throw boom
        },
        maxCellsPerLevel: 128,
        onSizingLimit: () => {
          throw new Error('hook failed')
        },
      },
      clock,
      ticker,
    )
    t.throws(() => r.rotate(), /hook failed/, "the hook's own error reaches the caller")
    t.equal(r.rotations, 1, 'after the rotation was done')
    t.same(r.generationCellsPerLevel, [128, 128])
    r.rotate()
    t.equal(r.sizingLimitCount, 2)
    r.close()
  },
)

/** One key's exact debt meter: the reference (a token bucket clamped to [0, hi], drained at RATE). */
class ExactDebt {
  private debt = 0
  private at = 0
  add(nowMs: number, delta: number): void {
    this.debt = Math.min(HI, Math.max(0, this.debt - ((nowMs - this.at) * RATE) / 1000) + delta)
    this.at = nowMs
  }
  read(nowMs: number): number {
    return Math.max(0, this.debt - ((nowMs - this.at) * RATE) / 1000)
  }
}

t.test('mixed shapes keep the one-sided error: the estimate is never below the exact decayed debt', async (t) => {
  // sizes jump between 16 and 1,024 cells per level at rotations and at checks; collisions
  // are frequent at 16, so the bound is exercised, and the promotion-age guard is what keeps it
  let seed = 12345
  const rand = (): number => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return seed / 2 ** 32
  }
  for (const generations of [2, 3]) {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    // the answer is drawn once per tick, so the shrink margin's second call (a rotation asks the
    // sizer again at twice the load, spec/rotator.md "Hysteresis") sees the same answer
    let answer = 16
    let grow = false // drawn at each tick too: a check a write runs within the window sees the tick's draw
    const r = sized(
      {
        sizeNextGeneration: () => answer,
        minCellsPerLevel: 16,
        maxCellsPerLevel: 1024,
        checkEveryMs: 500,
        growEarlyWhen: () => grow,
      },
      clock,
      ticker,
      3,
      generations,
    )
    const keys = Array.from({ length: 60 }, (_, i) => `k${i}`)
    const exact = new Map(keys.map((k) => [k, new ExactDebt()]))
    let worst = Infinity
    let mixed = 0
    for (let now = 0; now < 240_000; now += 50) {
      clock.set(now)
      if (now % 500 === 0) {
        answer = rand() < 0.5 ? 16 : 1024
        grow = rand() < 0.2
        ticker.tick()
      }
      const cells = r.generationCellsPerLevel
      if (cells.some((c) => c !== cells[0])) mixed++
      const k = keys[Math.floor(rand() * keys.length)]
      const delta = 1 + Math.floor(rand() * 3)
      r.update(k, delta)
      exact.get(k)!.add(now, delta)
      if (now % 1000 === 0) {
        for (const key of keys) worst = Math.min(worst, r.estimateAt(now, key) - exact.get(key)!.read(now))
      }
    }
    t.ok(mixed > 300, `N = ${generations}: generations of different shapes for ${mixed} of 4800 steps`)
    t.ok(r.resizes >= 8, `${r.resizes} resizes`)
    t.ok(worst >= -1e-9, `N = ${generations}: estimate − exact ≥ 0 at every read (worst ${worst})`)
    r.close()
  }
})

t.test(
  'carry-forward across a shape change: a larger generation promoted holds the debt the smaller one decided on',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    // both generations small (two rotations with a small answer), then 1,024 from t = 20 s
    const small = sized(
      {
        sizeNextGeneration: (l) => (l.reason === 'rotation' && clock.now() < 20_000 ? 16 : 1024),
        minCellsPerLevel: 16,
        maxCellsPerLevel: 1024,
        growEarlyWhen: () => false,
      },
      clock,
      ticker,
    )
    small.rotate()
    small.rotate()
    t.same(small.generationCellsPerLevel, [16, 16])
    const exact = new ExactDebt()
    // rows: time (ms), what happens, then the expected reading of the oldest generation
    const rows: [number, () => unknown, unknown][] = [
      [0, () => small.tryUpdate('k', 10, HI), true],
      [20_000, () => (clock.set(20_000), ticker.tick(), small.generationCellsPerLevel), [16, 1024]],
      [25_000, () => small.tryUpdate('k', 5, HI), true], // debt 0 + 5, carried into the 1,024 generation
      [29_000, () => small.tryUpdate('k', 6, HI), true], // 5 − 4 + 6 = 7
      [29_500, () => small.tryUpdate('k', 4, HI), false], // 6.5 + 4 > 10: denied, nothing written
      [30_000, () => (clock.set(30_000), ticker.tick(), small.generationCellsPerLevel), [1024, 1024]],
      [30_000, () => small.estimate('k'), 6], // the larger generation, now deciding, read 7 − 1
    ]
    for (const [now, action, expected] of rows) {
      clock.set(now)
      const got = action()
      t.same(got, expected, `t = ${now} ms`)
      if (got === true) exact.add(now, now === 0 ? 10 : now === 25_000 ? 5 : 6)
    }
    t.equal(small.estimate('k'), exact.read(30_000), 'equal to the exact bucket (no collision for one key)')
    small.close()
  },
)

/**
 * The load jump on a fake clock: fresh keys at `before` per second, then at `after`
 * per second from `jumpAtMs`, each sending one request of cost 1 (admitted: a fresh key has
 * no debt of its own). Returns the oldest generation's cells per level at each second.
 */
function loadJump(
  r: Rotator,
  clock: FakeClock,
  ticker: FakeTicker,
  before: number,
  after: number,
  jumpAtMs: number,
  endMs: number,
): { deciding: number[]; youngest: number[]; refused: number[] } {
  const deciding: number[] = []
  const youngest: number[] = []
  const refused: number[] = []
  let key = 0
  let refusedThisSecond = 0
  for (let now = 0; now < endMs; now += 10) {
    clock.set(now)
    if (now % 1000 === 0) {
      ticker.tick()
      deciding.push(r.generationCellsPerLevel[0])
      youngest.push(r.generationCellsPerLevel[r.generations - 1])
      refused.push(refusedThisSecond)
      refusedThisSecond = 0
    }
    const perTick = ((now < jumpAtMs ? before : after) * 10) / 1000
    for (let i = 0; i < perTick; i++) if (!r.tryUpdate(`fresh-${key++}`, 1, HI)) refusedThisSecond++
  }
  return { deciding, youngest, refused }
}

t.test(
  'a load jump (200 → 2,000 fresh keys/s) starts a larger generation at the next check, not the next period',
  async (t) => {
    // sized for ρ = 0.25: 200/s → 1,024 cells per level (800 rounded up), 2,000/s → 8,192 (8,000);
    // at 2,000/s 1,024 cells run at ρ ≈ 2, where the cells fill and fresh keys are refused
    const sizing = (early: boolean): RotatorSizing => ({
      sizeNextGeneration: byLoadFactor(0.25),
      minCellsPerLevel: 64,
      maxCellsPerLevel: 65_536,
      ...(early ? {} : { growEarlyWhen: () => false }),
    })
    const jumpAtMs = 33_500 // mid-period: the rotations fall on 10, 20, 30, 40 … s
    const C = 1000 // checkEveryMs (the default for periodMs 10 s)
    const minAge = (HI / RATE) * 1000 // the amnesty guard's promotion age
    const run = (early: boolean) => {
      const clock = new FakeClock(0)
      const ticker = new FakeTicker()
      const r = new Rotator({
        sketch: { levels: 4, cellsPerLevel: 256, decay: linear(RATE), hi: HI },
        periodMs: PERIOD,
        clock,
        ticker,
        seed: 11,
        sizing: sizing(early),
      })
      const out = loadJump(r, clock, ticker, 200, 2000, jumpAtMs, 80_000)
      r.close()
      return out
    }
    const withEarly = run(true)
    const without = run(false)
    const second = (ms: number) => Math.floor(ms / 1000)
    t.equal(withEarly.deciding[second(jumpAtMs) - 1], 1024, 'before the jump the load is served by 1,024 cells')
    // the bound of spec/rotator.md: detection within 2 checks, and the check that sees it folds
    // the deciding generation too (before folding: a fresh youngest, promoted minAge + 1 check later)
    const bound = jumpAtMs + 2 * C
    const firstLarge = (xs: number[]) => xs.findIndex((c, i) => i * 1000 > jumpAtMs && c >= 8192) * 1000
    t.ok(
      firstLarge(withEarly.youngest) <= jumpAtMs + 2 * C,
      `a larger youngest by ${firstLarge(withEarly.youngest)} ms`,
    )
    t.ok(
      firstLarge(withEarly.deciding) <= bound,
      `deciding with ≥ 8,192 cells by ${firstLarge(withEarly.deciding)} ms ≤ ${bound} ms`,
    )
    t.ok(
      firstLarge(without.deciding) >= 50_000,
      `without early growth the larger generation decides only at ${firstLarge(without.deciding)} ms (next-but-one rotation)`,
    )
    const refusedAfter = (o: { refused: number[] }, fromMs: number) =>
      o.refused.slice(second(fromMs) + 1).reduce((a, b) => a + b, 0)
    t.equal(refusedAfter(withEarly, bound), 0, 'no fresh key refused once the larger generation decides')
    t.ok(minAge > 2 * C, 'the fresh-generation wait this replaces was longer than the bound')
    t.ok(
      refusedAfter(without, jumpAtMs) > refusedAfter(withEarly, jumpAtMs),
      `fewer fresh keys refused after the jump: ${refusedAfter(withEarly, jumpAtMs)} against ${refusedAfter(without, jumpAtMs)} without early growth`,
    )
  },
)

t.test('a 100× jump after a quiet spell that shrank every generation is served from the next checks', async (t) => {
  // 20 fresh keys/s for 60 s sizes both generations down from 16,384 to at most 1,024 cells per
  // level (ρ target 0.25, the shrink margin); then 2,000/s, ρ ≥ 2 on them: the review of issue 14 saw this
  // shape (100 → 6,000/s after 350 s) refuse 116,788 fresh requests while a fresh larger
  // generation waited the promotion-age guard
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 4, decay: linear(RATE), hi: HI },
    periodMs: PERIOD,
    clock,
    ticker,
    seed: 13,
    sizing: { sizeNextGeneration: byLoadFactor(0.25), minCellsPerLevel: 64, maxCellsPerLevel: 16_384 },
  })
  const jumpAtMs = 60_500
  const { deciding, refused } = loadJump(r, clock, ticker, 20, 2000, jumpAtMs, 80_000)
  const s = Math.floor(jumpAtMs / 1000)
  t.ok(deciding[s] <= 1024, `shrunk before the jump: ${deciding[s]} cells per level decide`)
  t.ok(deciding[s + 2] >= 8192, `${deciding[s + 2]} cells per level decide 2 s after it`)
  const late = refused.slice(s + 3).reduce((a, b) => a + b, 0)
  t.equal(late, 0, 'no fresh key refused from the third second after the jump on')
  t.ok(r.sizeBytes() <= 2048 + 2 * 4 * 16_384 * 16, 'within the budget')
  r.close()
})

t.test('a jump within one check window grows before the tick: a quiet spell left 64 cells per level', async (t) => {
  // quiet for 60 s: both generations sized down to the minimum; then 3,000 fresh keys/s. A 1-s
  // window on 64 cells would put ~47 per cell (burst 10): the tick would fold saturated cells.
  // The window's cost passing a full window at ρ = 1 (64 × 1/s × 1 s) checks at once instead.
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 4, decay: linear(RATE), hi: HI },
    periodMs: PERIOD,
    clock,
    ticker,
    seed: 17,
    sizing: { sizeNextGeneration: byLoadFactor(0.05), minCellsPerLevel: 64, maxCellsPerLevel: 65_536 },
  })
  for (let ms = 1000; ms <= 60_000; ms += 1000) {
    clock.set(ms - 500)
    r.tryUpdate(`trickle-${ms}`, 1, HI) // one key a second: the sizer answers 20 → the minimum
    clock.set(ms)
    ticker.tick()
  }
  t.same(r.generationCellsPerLevel, [64, 64], 'quiet: the minimum')
  let refused = 0
  let grownAt = NaN
  for (let i = 0; i < 3000; i++) {
    clock.set(60_000 + i / 3) // 3,000 fresh keys in the second after the tick at 60 s: no tick in between
    if (!r.tryUpdate(`fresh-${i}`, 1, HI)) refused++
    if (Number.isNaN(grownAt) && r.generationCellsPerLevel[0] > 64) grownAt = i
  }
  t.ok(grownAt <= 100, `grown after ${grownAt} requests (the trigger: 64 of cost in the window)`)
  t.ok(r.generationCellsPerLevel[0] >= 32_768, `the deciding generation folded to ${r.generationCellsPerLevel[0]}`)
  t.equal(refused, 0, 'no fresh key refused in the jump second')
  r.close()
})

t.test(
  'an early growth folds every live generation, the deciding one included: every read is unchanged at the fold, no debt is forgiven, the schedule stays',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    let big = false
    const r = sized(
      {
        sizeNextGeneration: () => (big ? 1024 : 64),
        maxCellsPerLevel: 1024,
        growEarlyWhen: () => big,
      },
      clock,
      ticker,
    )
    r.rotate() // [1024, 64]
    r.rotate() // [64, 64], last rotation at t = 0
    t.same(r.generationCellsPerLevel, [64, 64])
    // 400 keys on 64 cells per level: crowded, so reads carry other keys' debt
    const exact = new Map<string, { debt: number; at: number }>()
    const owed = (k: string, now: number) => {
      const e = exact.get(k)
      return e === undefined ? 0 : Math.max(0, e.debt - (RATE * (now - e.at)) / 1000)
    }
    const write = (k: string, cost: number) => {
      const now = clock.now()
      if (r.tryUpdate(k, cost, HI)) exact.set(k, { debt: owed(k, now) + cost, at: now })
    }
    t.ok(r.tryUpdate('debtor', 10, HI), 'a fresh key takes its full burst') // full debt at 0 s
    exact.set('debtor', { debt: 10, at: 0 })
    for (let i = 0; i < 400; i++) {
      clock.set(i * 15) // 0 … 6 s
      write(`k${i}`, 1 + (i % 7))
    }
    clock.set(7000)
    const before = [...exact.keys()].map((k) => r.estimate(k))
    big = true
    ticker.tick() // the check at 7 s: both generations folded into 1,024 cells per level
    big = false // no further early growth
    t.same(r.generationCellsPerLevel, [1024, 1024], 'the deciding generation grew too')
    t.equal(r.earlyGrowths, 1)
    t.same(
      [...exact.keys()].map((k) => r.estimate(k)),
      before,
      'every key reads exactly what it read before the fold (its cells are copies of its cells)',
    )
    t.same(
      r.earlyGenerations().map((e) => [e.generation, e.cellsPerLevel, e.deciding]),
      [
        [0, 1024, true],
        [1, 1024, false],
      ],
    )
    t.equal(r.earlyGenerations()[1].decidesAtMs, PERIOD, 'the folded youngest keeps its age: promoted on schedule')
    // one-sided at every second up to and across the rotation: never below a key's exact debt
    let below = 0
    for (let now = 7000; now <= 16_000; now += 1000) {
      clock.set(now)
      ticker.tick()
      for (const k of exact.keys()) if (r.estimate(k) < owed(k, now) - 1e-9) below++
    }
    t.equal(below, 0, 'no read below the exact token bucket of its key, before or after the rotation')
    t.equal(r.rotations, 3, 'rotated at 10 s, when the period was due')
    t.same(r.generationCellsPerLevel, [1024, 64], 'the next generation sized from the load')
    // the fold spreads what follows: fresh keys share their cells with 1/16 of the keys they did
    r.close()
  },
)

t.test('shrink when the load falls: the next generations are sized down at rotations', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 4, decay: linear(RATE), hi: HI },
    periodMs: PERIOD,
    clock,
    ticker,
    seed: 5,
    sizing: { sizeNextGeneration: byLoadFactor(0.05), maxCellsPerLevel: 65_536 },
  })
  const { deciding } = loadJump(r, clock, ticker, 2000, 200, 30_500, 70_000)
  t.equal(deciding[25], 65_536, 'at 2,000/s the budget')
  // N = 2: the generation deciding at t was created at the rotation before the last one
  // a shrink takes the sizer's answer at twice the larger of the life's rate and its busiest
  // check window (spec/rotator.md "Hysteresis"): 30–40 s averaged 290/s, but its window
  // 30–31 s held 0.5 s at 2,000/s (1,100/s): 2 × 1,100 / 0.05 = 44,000 → the budget, kept
  t.equal(deciding[55], 65_536, 'created at 40 s: the busiest window of 30–40 s, doubled, needs the budget')
  t.equal(deciding[65], 8192, 'created at 50 s from 200/s throughout: 2 × 200 / 0.05 = 8,000 → 8,192')
  t.ok(r.sizeBytes() < 2 * 4 * 65_536 * 16, `memory fell to ${r.sizeBytes()} B`)
  r.close()
})

t.test('a ρ threshold: growth starts early when cost/s / (M × rate) passes it', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 64, decay: linear(RATE), hi: HI },
    periodMs: PERIOD,
    clock,
    ticker,
    sizing: { sizeNextGeneration: () => 512, maxCellsPerLevel: 1024, growAtLoadFactor: 0.5 },
  })
  // 31 per second on 64 cells at 1/s: ρ = 0.48, no growth
  for (let s = 0; s < 3; s++) {
    for (let i = 0; i < 31; i++) r.update(`a${s}-${i}`, 1)
    clock.advance(1000)
    ticker.tick()
  }
  t.same(r.generationCellsPerLevel, [64, 64], 'ρ = 0.48 < 0.5')
  for (let i = 0; i < 33; i++) r.update(`b${i}`, 1)
  clock.advance(1000)
  ticker.tick()
  t.same(r.generationCellsPerLevel, [512, 512], 'ρ = 0.52: both generations folded into 512 cells')
  t.throws(
    () =>
      new Rotator({
        sketch: { levels: 2, cellsPerLevel: 64 },
        periodMs: PERIOD,
        clock,
        ticker,
        sizing: { sizeNextGeneration: () => 512, maxCellsPerLevel: 1024, growAtLoadFactor: 0.5 },
      }),
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /growAtLoadFactor.*none/ },
    'no decay rate, no load factor',
  )
  r.close()
})

t.test('exponential decay: the promotion age is (N − 1) × periodMs', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 64, decay: exponential(0.1), hi: 100 },
    generations: 3,
    periodMs: PERIOD,
    clock,
    ticker,
    sizing: { sizeNextGeneration: () => 64, maxCellsPerLevel: 256, growEarlyWhen: () => false },
  })
  clock.set(4000)
  r.rotateTo(3) // three fresh generations at 4 s: the next to be promoted is 0 s old
  clock.set(14_000)
  ticker.tick()
  t.equal(r.rotations, 3, 'a period has passed, but the generation to promote is 10 s old: (N − 1) × 10 s = 20 s')
  clock.set(23_000)
  ticker.tick()
  t.equal(r.rotations, 3, '19 s old at 23 s: not yet')
  clock.set(24_000)
  ticker.tick()
  t.equal(r.rotations, 4, '20 s old: promoted')
  r.close()
})

t.test('an exponential-decay growth folds too: every read unchanged at the fold', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  let grow = false
  const r = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 64, decay: exponential(0.1), hi: 100 },
    periodMs: PERIOD,
    clock,
    ticker,
    sizing: { sizeNextGeneration: () => (grow ? 256 : 64), maxCellsPerLevel: 256, growEarlyWhen: () => grow },
  })
  for (let i = 0; i < 300; i++) r.update(`e${i}`, 1 + (i % 5))
  clock.set(4000)
  const before = Array.from({ length: 300 }, (_, i) => r.estimate(`e${i}`))
  grow = true
  ticker.tick()
  grow = false
  t.same(r.generationCellsPerLevel, [256, 256])
  t.same(
    Array.from({ length: 300 }, (_, i) => r.estimate(`e${i}`)),
    before,
  )
  clock.set(10_000)
  ticker.tick()
  t.equal(r.rotations, 1, 'promoted when the period is due')
  r.close()
})

t.test(
  'merge and deltas between rotators of different shapes are refused with a coded error, nothing applied',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    let cells = 64
    const mk = () =>
      sized({ sizeNextGeneration: () => cells, maxCellsPerLevel: 1024, growEarlyWhen: () => false }, clock, ticker, 21)
    const a = mk()
    const b = mk()
    cells = 64
    a.rotate()
    cells = 128
    b.rotate()
    t.same(a.generationCellsPerLevel, [1024, 64])
    t.same(b.generationCellsPerLevel, [1024, 128])
    a.update('x', 3)
    b.update('x', 4)
    t.notOk(a.isCompatible(b))
    t.throws(() => a.merge(b), {
      code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
      message: /generation 1: cellsPerLevel: 64 vs 128/,
    })
    t.equal(a.estimate('x'), 3, 'the refused merge changed nothing')
    const delta = b.takeDelta()
    t.throws(() => a.applyDelta(delta), {
      code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE',
      message: /generation index 2 .*cellsPerLevel: 64 vs 128/,
    })
    t.equal(a.estimate('x'), 3, 'generation 0 (same shape) was not written either')
    // same shapes: the delta applies across generations of different sizes
    const c = mk()
    cells = 64
    c.rotate()
    const fromA = a.takeDelta()
    t.equal(c.applyDelta(fromA.serializeAt(clock.now(), 0), { wallMs: 0 }), 2)
    t.equal(c.estimate('x'), 3)
    for (const r of [a, b, c]) r.close()
  },
)

t.test('frames carry every generation shape: a mixed rotator round-trips, sizes and all', async (t) => {
  const clock = new FakeClock(1000)
  const ticker = new FakeTicker()
  let cells = 32
  const r = sized({ sizeNextGeneration: () => cells, minCellsPerLevel: 16, maxCellsPerLevel: 256 }, clock, ticker, 8, 3)
  r.rotate()
  cells = 128
  r.rotate()
  t.same(r.generationCellsPerLevel, [256, 32, 128])
  for (let i = 0; i < 50; i++) r.update(`k${i}`, (i % 7) + 1)
  const bytes = r.serializeAt(clock.now(), 0)
  t.equal(bytes[5], 2, 'version 2')
  const back = Rotator.deserialize(bytes, { clock, wallMs: 0, ticker: new FakeTicker() })
  t.same(back.generationCellsPerLevel, [256, 32, 128])
  t.notOk(back.selfSized, 'no sizer given: the restored rotator keeps shapes as they come')
  for (let i = 0; i < 50; i++) t.equal(back.estimate(`k${i}`), r.estimate(`k${i}`))
  back.rotate()
  t.same(back.generationCellsPerLevel, [32, 128, 128], 'new generations take the youngest shape')
  t.same(
    back.serializeAt(clock.now(), 0).length,
    36 + 84 + 32 * 3 + 16 * 4 * (32 + 128 + 128) + 4,
    'L = 4: 16 B × 4 × Σ M',
  )
  const resized = Rotator.deserialize(bytes, {
    clock,
    wallMs: 0,
    ticker: new FakeTicker(),
    sizing: { sizeNextGeneration: () => 16, minCellsPerLevel: 16, maxCellsPerLevel: 256 },
  })
  resized.rotate()
  t.same(resized.generationCellsPerLevel, [32, 128, 16], 'with a sizer the restored rotator sizes again')
  for (const x of [r, back, resized]) x.close()
})

/**
 * A steady light load with one client's burst in one check window per period: the shape of
 * the access log's flapping (grudge replay of /work/shared/data/access.log at 0.03 req/s: a
 * 1-s window of one client's page load grew the youngest early, the rotation on the hour's mean
 * shrank it back, every generation). Here: 1 fresh key a second, and 10 requests of one key in
 * second 3 of every period (sizer ρ ≤ 0.05: the window asks for 10 / 0.05 = 200 → 256 cells,
 * the life's mean of 1.9/s for 38 → the minimum, 64). Returns the sizes after each rotation.
 */
function burstyPeriods(
  r: Rotator,
  clock: FakeClock,
  ticker: FakeTicker,
  periods: number,
  startMs: number,
  burst: boolean,
): { youngest: number[]; resizes: number[] } {
  const youngest: number[] = []
  const resizes: number[] = []
  let key = 0
  for (let now = startMs; now < startMs + periods * PERIOD; now += 100) {
    clock.set(now)
    if (now % 1000 === 0) {
      const before = r.rotations
      ticker.tick()
      if (r.rotations !== before) {
        youngest.push(r.generationCellsPerLevel[r.generations - 1])
        resizes.push(r.resizes)
      }
    }
    if (now % 1000 === 0) r.tryUpdate(`light-${now}-${key++}`, 1, HI)
    if (burst && now % PERIOD === 3000) for (let i = 0; i < 10; i++) r.tryUpdate('page-load', 1, HI)
  }
  return { youngest, resizes }
}

t.test(
  'hysteresis: a steady load whose check windows grew the youngest early keeps one size across rotations',
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const r = sized(
      { sizeNextGeneration: byLoadFactor(0.05), minCellsPerLevel: 64, maxCellsPerLevel: 65_536, checkEveryMs: 1000 },
      clock,
      ticker,
    )
    const { youngest, resizes } = burstyPeriods(r, clock, ticker, 14, 0, true)
    // the first rotations shrink from the budget; from the third on nothing moves at twice the
    // busiest window, 2 × 11/s / 0.05 = 440 → 512: before the margin, every rotation appended 64
    // cells and every period's burst grew them to 256 again (a resize per rotation and check)
    const steady = youngest.slice(2)
    t.ok(steady.length >= 10, `${steady.length} rotations at the steady load`)
    t.same(new Set(steady), new Set([512]), `youngest after each rotation: ${youngest.join(' ')}`)
    t.same(r.generationCellsPerLevel, [512, 512])
    t.equal(resizes.at(-1), resizes[2], `no resize over ${steady.length} generations (resizes ${resizes.join(' ')})`)
    // a real drop (no bursts, the same light keys: 1/s) shrinks within two rotations: the first
    // appends after a life that still held a burst, the second after a life wholly at the new load
    const after = burstyPeriods(r, clock, ticker, 3, 14 * PERIOD, false)
    t.equal(after.youngest[1], 64, `after the drop: ${after.youngest.join(' ')} (2 × 1.1/s / 0.05 = 44 → 64)`)
    // a jump grows at once: 100 fresh keys/s, the next check starts a generation of the sizer's
    // size (100 / 0.05 = 2,000 → 2,048), the grow is never delayed by the margin
    let key = 0
    const jumpAt = 17 * PERIOD + 500
    for (let now = jumpAt; now <= jumpAt + 1500; now += 10) {
      clock.set(now)
      if (now % 1000 === 0) ticker.tick()
      r.tryUpdate(`jump-${key++}`, 1, HI)
    }
    t.equal(r.generationCellsPerLevel[1], 2048, 'grown early at the first check after the jump')
    r.close()
  },
)

t.test('sizeNextWithHysteresis: grow at once, shrink with the margin, an invalid margin keeps the size', async (t) => {
  const { sizeNextWithHysteresis, SHRINK_LOAD_MARGIN } = await import('../../src/sketch/rotator-sizing.js')
  t.equal(SHRINK_LOAD_MARGIN, 2)
  const sizing = { sizeNextGeneration: byLoadFactor(0.05), minCellsPerLevel: 64, maxCellsPerLevel: 65_536 }
  const load = (costPerSecond: number, currentCellsPerLevel: number): GenerationLoad => ({
    distinctKeys: 100,
    costPerSecond,
    periodMs: PERIOD,
    currentCellsPerLevel,
    levels: 4,
    generations: 2,
    decay: linear(RATE),
    reason: 'rotation',
  })
  // grow: 100/s needs 2,000 → 2,048, taken at once whatever the peak
  t.equal(sizeNextWithHysteresis(sizing, load(100, 256), 0).cells, 2048)
  // shrink from 4,096: 100/s alone fits 2,048, but twice it needs 4,096: kept
  t.equal(sizeNextWithHysteresis(sizing, load(100, 4096), 0).cells, 4096)
  // at 50/s twice the load fits 2,048: shrunk one step (not to 1,024, what 50/s alone asks)
  t.equal(sizeNextWithHysteresis(sizing, load(50, 4096), 0).cells, 2048)
  // a busy check window (150/s) holds the size: 2 × 150 / 0.05 = 6,000 → 8,192, capped at 4,096
  t.equal(sizeNextWithHysteresis(sizing, load(50, 4096), 150).cells, 4096)
  t.equal(sizeNextWithHysteresis(sizing, load(50, 4096), 0).wanted, 1000, 'the raw answer at the load')
  // a sizer that answers nonsense at the doubled load keeps the current size, unreported
  const odd = { ...sizing, sizeNextGeneration: (l: GenerationLoad) => (l.costPerSecond > 60 ? NaN : 64) }
  t.same(sizeNextWithHysteresis(odd, load(50, 4096), 0), { cells: 4096, wanted: 64 })
  // a load-blind sizer shrinks at once (its answer at twice the load is the same)
  t.equal(sizeNextWithHysteresis({ ...sizing, sizeNextGeneration: () => 64 }, load(1e6, 4096), 0).cells, 64)
})

t.test(
  "the budget is reported from a rotation's whole life, not from a check window (spec/sizing.md §5, the budget notice)",
  async (t) => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    const events: SizingLimitEvent[] = []
    // always more than the budget's 256: every check and every rotation is capped
    const r = sized(
      {
        sizeNextGeneration: () => 4096,
        maxCellsPerLevel: 256,
        onSizingLimit: (e) => events.push(e),
        checkEveryMs: 1000,
      },
      clock,
      ticker,
    )
    // a ramp: 10 writes in the first second, then 40 a second
    for (let s = 0; s < 9; s++) {
      const n = s === 0 ? 10 : 40
      for (let i = 0; i < n; i++) {
        clock.set(s * 1000 + (i * 1000) / n)
        r.tryUpdate(`k${s}:${i}`, 1, HI)
      }
      clock.set((s + 1) * 1000)
      ticker.tick()
    }
    t.equal(r.rotations, 0, 'no rotation yet (period 10 s)')
    t.ok(r.sizingLimitCount >= 9, `the checks' budget misses are counted: ${r.sizingLimitCount}`)
    t.same(events, [], 'and not reported')
    for (let i = 0; i < 40; i++) {
      clock.set(9000 + i * 25)
      r.tryUpdate(`k9:${i}`, 1, HI)
    }
    clock.set(PERIOD)
    ticker.tick()
    t.equal(r.rotations, 1)
    t.equal(events.length, 1, 'one event, at the rotation')
    const e = events[0]
    t.equal(e.kind, 'budget')
    t.equal(e.load.reason, 'rotation')
    // the life's mean: (10 + 9 × 40) cost over 10 s; the busiest window 40 cost/s
    t.equal(e.load.costPerSecond, 37)
    t.equal(e.load.periodMs, PERIOD)
    t.equal(e.peakWindowCostPerSecond, 40)
    r.close()
  },
)

t.test(
  'sizingLimitEvent: the one rule, also for the fleet (proposeEarlyCells reports no budget, proposeCells does)',
  async (t) => {
    const { sizingLimitEvent, LoadMeter, checkSizing } = await import('../../src/sketch/rotator-sizing.js')
    const { proposeCells, proposeEarlyCells } = await import('../../src/cluster/fleet-sizing.js')
    const base = {
      distinctKeys: 10,
      costPerSecond: 100,
      periodMs: 1000,
      currentCellsPerLevel: 64,
      levels: 4,
      generations: 2,
      decay: linear(RATE),
    }
    const reported = { budget: false, invalid: false }
    const s = { maxCellsPerLevel: 64 }
    t.equal(
      sizingLimitEvent(s, reported, undefined, 1, 64, { ...base, reason: 'rotation' }),
      undefined,
      'nothing to report',
    )
    t.equal(
      sizingLimitEvent(s, reported, 'budget', 1024, 64, { ...base, reason: 'check' }),
      undefined,
      'a check: not reported',
    )
    t.same(reported, { budget: false, invalid: false }, 'and not remembered')
    t.same(
      sizingLimitEvent(s, reported, 'invalid', NaN, 64, { ...base, reason: 'check' })?.kind,
      'invalid',
      'invalid at once',
    )
    const e = sizingLimitEvent(s, reported, 'budget', 1024, 64, { ...base, reason: 'rotation' }, 120)
    t.same(
      [e?.kind, e?.wanted, e?.usedCellsPerLevel, e?.maxCellsPerLevel, e?.peakWindowCostPerSecond],
      ['budget', 1024, 64, 64, 120],
    )
    t.equal(sizingLimitEvent(s, reported, 'budget', 1024, 64, { ...base, reason: 'rotation' }), undefined, 'once')

    const events: SizingLimitEvent[] = []
    const sizing = checkSizing(
      { sizeNextGeneration: () => 4096, maxCellsPerLevel: 256, onSizingLimit: (ev) => events.push(ev) },
      4,
      2,
      PERIOD,
      linear(RATE),
    )
    const meter = new LoadMeter(0)
    const seen = { budget: false, invalid: false }
    const youngest = { cellsPerLevel: 256, decay: linear(RATE) }
    t.equal(proposeEarlyCells(sizing, meter, youngest, 4, 2, 512, 1000, seen), 0, 'no room to grow')
    t.same(events, [], "a fleet check's budget miss is not reported")
    proposeCells(sizing, meter, youngest, 4, 2, 400, PERIOD, PERIOD, seen)
    t.equal(events.length, 1, "a fleet rotation's is")
    t.same([events[0].kind, events[0].load.reason, events[0].load.costPerSecond], ['budget', 'rotation', 40])
  },
)

t.test('a frame restored under a budget that cannot hold its generations is refused, naming both sizes', async (t) => {
  const clock = new FakeClock(0)
  const r = sized({ sizeNextGeneration: () => 256, maxCellsPerLevel: 256 }, clock, new FakeTicker())
  r.update('k', 3)
  const frame = r.serializeAt(clock.now(), 0)
  r.close()
  const sizing = (max: number): RotatorSizing => ({ sizeNextGeneration: () => 64, maxCellsPerLevel: max })
  t.throws(() => Rotator.deserialize(frame, { clock, ticker: new FakeTicker(), wallMs: 0, sizing: sizing(128) }), {
    code: 'ERR_GRUDGE_SIZING_CONFLICT',
    message: /generation 0 holds 256 cells per level, above the 128 that option "sizing" allows/,
  })
  // a byte budget: 2048 + (2 + ½) × 4 × M × 16 holds 256 at 43,008 B, 128 a byte less
  const bytes = 2048 + 2.5 * 4 * 256 * 16
  t.throws(
    () =>
      Rotator.deserialize(frame, {
        clock,
        ticker: new FakeTicker(),
        wallMs: 0,
        sizing: { sizeNextGeneration: () => 64, maxBytes: bytes - 1 },
      }),
    { code: 'ERR_GRUDGE_SIZING_CONFLICT' },
  )
  const ok = Rotator.deserialize(frame, {
    clock,
    ticker: new FakeTicker(),
    wallMs: 0,
    sizing: { sizeNextGeneration: () => 64, maxBytes: bytes },
  })
  t.same(ok.generationCellsPerLevel, [256, 256])
  t.equal(ok.estimate('k'), 3, 'nothing lost')
  t.ok(ok.sizeBytes() <= bytes)
  ok.close()
  const plain = Rotator.deserialize(frame, { clock, ticker: new FakeTicker(), wallMs: 0 })
  t.same(plain.generationCellsPerLevel, [256, 256], 'without sizing: restored as it is')
  plain.close()
  // generations the rotations missed while down retire at the load: only the others must fit
  // (written at wall-clock 0: the reader's wall clock says how long it was down)
  const later = (periods: number) => ({
    clock,
    ticker: new FakeTicker(),
    wallMs: periods * PERIOD,
    sizing: sizing(128),
  })
  t.throws(() => Rotator.deserialize(frame, later(1)), {
    code: 'ERR_GRUDGE_SIZING_CONFLICT',
    message: /generation 1 holds 256 cells per level/,
  })
  const back = Rotator.deserialize(frame, later(2))
  t.ok(
    back.generationCellsPerLevel.every((m) => m <= 128),
    `down 2 periods: every generation of the frame retired at the load (${back.generationCellsPerLevel.join(', ')})`,
  )
  back.close()
})
