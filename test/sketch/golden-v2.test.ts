import t from 'tap'
import { readFileSync } from 'node:fs'
import { Rotator, Sketch, SketchDelta, exponential, murmur3 } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { closeUp, f32Up } from './fixtures/f32.js'
import { sketchFrameV1 } from './fixtures/sketch-v1.js'
import {
  WALL_V2,
  rotatorMixedLinearV3,
  sketchDeltaSparseV2,
  sketchExponentialV2,
} from '../fixtures/golden-v2-inputs.js'

// Frames of sketch format version 2 and rotator format version 3, written once by
// test/fixtures/make-golden-v2.ts from the inputs in golden-v2-inputs.ts. Every expected
// value is worked by hand from those operations and spec/format.md's byte tables; Float32
// roundings come from the IEEE reference in fixtures/f32.ts.
const load = (name: string): Uint8Array => new Uint8Array(readFileSync(new URL(`../fixtures/${name}`, import.meta.url)))
const EPOCH_HALF = 2 ** 31

/** The (score, tick) of every cell of a layout-2 dense block starting at `at` in `bytes`. */
function cells(bytes: Uint8Array, at: number, n: number): { epoch: number; set: [number, number, number][] } {
  const dv = new DataView(bytes.buffer, bytes.byteOffset + at)
  const set: [number, number, number][] = []
  const zeros: number[] = []
  for (let p = 0; p < n; p++) {
    const s = dv.getFloat32(8 + 8 * p, true)
    const tick = dv.getUint32(12 + 8 * p, true)
    if (s !== 0) set.push([p, s, tick])
    else if (tick !== 0 || Object.is(s, -0)) zeros.push(p)
  }
  if (zeros.length > 0) throw new Error(`zero cells with bits set: ${zeros.join(', ')}`)
  return { epoch: dv.getFloat64(0, true), set }
}

t.test('sketch-exponential.v2.bin: the inputs still encode to it, byte for byte', async (t) => {
  t.same([...sketchExponentialV2().bytes], [...load('sketch-exponential.v2.bin')])
})

t.test('sketch-exponential.v2.bin: layout, epoch, ticks and Float32 scores as the rules give them', async (t) => {
  const bytes = load('sketch-exponential.v2.bin')
  t.equal(bytes.length, 36 + 52 + 8 + 8 * 2 * 64 + 4, 'header 36, shape 52, epoch 8, 8 B a cell, CRC 4')
  t.same([...bytes.subarray(0, 8)], [0x47, 0x52, 0x44, 0x47, 1, 2, 0, 0], 'magic GRDG, family 1, version 2, flags 0')
  const { epoch, set } = cells(bytes, 36 + 52, 128)
  t.equal(epoch, 10_000 - EPOCH_HALF, 'the first reading (alice at 10 s) less 2^31 ms')
  // alice at 10 s: 8 (a Float32) at tick 2^31; bob at 15 s: 0.7 rounded up, tick 2^31 + 5 000
  const bob = f32Up(0.7)
  t.ok(Math.fround(0.7) < 0.7 && bob > 0.7, 'the Float32 nearest 0.7 is below it, so a cell stores the next one up')
  t.same(
    set.map(([, s, tick]) => [s, tick]).sort((a, b) => a[0] - b[0] || a[1] - b[1]),
    [
      [bob, EPOCH_HALF + 5_000],
      [bob, EPOCH_HALF + 5_000],
      [8, EPOCH_HALF],
      [8, EPOCH_HALF],
    ],
    'two levels per key, no collision',
  )
})

t.test('sketch-exponential.v2.bin: decays across the restart and re-encodes to the same bytes', async (t) => {
  const bytes = load('sketch-exponential.v2.bin')
  const clock = new FakeClock(20_000)
  const s = Sketch.deserialize(bytes, { clock, wallMs: WALL_V2 })
  t.equal(s.levels, 2)
  t.equal(s.cellsPerLevel, 64)
  closeUp(t, s.decay.ratePerSecond, Math.LN2 / 10, 'λ = ln 2 / 10 s', 0)
  t.same(s.serializeAt(20_000, WALL_V2), bytes, 'the same clock and wall clock: epoch and every cell restored')
  // alice: 8 at 10 s, read at 20 s: one half-life → 4; bob: 0.7↑ at 15 s, half a half-life
  closeUp(t, s.estimate('alice'), 4, 'alice', 2)
  closeUp(t, s.estimate('bob'), f32Up(0.7) / Math.SQRT2, 'bob', 2)
  const later = Sketch.deserialize(bytes, { clock: new FakeClock(77), wallMs: WALL_V2 + 10_000 })
  closeUp(t, later.estimate('alice'), 2, 'alice after 10 s down', 2)
  closeUp(t, later.estimate('bob'), f32Up(0.7) / 2 / Math.SQRT2, 'bob after 10 s down', 2)
  const v1 = Sketch.deserialize(sketchFrameV1(bytes), { clock: new FakeClock(20_000), wallMs: WALL_V2 })
  t.equal(v1.estimate('alice'), s.estimate('alice'), 'its version-1 form reads the same')
  t.equal(v1.estimate('bob'), s.estimate('bob'))
})

t.test('sketch-delta-sparse.v2.bin: 8-byte entries, applied into a new and a version-1-loaded sketch', async (t) => {
  const bytes = load('sketch-delta-sparse.v2.bin')
  t.same([...sketchDeltaSparseV2().bytes], [...bytes], 'the inputs still encode to it, byte for byte')
  t.same([...bytes.subarray(0, 8)], [0x47, 0x52, 0x44, 0x47, 1, 2, 5, 0], 'family 1, version 2, flags delta | sparse')
  const pv = new DataView(bytes.buffer, bytes.byteOffset + 36 + 52)
  t.equal(pv.getUint32(0, true), 4, 'K = 4: a and b in two levels, no collision')
  t.equal(bytes.length, 36 + 52 + 16 + 8 * 4 + 4, 'sparse header 16 + 8 B an entry')
  t.equal(pv.getUint32(4, true), 0, 'reserved')
  t.equal(pv.getFloat64(8, true), 2_000, 'taken at 2 s')
  const values = [0, 1, 2, 3].map((k) => pv.getFloat32(16 + 8 * k + 4, true)).sort((a, b) => a - b)
  t.same(values, [-2, -2, 3, 3])
  const idx = [0, 1, 2, 3].map((k) => pv.getUint32(16 + 8 * k, true))
  t.ok(
    idx.every((p, k) => p < 32 && (k === 0 || p > idx[k - 1])),
    `indexes increasing, < L·M = 32: ${idx.join(', ')}`,
  )
  const config = {
    levels: 2,
    cellsPerLevel: 16,
    decay: exponential(0.1),
    lo: -10,
    hi: 10,
    hasher: murmur3(8),
  }
  const clock = new FakeClock(2_000)
  const fresh = new Sketch({ ...config, clock })
  fresh.applyDelta(bytes, { wallMs: WALL_V2 })
  t.equal(fresh.estimate('a'), 3)
  t.equal(fresh.estimate('b'), -2)
  // a receiver loaded from a version-1 frame (c +1 at 1 s, serialized at 2 s)
  const old = new Sketch({ ...config, clock: new FakeClock(1_000) })
  old.update('c', 1)
  const oldFrame = sketchFrameV1(old.serializeAt(2_000, WALL_V2))
  const loaded = Sketch.deserialize(oldFrame, { clock, wallMs: WALL_V2 })
  loaded.applyDelta(SketchDelta.deserialize(bytes, { clock, wallMs: WALL_V2 }))
  t.equal(loaded.estimate('a'), 3)
  t.equal(loaded.estimate('b'), -2)
  closeUp(t, loaded.estimate('c'), Math.exp(-0.1), 'c: 1 after 1 s at 0.1/s', 2)
  // and a new sketch merging the version-1-loaded one
  const merged = new Sketch({ ...config, clock })
  merged.update('a', 1)
  merged.merge(loaded)
  t.equal(merged.estimate('a'), 4)
  closeUp(t, merged.estimate('c'), Math.exp(-0.1), 'c merged', 3)
})

t.test('rotator-mixed-linear.v3.bin: generations of two shapes in 8-byte cells', async (t) => {
  const bytes = load('rotator-mixed-linear.v3.bin')
  const built = rotatorMixedLinearV3()
  t.same([...built.bytes], [...bytes], 'the inputs still encode to it, byte for byte')
  built.rotator.close()
  t.equal(bytes.length, 36 + 84 + (32 + 8 + 8 * 2 * 64) + (32 + 8 + 8 * 2 * 16) + 4)
  t.same(
    [...bytes.subarray(0, 8)],
    [0x47, 0x52, 0x44, 0x47, 2, 3, 2 | 8, 0],
    'family 2, version 3, flags seeded | keyed-mix placement',
  )
  const payload = new DataView(bytes.buffer, bytes.byteOffset + 36 + 84)
  const g1 = 32 + 8 + 8 * 2 * 64
  t.equal(payload.getUint32(16, true), 64)
  t.equal(payload.getFloat64(24, true), 0)
  t.equal(payload.getUint32(g1 + 16, true), 16)
  t.equal(payload.getFloat64(g1 + 24, true), 10_000)
  for (const [g, at, n] of [
    [0, 36 + 84 + 32, 128],
    [1, 36 + 84 + g1 + 32, 32],
  ]) {
    const { epoch, set } = cells(bytes, at, n)
    // the rotation at 10 s writes no cell: each generation's first reading is alice's at 12 s
    t.equal(epoch, 12_000 - EPOCH_HALF, `generation ${g}: epoch 12 s − 2^31 ms`)
    t.same(
      set.map(([, s, tick]) => [s, tick]).sort((a, b) => a[0] - b[0]),
      [
        [3, EPOCH_HALF + 2_000],
        [3, EPOCH_HALF + 2_000],
        [6, EPOCH_HALF],
        [6, EPOCH_HALF],
      ],
      `generation ${g}: alice 6 at 12 s, bob 3 at 14 s, in both levels`,
    )
  }
  const clock = new FakeClock(15_000)
  const r = Rotator.deserialize(bytes, { clock, wallMs: WALL_V2, ticker: new FakeTicker() })
  t.same(r.generationCellsPerLevel, [64, 16])
  t.same(r.serializeAt(15_000, WALL_V2), bytes, 're-encoded on the same clock before any read: the same bytes')
  t.equal(r.estimate('alice'), 3, 'alice: 6 at 12 s, 3 s drained at 1/s')
  t.equal(r.estimate('bob'), 2, 'bob: 3 at 14 s, 1 s drained')
  r.close()
})
