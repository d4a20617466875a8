import t from 'tap'
import type { TAP } from 'tap'
import fc from 'fast-check'
import { Sketch } from '../../src/sketch/sketch.js'
import { applyDecay, exponential, linear, none } from '../../src/sketch/decay.js'
import type { Decay, SketchOptions } from '../../src/sketch/shape.js'
import { Murmur3Hasher, murmur3, sipHash } from '../../src/hash/hasher.js'
// @ts-expect-error no types shipped
import MurmurHashRef from 'murmurhash3js-revisited'
import { kmIndexes } from '../../src/hash/indexes.js'
import { FakeClock } from '../../src/testing/index.js'
import type { Clock } from '../../src/clock.js'
import { SKETCH_OPTION_KEYS, type DeserializeOptions } from '../../src/sketch/shape.js'
import { typo, unknownOption } from '../unknown-option.js'
import { serializeAtWall } from './fixtures/serialize-at-wall.js'

/** A Sketch that lets the tests read its cells (scores and last-touched times). */
class Probe extends Sketch {
  cellBytes(): Buffer {
    return Buffer.from(this.cells.buffer.slice(0))
  }
  touchedAt(level: number, cell: number): number {
    return this.cells[2 * (level * this.cellsPerLevel + cell) + 1]
  }
  allFinite(): boolean {
    return this.cells.every((x) => Number.isFinite(x))
  }
}

type Action =
  | { op: 'update'; key: string; delta: number }
  | { op: 'estimate'; key: string }
  | { op: 'updateAndEstimate'; key: string; delta: number }
  | { op: 'tryUpdate'; key: string; delta: number; limit: number }
type Row = { nowMs: number; action: Action; expected: number | boolean | undefined; tol?: number }

/** Run `{ nowMs, action, expected }` rows against one sketch driven by a FakeClock. */
function runSteps(t: Pick<TAP, 'ok' | 'equal'>, config: SketchOptions, rows: Row[]): Sketch {
  const clock = new FakeClock(0)
  const s = new Sketch({ seed: 1, ...config, clock })
  rows.forEach((row, i) => {
    clock.set(row.nowMs)
    const a = row.action
    let got: number | boolean | undefined
    if (a.op === 'update') s.update(a.key, a.delta)
    else if (a.op === 'estimate') got = s.estimate(a.key)
    else if (a.op === 'updateAndEstimate') got = s.updateAndEstimate(a.key, a.delta)
    else got = s.tryUpdate(a.key, a.delta, a.limit)
    const label = `row ${i}: t=${row.nowMs} ms ${JSON.stringify(a)}`
    if (typeof row.expected === 'number' && row.tol !== undefined) {
      t.ok(Math.abs((got as number) - row.expected) <= row.tol, `${label} → ${got} ≈ ${row.expected} ± ${row.tol}`)
    } else t.equal(got, row.expected, label)
  })
  return s
}

const tryK = (delta: number, limit: number): Action => ({ op: 'tryUpdate', key: 'k', delta, limit })

t.test('debt meter: linear(5), lo 0, hi 10, min: 10 admitted, the 11th refused, one more after 200 ms', async (t) => {
  const rows: Row[] = []
  for (let i = 0; i < 10; i++) rows.push({ nowMs: 0, action: tryK(1, 10), expected: true })
  rows.push({ nowMs: 0, action: tryK(1, 10), expected: false })
  rows.push({ nowMs: 0, action: { op: 'estimate', key: 'k' }, expected: 10 })
  rows.push({ nowMs: 200, action: tryK(1, 10), expected: true })
  rows.push({ nowMs: 200, action: tryK(1, 10), expected: false })
  runSteps(t, { levels: 4, cellsPerLevel: 1000, decay: linear(5), lo: 0, hi: 10, aggregator: 'min' }, rows)
})

t.test('inclusive boundary: linear(10), debt 10 at t=0', async (t) => {
  const cfg: SketchOptions = { levels: 4, cellsPerLevel: 1000, decay: linear(10), lo: 0, hi: 100 }
  runSteps(t, cfg, [
    { nowMs: 0, action: { op: 'update', key: 'k', delta: 10 }, expected: undefined },
    { nowMs: 500, action: { op: 'estimate', key: 'k' }, expected: 5 },
    { nowMs: 500, action: tryK(5, 10), expected: true },
    { nowMs: 500, action: { op: 'estimate', key: 'k' }, expected: 10 },
  ])
  runSteps(t, cfg, [
    { nowMs: 0, action: { op: 'update', key: 'k', delta: 10 }, expected: undefined },
    { nowMs: 499, action: { op: 'estimate', key: 'k' }, expected: 5.01, tol: 1e-9 },
    { nowMs: 499, action: tryK(5, 10), expected: false },
    { nowMs: 499, action: { op: 'estimate', key: 'k' }, expected: 5.01, tol: 1e-9 },
  ])
})

t.test('exponential(0.1) from 1.0 over 100 ms reads 0.9900498337 (±1e-9)', async (t) => {
  runSteps(t, { decay: exponential(0.1) }, [
    { nowMs: 1000, action: { op: 'update', key: 'k', delta: 1 }, expected: undefined },
    { nowMs: 1100, action: { op: 'estimate', key: 'k' }, expected: 0.9900498337, tol: 1e-9 },
  ])
})

t.test('updateAndEstimate returns the post-update aggregate; tryUpdate with a negative delta', async (t) => {
  runSteps(t, { decay: linear(1), lo: -10, hi: 10 }, [
    { nowMs: 0, action: { op: 'updateAndEstimate', key: 'k', delta: 4 }, expected: 4 },
    { nowMs: 0, action: { op: 'updateAndEstimate', key: 'k', delta: 8 }, expected: 10 }, // clamped at hi
    { nowMs: 2000, action: { op: 'updateAndEstimate', key: 'k', delta: -20 }, expected: -10 }, // 8 − 20, clamped at lo
    { nowMs: 3000, action: { op: 'estimate', key: 'k' }, expected: -9 }, // moves toward 0
    { nowMs: 3000, action: tryK(-5, -20), expected: false }, // −9 − 5 = −14 > −20
    { nowMs: 3000, action: tryK(-5, -14), expected: true }, // inclusive
    { nowMs: 3000, action: { op: 'estimate', key: 'k' }, expected: -10 }, // −14 clamped at lo
    { nowMs: 100_000, action: { op: 'estimate', key: 'k' }, expected: 0 }, // never crosses 0
  ])
})

t.test(
  'clock going backwards: no growth, no reset, last-touched never moves back, no interval decayed twice',
  async (t) => {
    const cfg: SketchOptions = { decay: linear(10), hi: 1000 }
    runSteps(t, cfg, [
      { nowMs: 0, action: { op: 'update', key: 'k', delta: 10 }, expected: undefined },
      { nowMs: 200, action: { op: 'estimate', key: 'k' }, expected: 8 },
      { nowMs: 100, action: { op: 'estimate', key: 'k' }, expected: 8 }, // back 100 ms: no growth, no reset
      { nowMs: 100, action: { op: 'update', key: 'k', delta: 1 }, expected: undefined }, // applies, no decay
      { nowMs: 150, action: { op: 'estimate', key: 'k' }, expected: 9 }, // still behind 200: nothing decays
      { nowMs: 300, action: { op: 'estimate', key: 'k' }, expected: 8 }, // only 200→300 decays (not 100→300: 7)
      { nowMs: -5000, action: tryK(1, 100), expected: true },
      { nowMs: 400, action: { op: 'estimate', key: 'k' }, expected: 8 }, // 9 − 1 for 300→400
    ])
    const clock = new FakeClock(1000)
    const s = new Probe({ seed: 3, decay: exponential(1), hi: 100, clock })
    s.update('k', 50)
    const cells = s.estimateDetailed('k').cells
    clock.set(10)
    s.update('k', 1)
    t.same(
      cells.map((c, i) => s.touchedAt(i, c)),
      cells.map(() => 1000),
      'last-touched stays at 1000 after an update at 10',
    )
    t.equal(s.estimate('k'), 51, 'no decay while the clock is behind')
  },
)

t.test('a NaN or infinite clock never poisons a cell', async (t) => {
  let now = 0
  const clock: Clock = { now: () => now }
  const s = new Probe({ seed: 5, decay: exponential(0.5), hi: 100, clock, aggregator: 'min' })
  now = 1000
  s.update('k', 10)
  for (const bad of [NaN, Infinity, -Infinity]) {
    now = bad
    s.update('k', 1)
    t.ok(Number.isFinite(s.estimate('k')), `estimate under clock ${bad} is finite`)
    t.ok(s.allFinite(), `every cell finite after clock ${bad}`)
  }
  // Math.min(NaN, 3) is NaN: one NaN row would poison the Min estimate
  t.equal(s.estimate('k'), 13, 'no decay was charged for the broken readings')
  now = 3000
  t.ok(Math.abs(s.estimate('k') - 13 * Math.exp(-1)) < 1e-12, 'decay resumes from the last good time (1000 ms)')
})

t.test('NaN / ±Infinity delta or limit throws ERR_GRUDGE_VALUE_NOT_FINITE and touches nothing', async (t) => {
  const clock = new FakeClock(0)
  const s = new Probe({ seed: 9, levels: 3, cellsPerLevel: 64, decay: exponential(1), hi: 100, clock })
  for (let i = 0; i < 50; i++) s.update(`key${i}`, i % 7)
  clock.advance(1234) // a touch would now decay and restamp cells
  const before = s.cellBytes()
  const calls: Array<[string, () => unknown]> = []
  for (const bad of [NaN, Infinity, -Infinity]) {
    calls.push([`update(k, ${bad})`, () => s.update('key1', bad)])
    calls.push([`updateAndEstimate(k, ${bad})`, () => s.updateAndEstimate('key1', bad)])
    calls.push([`tryUpdate(k, ${bad}, 10)`, () => s.tryUpdate('key1', bad, 10)])
    calls.push([`tryUpdate(k, 1, ${bad})`, () => s.tryUpdate('key1', 1, bad)])
  }
  calls.push(['update(k, "1")', () => s.update('key1', '1' as unknown as number)])
  for (const [name, call] of calls) {
    t.throws(call, { name: 'GrudgeRangeError', code: 'ERR_GRUDGE_VALUE_NOT_FINITE' }, name)
    t.ok(before.equals(s.cellBytes()), `${name}: every cell unchanged`)
  }
  try {
    s.tryUpdate('key1', 1, NaN)
  } catch (e) {
    t.ok(e instanceof RangeError, 'is a RangeError')
    t.match((e as Error).message, /limit: expected a finite number, received NaN/)
  }
  t.throws(() => s.update(42 as unknown as string, 1), { name: 'GrudgeTypeError', code: 'ERR_GRUDGE_KEY_INVALID' })
  t.ok(before.equals(s.cellBytes()), 'a bad key touches nothing')
})

t.test('the empty key and 64 KiB keys are valid and hash as their UTF-8 bytes', async (t) => {
  const s = new Sketch({ seed: 11, decay: none(), clock: new FakeClock(0) })
  s.update('', 2)
  t.equal(s.estimate(''), 2, 'empty string key')
  t.same(s.estimateDetailed(new Uint8Array(0)).cells, s.estimateDetailed('').cells, 'empty bytes = empty string')
  const ascii = 'x'.repeat(65536)
  const multi = 'é'.repeat(32768) // 64 KiB of UTF-8, 32 Ki UTF-16 units
  const astral = '🦎'.repeat(16384) // 4-byte sequences
  for (const [name, key] of [
    ['ascii', ascii],
    ['2-byte', multi],
    ['4-byte', astral],
  ] as const) {
    const bytes = Buffer.from(key, 'utf8')
    t.equal(bytes.length, 65536, `${name} key is 64 KiB`)
    s.update(key, 3)
    t.equal(s.estimate(key), 3, `${name} 64 KiB key`)
    t.same(
      s.estimateDetailed(bytes).cells,
      s.estimateDetailed(key).cells,
      `${name}: string and its UTF-8 bytes hit the same cells`,
    )
  }
  t.equal(s.estimate('x'.repeat(65535)), 0, 'a key one byte shorter is another key')
})

t.test('invalid config throws ERR_GRUDGE_OPTION_INVALID naming the option', async (t) => {
  const bad: Array<[string, SketchOptions, string]> = [
    ['levels 0', { levels: 0 }, 'levels'],
    ['levels 1.5', { levels: 1.5 }, 'levels'],
    ['levels NaN', { levels: NaN }, 'levels'],
    ['levels "4"', { levels: '4' as unknown as number }, 'levels'],
    ['cellsPerLevel 0', { cellsPerLevel: 0 }, 'cellsPerLevel'],
    ['cellsPerLevel 2.5', { cellsPerLevel: 2.5 }, 'cellsPerLevel'],
    ['cellsPerLevel -1', { cellsPerLevel: -1 }, 'cellsPerLevel'],
    ['L×M above 2^31', { levels: 4, cellsPerLevel: 2 ** 30 }, 'cellsPerLevel'],
    // the bound is 2^30 cells (one 16 GiB buffer of paired cells): 2^30 + 2 is refused, not allocated
    ['L×M above 2^30', { levels: 2, cellsPerLevel: 2 ** 29 + 1 }, 'cellsPerLevel'],
    ['L×M = 2^31 − 1 (32 GiB)', { levels: 1, cellsPerLevel: 2 ** 31 - 1 }, 'cellsPerLevel'],
    ['lo > 0', { lo: 1 }, 'lo'],
    ['lo NaN', { lo: NaN }, 'lo'],
    ['lo -Infinity', { lo: -Infinity }, 'lo'],
    ['hi < 0', { lo: -5, hi: -1 }, 'hi'],
    ['hi Infinity', { hi: Infinity }, 'hi'],
    ['lo = hi = 0', { lo: 0, hi: 0 }, 'hi'],
    ['aggregator median', { aggregator: 'median' as 'min' }, 'aggregator'],
    ['hasher {}', { hasher: {} as ReturnType<typeof murmur3> }, 'hasher'],
    ['decay {kind: "cubic"}', { decay: { kind: 'cubic', ratePerSecond: 1 } as unknown as Decay }, 'decay'],
    ['decay exponential rate -1', { decay: { kind: 'exponential', ratePerSecond: -1 } }, 'decay\\.ratePerSecond'],
    ['decay linear rate NaN', { decay: { kind: 'linear', ratePerSecond: NaN } }, 'decay\\.ratePerSecond'],
    ['seed 15 bytes', { seed: new Uint8Array(15) }, 'seed'],
    ['seed -1', { seed: -1 }, 'seed'],
    ['clock {}', { clock: {} as Clock }, 'clock'],
  ]
  for (const [name, cfg, option] of bad) {
    t.throws(
      () => new Sketch(cfg),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: new RegExp(`option "${option}": expected .*, received`) },
      name,
    )
  }
  t.throws(() => exponential(0), { code: 'ERR_GRUDGE_OPTION_INVALID' }, 'exponential(0)')
  t.throws(() => linear(Infinity), { code: 'ERR_GRUDGE_OPTION_INVALID' }, 'linear(Infinity)')
  const ok = new Sketch({ lo: -1, hi: 0, levels: 1, cellsPerLevel: 1 })
  t.equal(ok.sizeBytes(), 16, 'lo < 0 = hi is valid; 1×1 cells = 16 bytes')
  t.equal(new Sketch({ levels: 4, cellsPerLevel: 100_000 }).sizeBytes(), 6_400_000, 'L×M×16 bytes')
})

t.test("sizeBytes during a lazy fold: the smaller sketch's cells and baseline are held until it ends", async (t) => {
  const L = 3
  const M = 64
  const M2 = 256
  const shape = { levels: L, decay: linear(1), hi: 100, clock: new FakeClock(1000) }
  for (const withBaseline of [false, true]) {
    const what = withBaseline ? 'with a baseline' : 'no baseline'
    const small = new Sketch({ ...shape, cellsPerLevel: M, seed: 3 })
    for (let i = 0; i < 50; i++) small.update(`k${i}`, 2)
    if (withBaseline) small.takeDelta() // allocates the smaller sketch's L × M × 16-byte baseline
    const big = new Sketch({ ...shape, cellsPerLevel: M2, hasher: small.hasher })
    t.equal(big.sizeBytes(), L * M2 * 16, `${what}: before the fold, L × M′ × 16`)
    big.foldLazilyFrom(small, 16)
    t.ok(big.folding)
    const held = L * (M2 + M) * 16 + (withBaseline ? L * M * 16 : 0)
    t.equal(big.sizeBytes(), held, `${what}: folding, L × (M′ + M) × 16${withBaseline ? ' + L × M × 16' : ''}`)
    big.update('k1', 1) // folds the key's chunks only
    t.equal(big.foldSome(64), 64, 'a slice of 64 cells')
    t.ok(big.folding)
    t.equal(big.sizeBytes(), held, `${what}: partly folded, the same (the views hold the whole buffers)`)
    big.foldSome(Infinity)
    t.notOk(big.folding)
    t.equal(big.sizeBytes(), L * M2 * 16, `${what}: after the fold, L × M′ × 16`)
  }
})

/** Cell indexes from the spec, computed independently with BigInt from the 64-bit hash. */
function specCells(hash: bigint, levels: number, m: number): number[] {
  const h1 = hash & 0xffffffffn
  const h2 = (hash >> 32n) | 1n
  return Array.from({ length: levels }, (_, i) => Number((h1 + BigInt(i) * h2) % BigInt(m)))
}

t.test('cells are (h1 + i·h2) mod M with h1 = low 32 bits, h2 = high 32 bits | 1', async (t) => {
  for (const [hasher, m, levels] of [
    [murmur3(21), 100_000, 4],
    [sipHash(21), 100_000, 4],
    [murmur3(22), 1, 3],
    [sipHash(23), 3, 5],
    // M near 2^30, the bound of L × M: with paired cells one buffer holds 2·L·M doubles (16
    // GiB here, allocated lazily); one of 32 GiB (M = 2^31 − 1) was refused by this machine
    [murmur3(24), 2 ** 30 - 3, 1],
  ] as const) {
    const s = new Sketch({ hasher, levels, cellsPerLevel: m, clock: new FakeClock(0) })
    let bad = 0
    for (let i = 0; i < 2000; i++) {
      const key = `user:${i}:${'ü'.repeat(i % 5)}`
      if (JSON.stringify(s.estimateDetailed(key).cells) !== JSON.stringify(specCells(hasher.hash(key), levels, m)))
        bad++
    }
    t.equal(bad, 0, `${hasher.name}, L=${levels}, M=${m}: 2000 keys match the BigInt formula`)
  }
  const out = new Uint32Array(5)
  kmIndexes(0, -1, 5, 4294967291, out) // h1 = 2^32 − 1, h2 = 0 | 1 = 1
  t.same([...out], [4, 5, 6, 7, 8], 'kmIndexes: exact float64 sum, h2 forced to 1 when the high word is 0')
  kmIndexes(-1, -1, 3, 4294967291, out) // h1 = h2 = 2^32 − 1: sums above 2^33 stay exact
  t.same([...out.subarray(0, 3)], specCells(0xffffffffffffffffn, 3, 4294967291), 'kmIndexes matches BigInt near 2^32')
})

t.test('h2 is odd, so with M a power of two the L cells of a key never collapse', async (t) => {
  for (const hasher of [murmur3(31), sipHash(31)]) {
    const s = new Sketch({ hasher, levels: 8, cellsPerLevel: 1024, clock: new FakeClock(0) })
    let collapsed = 0
    let evenHigh = 0
    for (let i = 0; i < 5000; i++) {
      const key = `ip-${i}`
      if ((hasher.hash(key) >> 32n) % 2n === 0n) evenHigh++
      if (new Set(s.estimateDetailed(key).cells).size !== 8) collapsed++
    }
    t.ok(evenHigh > 2000, `${hasher.name}: ${evenHigh} of 5000 keys have an even high word (forced odd)`)
    t.equal(collapsed, 0, `${hasher.name}: every key has 8 distinct cells in 8 levels of 1024`)
  }
})

t.test('aggregators: min, max and mean of the per-level cells (independent model)', async (t) => {
  // M = 16, L = 3, no decay, non-negative deltas: a cell holds the sum of the deltas of
  // the keys that hash to it; the model computes cells from the spec formula.
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}`)
  const hasher = murmur3(77)
  const cellsOf = (k: string) => specCells(hasher.hash(k), 3, 16)
  const model = new Map<string, number>()
  for (const [i, k] of keys.entries())
    cellsOf(k).forEach((c, lvl) => model.set(`${lvl}:${c}`, (model.get(`${lvl}:${c}`) ?? 0) + (i % 5)))
  let distinct = 0
  for (const aggregator of ['min', 'max', 'mean'] as const) {
    const s = new Sketch({ hasher, levels: 3, cellsPerLevel: 16, aggregator, clock: new FakeClock(0) })
    keys.forEach((k, i) => s.update(k, i % 5))
    for (const k of keys) {
      const v = cellsOf(k).map((c, lvl) => model.get(`${lvl}:${c}`)!)
      const expected =
        aggregator === 'min' ? Math.min(...v) : aggregator === 'max' ? Math.max(...v) : (v[0] + v[1] + v[2]) / 3
      if (aggregator === 'min' && new Set(v).size > 1) distinct++
      t.equal(s.estimate(k), expected, `${aggregator} of ${k}: [${v.join(',')}]`)
    }
  }
  t.ok(distinct > 5, 'the keys do see different values per level')
})

t.test('updateAndEstimate returns min, max or mean of the cells just written (independent model)', async (t) => {
  // Same model as above, but checked after each write: the value returned is the
  // aggregate of the key's L cells including this update, as estimate() would read it next.
  const keys = Array.from({ length: 40 }, (_, i) => `k${i}`)
  const hasher = murmur3(78)
  const cellsOf = (k: string) => specCells(hasher.hash(k), 3, 16)
  for (const aggregator of ['min', 'max', 'mean'] as const) {
    const s = new Sketch({ hasher, levels: 3, cellsPerLevel: 16, aggregator, clock: new FakeClock(0) })
    const model = new Map<string, number>()
    let spread = 0
    keys.forEach((k, i) => {
      const v = cellsOf(k).map((c, lvl) => {
        const next = (model.get(`${lvl}:${c}`) ?? 0) + (i % 5) + 1
        model.set(`${lvl}:${c}`, next)
        return next
      })
      if (new Set(v).size > 1) spread++
      const expected =
        aggregator === 'min' ? Math.min(...v) : aggregator === 'max' ? Math.max(...v) : (v[0] + v[1] + v[2]) / 3
      t.equal(s.updateAndEstimate(k, (i % 5) + 1), expected, `${aggregator} after writing ${k}: [${v.join(',')}]`)
    })
    t.ok(spread > 5, `${aggregator}: ${spread} writes saw different values per level`)
  }
})

t.test('a fresh key reads 0 under every aggregator (never Math.min() = Infinity)', async (t) => {
  for (const aggregator of ['min', 'max', 'mean'] as const) {
    const s = new Sketch({ aggregator, levels: 200_001, cellsPerLevel: 1 })
    // 200,001 levels: a Math.min(...scores) spread would throw RangeError here
    t.equal(s.estimate('nobody'), 0, aggregator)
  }
})

t.test('engine facts: exp underflow reaches exactly 0, -0 stays harmless, lone surrogates collide', async (t) => {
  const clock = new FakeClock(0)
  const s = new Sketch({ seed: 2, decay: exponential(1), hi: 100, clock })
  s.update('a', 100)
  clock.set(745_000) // λ·Δt = 745: Math.exp(−745) = 5e-324, the smallest subnormal
  t.equal(s.estimate('a'), 100 * 5e-324, 'decays into the subnormals, exactly')
  clock.set(10_000_000) // Math.exp(−10^4) = 0
  t.equal(s.estimate('a'), 0, 'underflows to 0, never NaN')
  const n = new Sketch({ seed: 2, decay: exponential(1), lo: -100, clock })
  n.update('b', -100)
  clock.set(20_000_000)
  t.ok(n.estimate('b') === 0, 'a negative score underflows to (−)0, which compares equal to 0')
  t.equal(n.tryUpdate('b', 100, 100), true, 'and admits like 0')
  // "\ud800", "\udfff" and "\ufffd" all encode to EF BF BD: the same key
  const u = new Sketch({ seed: 4, clock })
  u.update('\ud800', 1)
  t.equal(u.estimate('\udfff'), 1, 'lone surrogates collide with each other')
  t.equal(u.estimate('\ufffd'), 1, 'and with U+FFFD')
  u.update('é'.normalize('NFC'), 5)
  t.equal(u.estimate('é'.normalize('NFC')), 5, 'NFC é')
  t.equal(u.estimate('é'.normalize('NFD')), 0, 'NFD é is another key (normalize keys yourself)')
})

t.test('determinism: the same seed, clock and operations give bit-identical cells', async (t) => {
  const opArb = fc.record({
    key: fc.integer({ min: 0, max: 30 }).map((i) => `k${i}`),
    kind: fc.constantFrom('update', 'estimate', 'updateAndEstimate', 'tryUpdate'),
    delta: fc.double({ min: -50, max: 50, noNaN: true }),
    advanceMs: fc.double({ min: -100, max: 5000, noNaN: true }),
  })
  const decays = [exponential(0.7), linear(3), none()]
  fc.assert(
    fc.property(fc.array(opArb, { maxLength: 60 }), fc.integer({ min: 0, max: 2 }), fc.boolean(), (ops, d, sip) => {
      const run = () => {
        const clock = new FakeClock(0)
        const hasher = sip ? sipHash(123456789n) : murmur3(123456789n)
        const s = new Probe({ levels: 3, cellsPerLevel: 8, decay: decays[d], lo: -20, hi: 20, hasher, clock })
        const outs: number[] = []
        for (const op of ops) {
          clock.advance(op.advanceMs)
          if (op.kind === 'update') s.update(op.key, op.delta)
          else if (op.kind === 'estimate') outs.push(s.estimate(op.key))
          else if (op.kind === 'updateAndEstimate') outs.push(s.updateAndEstimate(op.key, op.delta))
          else outs.push(s.tryUpdate(op.key, op.delta, 5) ? 1 : 0)
        }
        return { cells: s.cellBytes(), outs: Buffer.from(Float64Array.from(outs).buffer) }
      }
      const a = run()
      const b = run()
      return a.cells.equals(b.cells) && a.outs.equals(b.outs)
    }),
    { seed: 42, numRuns: 200 },
  )
  const a = new Sketch({ seed: 1 })
  const b = new Sketch({ seed: 2 })
  t.not(
    JSON.stringify(a.estimateDetailed('x').cells),
    JSON.stringify(b.estimateDetailed('x').cells),
    'another seed, other cells',
  )
  t.pass('200 random op sequences replayed bit-identically')
})

t.test('Min is never below the exact per-key score for non-negative traffic', async (t) => {
  const decays: Decay[] = [exponential(0.9), linear(4), none()]
  fc.assert(
    fc.property(
      fc.array(
        fc.record({
          key: fc.integer({ min: 0, max: 40 }),
          delta: fc.double({ min: 0, max: 10, noNaN: true }),
          advanceMs: fc.integer({ min: 0, max: 3000 }),
        }),
        { maxLength: 120 },
      ),
      fc.integer({ min: 0, max: 2 }),
      (ops, d) => {
        const decay = decays[d]
        const clock = new FakeClock(0)
        // small M so that keys collide a lot
        const s = new Sketch({ levels: 2, cellsPerLevel: 5, decay, hi: 1e9, seed: 99, clock })
        const exact = new Map<number, { score: number; at: number }>()
        for (const op of ops) {
          clock.advance(op.advanceMs)
          const now = clock.now()
          const e = exact.get(op.key) ?? { score: 0, at: now }
          e.score = applyDecay(e.score, decay, now - e.at) + op.delta
          e.at = now
          exact.set(op.key, e)
          s.update(`k${op.key}`, op.delta)
        }
        for (const [key, e] of exact) {
          const truth = applyDecay(e.score, decay, clock.now() - e.at)
          const est = s.estimate(`k${key}`)
          // cells decay in more steps than the per-key model: allow float rounding only
          if (est < truth - 1e-9 * Math.max(1, truth)) return false
        }
        return true
      },
    ),
    { seed: 7, numRuns: 300 },
  )
  t.pass('300 random non-negative traces: estimate ≥ exact score')
})

t.test(
  'spec/hashing.md worked example: murmur3 "hell", seed 0 (x86_128 from the package, h1 from apache/spark)',
  async (t) => {
    // murmurhash3js-revisited x86.hash128("hell", 0) = 1a7a3aec ac6d5c49 ac6d5c49 ac6d5c49:
    // H = bytes 0..7 little-endian = 0xac6d5c491a7a3aec, h1 = 444218092, h2 = 2892848201 (odd)
    const hex = MurmurHashRef.x86.hash128(new Uint8Array(Buffer.from('hell')), 0)
    t.equal(hex, '1a7a3aecac6d5c49ac6d5c49ac6d5c49')
    t.equal(murmur3(0).hash('hell'), 0xac6d5c491a7a3aecn)
    // cells (h1 + i·h2) mod M, worked by hand (spec/hashing.md §4)
    t.same(
      new Sketch({ hasher: murmur3(0), levels: 4, cellsPerLevel: 100_000 }).estimateDetailed('hell').cells,
      [18092, 66293, 14494, 62695],
    )
    t.same(
      new Sketch({ hasher: murmur3(0), levels: 4, cellsPerLevel: 1024 }).estimateDetailed('hell').cells,
      [748, 821, 894, 967],
    )
    // the x64_128 variant (frames of id 1): H = h1 = 0x629942693e10f867 (apache/spark Murmur3_128Suite)
    t.equal(new Murmur3Hasher(0, 'x64_128').hash('hell'), 0x629942693e10f867n)
    t.same(
      new Sketch({ hasher: new Murmur3Hasher(0, 'x64_128'), levels: 4, cellsPerLevel: 100_000 }).estimateDetailed(
        'hell',
      ).cells,
      [99559, 10736, 21913, 33090],
    )
    t.same(
      new Sketch({ hasher: sipHash(1), seed: 0, levels: 4, cellsPerLevel: 1024 }).hasher.seed,
      new Uint8Array(16),
      'seed replaces the hasher seed',
    )
  },
)

t.test('loadCellsFromFrame refuses cell arrays whose length is not L × M', async (t) => {
  const s = new Sketch({ levels: 2, cellsPerLevel: 4, clock: new FakeClock(0) })
  t.throws(() => s.loadCellsFromFrame(new Float64Array(7), new Float64Array(8)), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
    message: /expected 8 scores and times, received 7 and 8/,
  })
  t.throws(() => s.loadCellsFromFrame(new Float64Array(8), new Float64Array(9)), {
    code: 'ERR_GRUDGE_FORMAT_INVALID',
  })
  s.loadCellsFromFrame(Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8]), new Float64Array(8))
  const d = s.estimateDetailed('k')
  t.same(d.scores, [1 + d.cells[0], 5 + d.cells[1]], 'the right length loads, level-major (cell p = level·M + index)')
})

t.test('linear decay drains negative scores toward 0 on update, never past it', async (t) => {
  // rate 4/s (spec: a linear score moves toward 0 by rate·Δt, stopping at 0), lo = −100.
  const clock = new FakeClock(0)
  const s = new Sketch({ levels: 2, cellsPerLevel: 64, lo: -100, hi: 100, decay: linear(4), hasher: murmur3(9), clock })
  const rows: { nowMs: number; delta: number; expected: number }[] = [
    { nowMs: 0, delta: -10, expected: -10 },
    { nowMs: 1_000, delta: -1, expected: -7 }, // −10 + 4, then −1
    { nowMs: 1_500, delta: 0, expected: -5 }, // −7 + 2
    { nowMs: 10_000, delta: -1, expected: -1 }, // −5 drained to 0 (not +29), then −1
    { nowMs: 10_250, delta: 3, expected: 3 }, // −1 + 1 = 0, then +3
  ]
  for (const row of rows) {
    clock.set(row.nowMs)
    s.update('k', row.delta)
    t.equal(s.estimate('k'), row.expected, `t=${row.nowMs} ms, update ${row.delta}`)
  }
})

t.test(
  'linear decay never crosses 0 in any operation, positive or negative scores (review: updateAndEstimate was untested)',
  async (t) => {
    // linear(1): a score of ±2 idle for 5 s drains to 0, not to ∓3; then the delta is added.
    const ops: [string, (s: Sketch) => number][] = [
      ['updateAndEstimate', (s) => s.updateAndEstimate('k', 1)],
      ['update + estimate', (s) => (s.update('k', 1), s.estimate('k'))],
      ['tryUpdate + estimate', (s) => (s.tryUpdate('k', 1, 10), s.estimate('k'))],
    ]
    for (const [name, op] of ops) {
      for (const start of [2, -2]) {
        const clock = new FakeClock()
        const s = new Sketch({ levels: 3, cellsPerLevel: 64, decay: linear(1), lo: -10, hi: 10, seed: 9, clock })
        s.update('k', start)
        clock.set(5000)
        t.equal(op(s), 1, `${name} from ${start}: drained to 0 then +1`)
      }
    }
  },
)

t.test(
  'a clock gone backwards: updateAndEstimate neither grows a score nor moves a time back (review: untested there)',
  async (t) => {
    for (const decay of [exponential(0.1), linear(1)]) {
      const clock = new FakeClock(10_000)
      const s = new Sketch({ levels: 3, cellsPerLevel: 64, decay, hi: 100, seed: 9, clock })
      s.update('k', 10)
      clock.set(5_000) // 5 s back
      t.equal(s.updateAndEstimate('k', 0), 10, `${decay.kind}: no growth going back`)
      clock.set(11_000) // 1 s after the last real stamp, not 6 s after the backwards reading
      t.equal(s.updateAndEstimate('k', 0), applyDecay(10, decay, 1000), `${decay.kind}: only 10 s → 11 s decays`)
    }
  },
)

t.test('an unknown option throws naming it and the closest option; every SketchOptions option passes', async (t) => {
  t.throws(() => new Sketch(typo<SketchOptions>({ level: 4 })), unknownOption('level', 'levels'))
  t.throws(
    () => new Sketch(typo<SketchOptions>({ levels: 2, cellsperlevel: 8 })),
    unknownOption('cellsperlevel', 'cellsPerLevel'),
  )
  t.throws(() => new Sketch(typo<SketchOptions>({ aggregater: undefined })), unknownOption('aggregater', 'aggregator'))
  const clock = new FakeClock(0)
  const all: Required<SketchOptions> = {
    levels: 2,
    cellsPerLevel: 8,
    decay: exponential(1),
    lo: -1,
    hi: 10,
    aggregator: 'max',
    hasher: sipHash(),
    seed: 7,
    clock,
  }
  t.same(Object.keys(all).sort(), [...SKETCH_OPTION_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => new Sketch(all))
  t.doesNotThrow(() => new Sketch({ levels: undefined, seed: undefined }), 'known options may be undefined')

  const bytes = serializeAtWall(new Sketch({ seed: 1, clock }), 0)
  t.throws(() => Sketch.deserialize(bytes, typo<DeserializeOptions>({ clok: clock })), unknownOption('clok', 'clock'))
  const read: Required<DeserializeOptions> = { clock, wallMs: 0 }
  t.doesNotThrow(() => Sketch.deserialize(bytes, read))
})

t.test('every At form equals its plain form at the clock reading it is given, time going back included', async (t) => {
  // the same step table run twice: once on the clock, once with the time passed explicitly
  const steps = [0, 1000, 400, 2500, 2500, 1800, 9000]
  const run = (explicit: boolean): number[] => {
    const clock = new FakeClock(0)
    const s = new Sketch({ levels: 3, cellsPerLevel: 64, decay: linear(1), hi: 20, seed: 5, clock })
    const out: number[] = []
    for (const now of steps) {
      if (!explicit) clock.set(now)
      if (explicit) s.updateAt(now, 'a', 3)
      else s.update('a', 3)
      out.push(explicit ? s.estimateAt(now, 'a') : s.estimate('a'))
      out.push(explicit ? s.updateAndEstimateAt(now, 'b', 2) : s.updateAndEstimate('b', 2))
      out.push(Number(explicit ? s.tryUpdateAt(now, 'c', 4, 10) : s.tryUpdate('c', 4, 10)))
      if (explicit) s.updateWithFloorAt(now, 'd', 1, 5)
      else s.updateWithFloor('d', 1, 5)
      const d = explicit ? s.estimateDetailedAt(now, 'd') : s.estimateDetailed('d')
      out.push(d.value, ...d.scores)
    }
    return out
  }
  t.same(run(true), run(false))
})

t.test('an At form reads a NaN or infinite time as a broken clock reading: nothing decays', async (t) => {
  const s = new Sketch({ decay: linear(1), seed: 1, clock: new FakeClock(0) })
  s.updateAt(1000, 'k', 10)
  for (const bad of [NaN, Infinity, -Infinity]) {
    t.equal(s.estimateAt(bad, 'k'), 10, `estimateAt(${bad})`)
  }
  t.equal(s.estimateAt(3000, 'k'), 8, 'the cell kept its time: 2 s of decay at 3 s')
})
