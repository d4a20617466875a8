// Rotator, serialization and replica deltas: ns/op (median of 7 runs) beside baselines
// measured in the same run. Run: `npm run bench -- rotator`; `GRUDGE_BENCH_QUICK=1` runs every
// row with a tiny count of operations (a smoke test of the bench, not a measurement).
import { Sketch, Rotator, SketchDelta, exponential, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const RUNS = 7
const KEYS = Array.from({ length: 4096 }, (_, i) => `10.0.${i >> 8}.${i & 255}`)

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]
}

/** ns per call of fn(i), i in [0, ops), median of RUNS runs. */
function nsPerOp(ops: number, fn: (i: number) => void): number {
  for (let i = 0; i < Math.min(ops, 20_000); i++) fn(i) // warm up
  const out: number[] = []
  for (let r = 0; r < RUNS; r++) {
    ;(globalThis as { gc?: () => void }).gc?.()
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < ops; i++) fn(i)
    out.push(Number(process.hrtime.bigint() - t0) / ops)
  }
  return median(out)
}

const cfg = { levels: 4, cellsPerLevel: 4096, decay: exponential(0.01), hi: 1e9 }
const plain = new Sketch(cfg)
const synced = new Sketch(cfg)
synced.takeDelta() // baseline allocated: delta tracking in use
const rotator = new Rotator({ sketch: cfg, generations: 2, periodMs: 60_000, ticker: new FakeTicker() })

const QUICK = process.env.GRUDGE_BENCH_QUICK === '1'
const OPS = QUICK ? 2_000 : 400_000
const base = nsPerOp(OPS, (i) => plain.update(KEYS[i & 4095], 1))
const withDelta = nsPerOp(OPS, (i) => synced.update(KEYS[i & 4095], 1))
const rot = nsPerOp(OPS, (i) => rotator.update(KEYS[i & 4095], 1))
console.log(`Sketch.update (4×4096, baseline)          ${base.toFixed(1)} ns/op`)
console.log(
  `Sketch.update after takeDelta()            ${withDelta.toFixed(1)} ns/op  (×${(withDelta / base).toFixed(2)} of baseline: the update path ignores deltas)`,
)
console.log(
  `Rotator.update, 2 generations              ${rot.toFixed(1)} ns/op  (×${(rot / base).toFixed(2)} of one Sketch)`,
)

// Self-sized against fixed, same size (4 × 4096 cells, 2 generations), runs interleaved so
// both see the same machine state; the sizer keeps the size, so only the meter differs
// (target: self-sized within 10 % of fixed, issue #14).
{
  const periodMs = 60_000
  const debt = { levels: 4, cellsPerLevel: 4096, decay: linear(1), hi: 10 }
  const sizing = { sizeNextGeneration: () => 4096, maxCellsPerLevel: 4096 }
  const pairs: [string, (r: Rotator, i: number) => void, typeof debt | typeof cfg][] = [
    ['tryUpdate, debt meter (linear, carry)', (r, i) => r.tryUpdate(KEYS[i & 4095], 1, 10), debt],
    ['update, exponential', (r, i) => r.update(KEYS[i & 4095], 1), cfg],
  ]
  for (const [name, op, sketch] of pairs) {
    const fixed = new Rotator({ sketch, periodMs, ticker: new FakeTicker() })
    const sized = new Rotator({ sketch, periodMs, ticker: new FakeTicker(), sizing })
    const f: number[] = []
    const z: number[] = []
    for (let run = 0; run < (QUICK ? 1 : 5); run++) {
      f.push(nsPerOp(OPS, (i) => op(fixed, i)))
      z.push(nsPerOp(OPS, (i) => op(sized, i)))
    }
    const a = median(f)
    const b = median(z)
    console.log(
      `Rotator.${name.padEnd(38)} fixed ${a.toFixed(1)} ns/op, self-sized ${b.toFixed(1)} ns/op  (×${(b / a).toFixed(3)}; target ≤ ×1.10)`,
    )
    fixed.close()
    sized.close()
  }
}

const bytes = plain.serialize()
const FEW = QUICK ? 5 : 200
const ser = nsPerOp(FEW, () => plain.serialize())
const des = nsPerOp(FEW, () => Sketch.deserialize(bytes))
const take = nsPerOp(FEW, () => synced.takeDelta())
for (let i = 0; i < 4096; i++) synced.update(KEYS[i], 1) // a delta touching most cells
const d = synced.takeDelta()
const dBytes = d.serialize()
const other = new Sketch({ ...cfg, hasher: synced.hasher })
const few = new Sketch({ ...cfg, hasher: synced.hasher })
few.takeDelta()
for (let i = 0; i < 64; i++) few.update(KEYS[i], 1)
const fewBytes = few.takeDelta().serialize()
const apply = nsPerOp(FEW, () => other.applyDelta(d))
const applyBytes = nsPerOp(FEW, () => other.applyDelta(SketchDelta.deserialize(dBytes)))
const cells = cfg.levels * cfg.cellsPerLevel
console.log(`frame size                                  ${bytes.length} bytes for ${cells} cells`)
console.log(
  `Sketch.serialize                            ${(ser / 1000).toFixed(1)} µs  (${(ser / cells).toFixed(2)} ns/cell)`,
)
console.log(
  `Sketch.deserialize (all checks)             ${(des / 1000).toFixed(1)} µs  (${(des / cells).toFixed(2)} ns/cell)`,
)
console.log(
  `takeDelta                                   ${(take / 1000).toFixed(1)} µs  (${(take / cells).toFixed(2)} ns/cell)`,
)
console.log(
  `applyDelta (object)                         ${(apply / 1000).toFixed(1)} µs  (${(apply / cells).toFixed(2)} ns/cell)`,
)
console.log(
  `applyDelta (from bytes)                     ${(applyBytes / 1000).toFixed(1)} µs  (${(applyBytes / cells).toFixed(2)} ns/cell)`,
)
console.log(`delta frame, 64 keys updated                ${fewBytes.length} bytes sparse (dense: ${dBytes.length})`)
rotator.close()

// The fold pause (spec/rotator.md §1, _Early growth by folding_, _Cost_): an in-process early
// growth of both generations (N = 2, L = 4, one after the other) from 2^14 to 2^16 cells per level (the default
// budget's largest) and from 2^19 to 2^21 (a 320 MiB budget), a fresh Rotator each time (a growth
// happens once); 5 rounds alternating the two, median (min–max). `at once` (foldSliceCells = Infinity, the fold as it was): the one
// check (`ticker.tick()`) that folds both; `lazy` (the default): that check (it allocates the
// deciding generation's larger one and copies nothing), the slice that ends its fold and starts
// the youngest's (one generation folds at a time: it allocates the youngest's larger one), then
// the longest of the other slices and their 99th percentile (`foldSlice()`, 8,192 cells each, run here back to back as the
// event loop's turns would) until the folds end. Quick:
// 2^8 → 2^10 once (the path, not a measurement).
{
  const rows: [string, number, number][] = QUICK
    ? [['2^8 → 2^10 (smoke)', 1 << 8, 1 << 10]]
    : [
        ['2^14 → 2^16 (default budget)', 1 << 14, 1 << 16],
        ['2^19 → 2^21 (320 MiB budget)', 1 << 19, 1 << 21],
      ]
  /** One early growth from `from` to `to`: the check's ms, the longest slice's ms and the slices. */
  const once = (
    from: number,
    to: number,
    lazy: boolean,
  ): { check: number; slice: number; p99: number; start: number; slices: number } => {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    let big = false
    const r = new Rotator({
      sketch: { levels: 4, cellsPerLevel: from, decay: linear(1), hi: 10 },
      generations: 2,
      periodMs: 60_000,
      clock,
      ticker,
      sizing: { sizeNextGeneration: () => (big ? to : from), maxCellsPerLevel: to, growEarlyWhen: () => big },
    })
    if (!lazy) r.foldSliceCells = Infinity
    for (let i = 0; i < 4096; i++) r.tryUpdate(KEYS[i], 1, 10)
    ;(globalThis as { gc?: () => void }).gc?.()
    big = true
    clock.set(1000)
    const t0 = process.hrtime.bigint()
    ticker.tick()
    const dt = Number(process.hrtime.bigint() - t0) / 1e6
    const grown = (k: number) => r.generationCellsPerLevel.slice(0, k).every((m) => m === to)
    if (r.earlyGrowths !== 1 || !grown(lazy ? 1 : 2))
      throw new Error(`fold pause row: expected one early growth to ${to}, got ${r.generationCellsPerLevel.join(', ')}`)
    let longest = 0
    let start = 0
    const others: number[] = []
    let n = 0
    for (let left = 1; left > 0; n++) {
      const before = grown(2)
      const s0 = process.hrtime.bigint()
      left = r.foldSlice()
      const ds = Number(process.hrtime.bigint() - s0) / 1e6
      // the slice that ends the deciding generation's fold starts the youngest's (one at a time)
      if (!before && grown(2)) start = ds
      else {
        others.push(ds)
        if (ds > longest) longest = ds
      }
    }
    if (!grown(2)) throw new Error(`fold pause row: the folds ended at ${r.generationCellsPerLevel.join(', ')}`)
    r.close()
    others.sort((a, b) => a - b)
    const p99 = others.length === 0 ? 0 : others[Math.floor(0.99 * (others.length - 1))]
    return { check: dt, slice: longest, p99, start, slices: n }
  }
  const spread = (xs: number[], digits: number): string =>
    `${median(xs).toFixed(digits)} ms (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`
  for (const [name, from, to] of rows) {
    const results = { false: [] as ReturnType<typeof once>[], true: [] as ReturnType<typeof once>[] }
    // alternating rounds: at once first in even rounds, lazy first in odd ones
    for (let round = 0; round < (QUICK ? 1 : 5); round++)
      for (const lazy of round % 2 === 0 ? [false, true] : [true, false]) results[`${lazy}`].push(once(from, to, lazy))
    for (const lazy of [false, true]) {
      const rs = results[`${lazy}`]
      const ms = rs.map((x) => x.check)
      const sliceMs = rs.map((x) => x.slice)
      const startMs = rs.map((x) => x.start)
      const p99Ms = rs.map((x) => x.p99)
      const slices = rs.map((x) => x.slices)
      const bytes = 2 * 4 * to * 16
      const size = bytes >= 1048576 ? `${bytes / 1048576} MiB` : `${bytes / 1024} KiB`
      console.log(
        lazy
          ? `fold pause, early growth ${name.padEnd(36)} lazy:    the check ${spread(ms, 2)}, the slice that starts the youngest's fold ${spread(startMs, 2)}, the longest of the other ${median(slices) - 1} slices ${spread(sliceMs, 3)} (their 99th percentile ${spread(p99Ms, 3)})  (${size} of cells written)`
          : `fold pause, early growth ${name.padEnd(36)} at once: the check ${spread(ms, 1)}  (${size} of cells written; one pause per growth)`,
      )
    }
  }
}
