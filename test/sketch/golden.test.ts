import t from 'tap'
import { readFileSync } from 'node:fs'
import { Sketch, SketchDelta, Rotator, halfLife } from '../../src/index.js'
import { Murmur3Hasher, seedBytes } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'

// Frames written once by test/fixtures/make-golden.ts (format version 1). Every expected
// value below is worked by hand from the operations listed in that script.
const WALL = 1_750_000_000_000
const load = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../fixtures/${name}`, import.meta.url)))
const close = (t: { ok: (v: boolean, m: string) => unknown }, got: number, want: number, msg: string): void => {
  t.ok(Math.abs(got - want) <= 1e-12 * Math.max(1, Math.abs(want)), `${msg}: ${got} ≈ ${want}`)
}

t.test('sketch-exponential-murmur3.v1.bin: header, config and decayed scores', async (t) => {
  const bytes = load('sketch-exponential-murmur3.v1.bin')
  t.equal(bytes.length, 36 + 52 + 2 * 64 * 16 + 4)
  t.same([...bytes.subarray(0, 8)], [0x47, 0x52, 0x44, 0x47, 1, 1, 0, 0], 'magic GRDG, family 1, version 1, flags 0')
  const s = Sketch.deserialize(bytes, { clock: new FakeClock(0), wallMs: WALL })
  t.equal(s.levels, 2)
  t.equal(s.cellsPerLevel, 64)
  t.equal(s.decay.kind, 'exponential')
  close(t, s.decay.ratePerSecond, Math.LN2 / 10, 'λ = ln 2 / 10 s')
  t.equal(s.lo, 0)
  t.equal(s.hi, 100)
  t.equal(s.aggregator, 'min')
  t.equal(s.hasher.name, 'murmur3x64', 'written before 0.1.0: hasher id 1, MurmurHash3_x64_128 h1')
  t.same([...s.hasher.seed], [...seedBytes(42)])
  // alice: 8 written at t=10 s, serialized at t=20 s: one half-life old → 4
  close(t, s.estimate('alice'), 4, 'alice')
  // bob: 3 written at t=15 s: half a half-life old → 3 / √2
  close(t, s.estimate('bob'), 3 / Math.SQRT2, 'bob')
  // after 10 s of downtime: one more half-life
  const later = Sketch.deserialize(bytes, { clock: new FakeClock(123), wallMs: WALL + 10_000 })
  close(t, later.estimate('alice'), 2, 'alice after 10 s down')
  close(t, later.estimate('bob'), 1.5 / Math.SQRT2, 'bob after 10 s down')
})

t.test('sketch-linear-siphash.v1.bin: a debt drains across the restart', async (t) => {
  const bytes = load('sketch-linear-siphash.v1.bin')
  const clock = new FakeClock(50_000)
  const s = Sketch.deserialize(bytes, { clock, wallMs: WALL + 1_000 })
  t.equal(s.levels, 3)
  t.equal(s.cellsPerLevel, 32)
  t.same(s.decay, { kind: 'linear', ratePerSecond: 2 })
  t.equal(s.lo, -5)
  t.equal(s.hi, 10)
  t.equal(s.aggregator, 'max')
  t.equal(s.hasher.name, 'siphash')
  t.equal(Buffer.from(s.hasher.seed).toString('hex'), '000102030405060708090a0b0c0d0e0f')
  // alice: 10 admitted at t=1 s; 2 s to serialization + 1 s down = 3 s at 2/s → 10 − 6
  t.equal(s.estimate('alice'), 4)
  // carol: −4 at t=3 s (serialization), 1 s down → −4 + 2
  t.equal(s.estimate('carol'), -2)
  t.equal(s.tryUpdate('alice', 6, 10), true, '4 + 6 ≤ 10')
  clock.advance(10_000)
  t.equal(s.estimate('alice'), 0)
  t.equal(s.estimate('carol'), 0)
})

t.test('rotator-none.v1.bin: generations, seeds and rotation phase across downtimes', async (t) => {
  const bytes = load('rotator-none.v1.bin')
  // last rotation at t=10 s, serialized at t=15 s (5 s into the period); generations
  // 1: 5+2, 2: 5+2, 3: 2. Missed rotations = floor((5 s + downtime) / 10 s).
  const rows = [
    { downMs: 0, rotations: 1, k: 7 },
    { downMs: 4_999, rotations: 1, k: 7 },
    { downMs: 5_000, rotations: 2, k: 7 },
    { downMs: 15_000, rotations: 3, k: 2 },
    { downMs: 25_000, rotations: 4, k: 0 },
    { downMs: 1e9, rotations: 100_001, k: 0 },
  ]
  for (const row of rows) {
    const ticker = new FakeTicker()
    const r = Rotator.deserialize(bytes, { clock: new FakeClock(0), ticker, wallMs: WALL + row.downMs })
    t.equal(r.generations, 3)
    t.equal(r.periodMs, 10_000)
    t.equal(r.rotations, row.rotations, `down ${row.downMs} ms: rotations`)
    t.equal(r.estimate('k'), row.k, `down ${row.downMs} ms: k`)
    t.equal(ticker.size, 1, 'the restored rotator runs on the given ticker')
    const twin = new Rotator({
      // the frame's hasher id 1 (murmur3x64, the default before 0.1.0)
      sketch: { levels: 2, cellsPerLevel: 32, hi: 1000, aggregator: 'mean', hasher: new Murmur3Hasher(0, 'x64_128') },
      generations: 3,
      periodMs: 10_000,
      seed: 7,
      ticker,
    })
    twin.rotateTo(row.rotations)
    t.notOk(
      r.isCompatible(twin),
      'an old frame keeps its placement: it never merges with a keyed-mix twin of the same seeds',
    )
    r.close()
    twin.close()
  }
})

t.test('sketch-delta-exponential.v1.bin: a delta frame applies into a compatible sketch', async (t) => {
  const bytes = load('sketch-delta-exponential.v1.bin')
  t.equal(bytes[6] & 1, 1, 'flag bit 0: delta')
  const d = SketchDelta.deserialize(bytes, { clock: new FakeClock(0), wallMs: WALL + 10_000 })
  const clock = new FakeClock(0)
  const s = new Sketch({
    levels: 2,
    cellsPerLevel: 64,
    decay: halfLife(10_000),
    hi: 100,
    hasher: new Murmur3Hasher(42, 'x64_128'),
    clock,
  }) // the frame's id 1
  s.applyDelta(d)
  // +6 taken at serialization, 10 s (one half-life) in transit → 3
  close(t, s.estimate('alice'), 3, 'alice')
  t.equal(s.estimate('bob'), 0)
  // on top of the golden sketch 1, without downtime: 4 + 6
  const base = Sketch.deserialize(load('sketch-exponential-murmur3.v1.bin'), { clock, wallMs: WALL })
  base.applyDelta(bytes, { wallMs: WALL })
  close(t, base.estimate('alice'), 10, 'alice on sketch 1')
  t.throws(
    () => Sketch.deserialize(bytes),
    { code: 'ERR_GRUDGE_FORMAT_INVALID', message: /delta/ },
    'a delta is not a full sketch',
  )
})

t.test('sketch-delta-sparse-exponential.v1.bin: the same delta in the sparse encoding', async (t) => {
  const bytes = load('sketch-delta-sparse-exponential.v1.bin')
  t.equal(bytes[6], 1 | 4, 'flags: delta, sparse')
  t.equal(bytes.length, 36 + 52 + 16 + 12 * 2 + 4, 'two non-zero cells (alice in each level)')
  const clock = new FakeClock(0)
  const s = new Sketch({
    levels: 2,
    cellsPerLevel: 64,
    decay: halfLife(10_000),
    hi: 100,
    hasher: new Murmur3Hasher(42, 'x64_128'),
    clock,
  }) // the frame's id 1
  s.applyDelta(bytes, { wallMs: WALL + 10_000 })
  close(t, s.estimate('alice'), 3, 'alice: +6, one half-life in transit')
  const dense = SketchDelta.deserialize(load('sketch-delta-exponential.v1.bin'), { clock, wallMs: WALL })
  const sparse = SketchDelta.deserialize(bytes, { clock, wallMs: WALL })
  t.same([...sparse.scores], [...dense.scores], 'both encodings hold the same cells')
})

t.test('rotator-delta-sparse.v1.bin: a rotator delta applies to every generation of a twin', async (t) => {
  const bytes = load('rotator-delta-sparse.v1.bin')
  t.equal(bytes[6], 1 | 2 | 4, 'flags: delta, seeded, sparse')
  const ticker = new FakeTicker()
  const twin = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 32, hi: 1000, aggregator: 'mean', hasher: new Murmur3Hasher(0, 'x64_128') },
    generations: 3,
    periodMs: 10_000,
    seed: 7,
    clock: new FakeClock(0),
    ticker,
  })
  // an old-placement delta (each generation hashed under its own seed) is refused by a keyed-mix twin, loudly
  t.throws(() => twin.applyDelta(bytes, { wallMs: WALL }), { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE' })
  t.equal(twin.estimate('k'), 0, 'nothing applied')
  twin.close()
})

t.test(
  'rotator-mixed-linear.v2.bin: generations of different shapes, each with its size and creation time',
  async (t) => {
    const bytes = load('rotator-mixed-linear.v2.bin')
    // 36 header + 84 params + per generation 32 (seed, M, reserved, creation) + 16 × L × M, + 4 CRC
    t.equal(bytes.length, 36 + 84 + (32 + 16 * 2 * 64) + (32 + 16 * 2 * 16) + 4)
    t.same(
      [...bytes.subarray(0, 8)],
      [0x47, 0x52, 0x44, 0x47, 2, 2, 2, 0],
      'magic GRDG, family 2, version 2, flags: seeded',
    )
    const payload = new DataView(bytes.buffer, bytes.byteOffset + 36 + 84)
    t.equal(payload.getUint32(16, true), 64, 'generation 0: 64 cells per level')
    t.equal(payload.getFloat64(24, true), 0, 'created at t = 0')
    const g1 = 32 + 16 * 2 * 64
    t.equal(payload.getUint32(g1 + 16, true), 16, 'generation 1: 16 cells per level')
    t.equal(payload.getFloat64(g1 + 24, true), 10_000, 'created at the rotation at t = 10 s')
    const clock = new FakeClock(15_000)
    const ticker = new FakeTicker()
    const r = Rotator.deserialize(bytes, { clock, wallMs: WALL, ticker })
    t.same(r.generationCellsPerLevel, [64, 16])
    t.equal(r.rotations, 1)
    // alice: +6 at 12 s, 3 s drained at 1/s; bob: +3 at 14 s, 1 s drained
    t.equal(r.estimate('alice'), 3)
    t.equal(r.estimate('bob'), 2)
    r.rotate()
    // the 16-cell generation received the same writes (alice carried at the floor 6): same readings
    t.same(r.generationCellsPerLevel, [16, 16], 'a new generation takes the youngest shape without a sizer')
    t.equal(r.estimate('alice'), 3)
    t.equal(r.estimate('bob'), 2)
    r.close()
  },
)

t.test('a version 2 rotator frame whose generations disagree with its header is refused', async (t) => {
  const bytes = load('rotator-mixed-linear.v2.bin')
  const f = readFrame(bytes, FAMILY.rotator, 2)
  const reframe = (edit: (params: DataView, payload: DataView) => void): Uint8Array => {
    const params = new Uint8Array(f.params)
    const payload = new Uint8Array(f.payload)
    edit(new DataView(params.buffer), new DataView(payload.buffer))
    return writeFrame({
      family: FAMILY.rotator,
      version: 2,
      flags: f.flags,
      seed: new Uint8Array(f.seed),
      params,
      payload,
    })
  }
  const g1 = 32 + 16 * 2 * 64
  const cases: [string, Uint8Array, RegExp][] = [
    ['header says 32 cells per level', reframe((p) => p.setUint32(4, 32, true)), /generation 0 cellsPerLevel/],
    ['generation 0 says 32', reframe((_, q) => q.setUint32(16, 32, true)), /generation 0 cellsPerLevel/],
    [
      'generation 1 says 32: its cells overrun the payload',
      reframe((_, q) => q.setUint32(g1 + 16, 32, true)),
      /payload length/,
    ],
    ['generation 1 says 8: bytes left over', reframe((_, q) => q.setUint32(g1 + 16, 8, true)), /payload length/],
    ['generation 1 says 0', reframe((_, q) => q.setUint32(g1 + 16, 0, true)), /generation 1 cellsPerLevel/],
    ['reserved bytes', reframe((_, q) => q.setUint32(g1 + 20, 1, true)), /generation 1 reserved/],
    ['creation time NaN', reframe((_, q) => q.setFloat64(g1 + 24, NaN, true)), /generation 1 creation ms/],
    ['header says 3 generations', reframe((p) => p.setUint32(52, 3, true)), /payload length/],
  ]
  for (const [name, frame, message] of cases) {
    const ticker = new FakeTicker()
    t.throws(
      () => Rotator.deserialize(frame, { clock: new FakeClock(0), wallMs: WALL, ticker }),
      { code: 'ERR_GRUDGE_FORMAT_INVALID', message },
      name,
    )
    t.equal(ticker.size, 0, `${name}: nothing started`)
  }
})
