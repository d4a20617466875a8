// A sparse delta frame declares levels × cellsPerLevel cells but carries only its non-zero
// ones. Reading it allocated the declared shape: a CRC-valid Sketch delta of 132 bytes made
// SketchDelta.deserialize allocate 32 GiB, a 292-byte Rotator delta 96 GiB, and under a
// memory limit that was an uncoded RangeError (issue 15, "Hardening"). Here header fields
// of valid frames are mutated, the CRC recomputed, and every read must end in a result or
// a coded GrudgeError with allocation bounded by a small multiple of the frame's length.
import t from 'tap'
import { GrudgeError, Rotator, RotatorDelta, Sketch, SketchDelta, linear } from '../../src/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { crc32c } from '../../src/format/crc32c.js'
import { HEADER_BYTES } from '../../src/format/frame.js'
import { mulberry32 } from '../fixtures/mulberry32.js'

const WALL = 1_750_000_000_000
const CELLS = { levels: 2, cellsPerLevel: 64, decay: linear(1), hi: 100 }
const SHAPE = { ...CELLS, seed: 7 }
const newRotator = (clock: FakeClock): Rotator =>
  new Rotator({ sketch: CELLS, seed: 7, generations: 3, periodMs: 60_000, clock, ticker: new FakeTicker() })

function resealed(frame: Uint8Array, mutate: (dv: DataView, bytes: Uint8Array) => void): Uint8Array {
  const out = new Uint8Array(frame)
  const dv = new DataView(out.buffer)
  mutate(dv, out)
  dv.setUint32(out.length - 4, crc32c(out, 0, out.length - 4), true)
  return out
}

function sketchDeltaFrame(): Uint8Array {
  const clock = new FakeClock(1000)
  const s = new Sketch({ ...SHAPE, clock })
  s.update('alice', 5)
  return s.takeDelta().serializeAt(1000, WALL)
}

function rotatorDeltaFrame(): Uint8Array {
  const clock = new FakeClock(1000)
  const r = newRotator(clock)
  r.update('alice', 5)
  const bytes = r.takeDelta().serializeAt(1000, WALL)
  r.close()
  return bytes
}

/** arrayBuffers growth while `fn`'s result is alive; the result (or the error) is returned. */
function measured(fn: () => unknown): { grew: number; result: unknown } {
  const before = process.memoryUsage().arrayBuffers
  let result: unknown
  try {
    result = fn()
  } catch (err) {
    result = err
  }
  return { grew: process.memoryUsage().arrayBuffers - before, result }
}

const P = HEADER_BYTES // params start: levels u32 at +0, cellsPerLevel u32 at +4; rotator generations u32 at +52

t.test('the reported frames: declared 2^31 − 1 cells, allocation bounded, coded refusal', async (t) => {
  const sketchHuge = resealed(sketchDeltaFrame(), (dv) => {
    dv.setUint32(P, 1, true)
    dv.setUint32(P + 4, 0x7fffffff, true)
  })
  t.equal(sketchHuge.length, 132, 'the 132-byte frame of the report')
  // above the bound of L × M (2^30): refused as it is read
  const huge = measured(() => SketchDelta.deserialize(sketchHuge, { clock: new FakeClock(1000), wallMs: WALL }))
  t.match(huge.result, { code: 'ERR_GRUDGE_FORMAT_INVALID' }, 'a shape above 2^30 cells is refused')
  t.ok(huge.grew < 1 << 20, `allocated ${huge.grew} bytes (< 1 MiB), not 32 GiB`)
  // at the bound: read, kept sparse, refused on apply
  const sketchBig = resealed(sketchDeltaFrame(), (dv) => {
    dv.setUint32(P, 1, true)
    dv.setUint32(P + 4, 2 ** 30, true)
  })
  const read = measured(() => SketchDelta.deserialize(sketchBig, { clock: new FakeClock(1000), wallMs: WALL }))
  t.type(read.result, SketchDelta, 'a CRC-valid sparse delta of a huge shape is read')
  t.ok(read.grew < 1 << 20, `allocated ${read.grew} bytes (< 1 MiB), not 16 GiB`)
  const d = read.result as SketchDelta
  t.equal(d.cellsPerLevel, 2 ** 30)
  t.equal(d.isEmpty(), false)
  const receiver = new Sketch({ ...SHAPE, clock: new FakeClock(1000) })
  const applied = measured(() => receiver.applyDelta(sketchBig, { wallMs: WALL }))
  t.match(applied.result, { code: 'ERR_GRUDGE_MERGE_INCOMPATIBLE' }, 'the receiver refuses the other shape')
  t.ok(applied.grew < 1 << 20, `applyDelta allocated ${applied.grew} bytes`)

  const rotBig = resealed(rotatorDeltaFrame(), (dv) => {
    dv.setUint32(P, 1, true)
    dv.setUint32(P + 4, 0x7fffffff, true)
  })
  // the report's 292-byte frame was rotator version 1; version 2 also records each generation's
  // cells per level, so a header that declares another shape is refused as it is read
  const rread = measured(() => RotatorDelta.deserialize(rotBig, { clock: new FakeClock(1000), wallMs: WALL }))
  t.match(rread.result, { code: 'ERR_GRUDGE_FORMAT_INVALID' }, 'generations that disagree with the header')
  t.ok(rread.grew < 1 << 20, `allocated ${rread.grew} bytes (< 1 MiB), not 96 GiB`)
  const rr = newRotator(new FakeClock(1000))
  const rapplied = measured(() => rr.applyDelta(rotBig, { wallMs: WALL }))
  t.match(rapplied.result, { code: /^ERR_GRUDGE_(MERGE_INCOMPATIBLE|FORMAT_INVALID)$/ })
  t.ok(rapplied.grew < 1 << 20)
  rr.close()
})

t.test('a sparse delta still applies exactly, and its dense view is built only on demand', async (t) => {
  const clock = new FakeClock(1000)
  const a = new Sketch({ ...SHAPE, clock })
  const b = new Sketch({ ...SHAPE, clock })
  a.update('alice', 5)
  a.update('bob', 2)
  const bytes = a.takeDelta().serializeAt(1000, WALL)
  const d = SketchDelta.deserialize(bytes, { clock, wallMs: WALL })
  t.ok(d.sparse !== undefined, 'kept sparse')
  b.applyDelta(d)
  t.equal(b.estimate('alice'), 5)
  t.equal(b.estimate('bob'), 2)
  t.equal(d.scores.length, 128, 'the dense view of L·M cells on demand')
  t.equal(d.scores.filter((x) => x !== 0).length, 4, 'two keys × two levels')
  t.same(SketchDelta.deserialize(d.serializeAt(1000, WALL), { clock, wallMs: WALL }).scores, d.scores, 'round trip')
  t.ok(b.takeDelta().isEmpty(), 'an applied delta is not shipped back')
})

const BIG = [0, 1, 2, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff]

for (const [family, make, read, receiver] of [
  [
    'Sketch',
    sketchDeltaFrame,
    (b: Uint8Array) => SketchDelta.deserialize(b, { clock: new FakeClock(1000), wallMs: WALL }),
    () => {
      const s = new Sketch({ ...SHAPE, clock: new FakeClock(1000) })
      return (b: Uint8Array) => s.applyDelta(b, { wallMs: WALL })
    },
  ],
  [
    'Rotator',
    rotatorDeltaFrame,
    (b: Uint8Array) => RotatorDelta.deserialize(b, { clock: new FakeClock(1000), wallMs: WALL }),
    () => {
      const r = newRotator(new FakeClock(1000))
      return (b: Uint8Array) => r.applyDelta(b, { wallMs: WALL })
    },
  ],
] as const) {
  t.test(`${family} delta fuzz: mutated header fields with recomputed CRCs`, async (t) => {
    const base = make()
    const next = mulberry32(family.length)
    const payloadAt = HEADER_BYTES + new DataView(base.buffer).getUint32(8, true)
    // u32 fields worth aiming at: levels, cellsPerLevel, (rotator) generations, and the
    // first sparse count (rotator: after the 16-byte seed of generation 0)
    const u32s = [P, P + 4, ...(family === 'Rotator' ? [P + 52] : []), payloadAt + (family === 'Rotator' ? 16 : 0)]
    let coded = 0
    let accepted = 0
    for (let i = 0; i < 400; i++) {
      const bytes = resealed(base, (dv, out) => {
        const edits = 1 + Math.floor(next() * 3)
        for (let e = 0; e < edits; e++) {
          if (next() < 0.7) {
            const at = u32s[Math.floor(next() * u32s.length)]
            dv.setUint32(at, BIG[Math.floor(next() * BIG.length)], true)
          } else {
            const at = 4 + Math.floor(next() * (out.length - 8)) // any byte but magic and CRC
            out[at] = Math.floor(next() * 256)
          }
        }
      })
      for (const [what, fn] of [
        ['deserialize', () => read(bytes)],
        ['applyDelta', () => receiver()(bytes)],
      ] as const) {
        const { grew, result } = measured(fn)
        if (result instanceof Error) {
          if (!(result instanceof GrudgeError) || !/^ERR_GRUDGE_(FORMAT|MERGE)_/.test(result.code)) {
            t.fail(`${what} #${i}: expected a coded FORMAT or MERGE error, received ${String(result)}`)
            return
          }
          coded++
        } else accepted++
        if (grew > 64 * bytes.length + (1 << 20)) {
          t.fail(`${what} #${i}: allocated ${grew} bytes for a frame of ${bytes.length}`)
          return
        }
      }
    }
    t.ok(coded > 0 && coded + accepted === 800, `${coded} coded refusals, ${accepted} reads, none uncoded or large`)
  })
}
