import t from 'tap'
import { Sketch, SketchDelta, Rotator, RotatorDelta, exponential, halfLife, linear, none } from '../../src/index.js'
import { murmur3 } from '../../src/index.js'
import { FAMILY, readFrame, writeFrame } from '../../src/format/frame.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { serializeAtWall } from './fixtures/serialize-at-wall.js'

const WALL = 1_700_000_000_000
const FORMAT_CODES = new Set([
  'ERR_GRUDGE_FORMAT_TRUNCATED',
  'ERR_GRUDGE_FORMAT_MAGIC',
  'ERR_GRUDGE_FORMAT_FAMILY',
  'ERR_GRUDGE_FORMAT_VERSION',
  'ERR_GRUDGE_FORMAT_CHECKSUM',
  'ERR_GRUDGE_FORMAT_INVALID',
])

function codeOf(fn: () => unknown): string {
  try {
    fn()
  } catch (e) {
    return (e as { code?: string }).code ?? `uncoded: ${String(e)}`
  }
  return 'returned'
}

/** A small frame: L=1, M=2, two non-zero cells. */
function smallSketch(): Sketch {
  const clock = new FakeClock(1_000)
  const s = new Sketch({ levels: 1, cellsPerLevel: 2, decay: exponential(0.5), hi: 50, hasher: murmur3(3), clock })
  s.update('a', 5)
  s.update('b', 7)
  return s
}

/** Re-frame a valid frame after editing its params or payload (the CRC is recomputed, so only the field checks can catch it). */
function edit(
  bytes: Uint8Array,
  family: number,
  fn: (p: { params: Uint8Array; payload: Uint8Array; dv: DataView; pv: DataView }) => void,
  parts: { flags?: number; version?: number; seed?: Uint8Array; family?: number } = {},
): Uint8Array {
  const f = readFrame(bytes, family, 2)
  const params = new Uint8Array(f.params)
  const payload = new Uint8Array(f.payload)
  fn({ params, payload, dv: new DataView(params.buffer), pv: new DataView(payload.buffer) })
  return writeFrame({
    family: parts.family ?? family,
    version: parts.version ?? f.version,
    flags: parts.flags ?? f.flags,
    seed: parts.seed ?? new Uint8Array(f.seed),
    params,
    payload,
  })
}

t.test('round trip: same clock and wall clock give the same scores and the same bytes', async (t) => {
  const clock = new FakeClock(5_000)
  const s = new Sketch({ levels: 3, cellsPerLevel: 16, decay: none(), hi: 1e6, aggregator: 'mean', clock })
  for (let i = 0; i < 40; i++) {
    clock.advance(100)
    s.update(`k${i % 13}`, i + 0.25)
  }
  const bytes = serializeAtWall(s, WALL)
  const r = Sketch.deserialize(bytes, { clock, wallMs: WALL })
  for (let i = 0; i < 13; i++) t.equal(r.estimate(`k${i}`), s.estimate(`k${i}`), `k${i}`)
  t.same(serializeAtWall(r, WALL), serializeAtWall(s, WALL), 're-serialized bytes are identical')
  t.ok(r.isCompatible(s), 'same seed, same config')
  t.equal(bytes.length, 36 + 52 + 3 * 16 * 16 + 4)
})

t.test('a Buffer at a non-zero offset of a larger pool reads like its bytes', async (t) => {
  const s = smallSketch()
  const bytes = serializeAtWall(s, WALL)
  const pool = Buffer.alloc(bytes.length + 13)
  pool.set(bytes, 7)
  const view = pool.subarray(7, 7 + bytes.length)
  const r = Sketch.deserialize(view, { clock: s.clock, wallMs: WALL })
  t.equal(r.estimate('a'), s.estimate('a'))
  t.equal(r.estimate('b'), s.estimate('b'))
})

t.test(
  'every truncation of a frame raises ERR_GRUDGE_FORMAT_TRUNCATED; a trailing byte ERR_GRUDGE_FORMAT_INVALID',
  async (t) => {
    const bytes = serializeAtWall(smallSketch(), WALL)
    let ok = 0
    for (let n = 0; n < bytes.length; n++)
      if (codeOf(() => Sketch.deserialize(bytes.subarray(0, n), { wallMs: WALL })) === 'ERR_GRUDGE_FORMAT_TRUNCATED')
        ok++
    t.equal(ok, bytes.length, `all ${bytes.length} prefixes`)
    const longer = new Uint8Array(bytes.length + 1)
    longer.set(bytes)
    t.equal(
      codeOf(() => Sketch.deserialize(longer)),
      'ERR_GRUDGE_FORMAT_INVALID',
    )
  },
)

t.test('flipping any bit of a small frame raises a coded format error (never a half-loaded sketch)', async (t) => {
  for (const [name, bytes, read] of [
    ['sketch', serializeAtWall(smallSketch(), WALL), (b: Uint8Array) => Sketch.deserialize(b, { wallMs: WALL })],
    [
      'delta',
      serializeAtWall(smallSketch().takeDelta(), WALL),
      (b: Uint8Array) => SketchDelta.deserialize(b, { wallMs: WALL }),
    ],
    [
      'rotator',
      (() => {
        const r = new Rotator({
          sketch: { levels: 1, cellsPerLevel: 2 },
          periodMs: 1000,
          seed: 9,
          ticker: new FakeTicker(),
          clock: new FakeClock(0),
        })
        r.update('a', 1)
        return serializeAtWall(r, WALL)
      })(),
      (b: Uint8Array) => Rotator.deserialize(b, { wallMs: WALL, ticker: new FakeTicker(), clock: new FakeClock(0) }),
    ],
  ] as const) {
    t.doesNotThrow(() => read(bytes), `${name}: the intact frame loads`)
    const bad: string[] = []
    const seen = new Set<string>()
    for (let i = 0; i < bytes.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = new Uint8Array(bytes)
        copy[i] ^= 1 << bit
        const code = codeOf(() => read(copy))
        seen.add(code)
        if (!FORMAT_CODES.has(code)) bad.push(`byte ${i} bit ${bit}: ${code}`)
      }
    }
    t.same(bad, [], `${name}: all ${bytes.length * 8} single-bit flips are refused with a format code`)
    t.ok(
      seen.has('ERR_GRUDGE_FORMAT_CHECKSUM') &&
        seen.has('ERR_GRUDGE_FORMAT_MAGIC') &&
        seen.has('ERR_GRUDGE_FORMAT_TRUNCATED'),
      `${name}: codes seen ${[...seen].join(', ')}`,
    )
  }
})

t.test('unknown family or version, and the wrong reader', async (t) => {
  const bytes = serializeAtWall(smallSketch(), WALL)
  t.equal(
    codeOf(() => Sketch.deserialize(edit(bytes, FAMILY.sketch, () => {}, { version: 2 }))),
    'ERR_GRUDGE_FORMAT_VERSION',
  )
  t.equal(
    codeOf(() => Sketch.deserialize(edit(bytes, FAMILY.sketch, () => {}, { version: 0 }))),
    'ERR_GRUDGE_FORMAT_VERSION',
  )
  t.equal(
    codeOf(() => Sketch.deserialize(edit(bytes, FAMILY.sketch, () => {}, { family: 99 }))),
    'ERR_GRUDGE_FORMAT_FAMILY',
  )
  t.equal(
    codeOf(() => Rotator.deserialize(bytes)),
    'ERR_GRUDGE_FORMAT_FAMILY',
    'a sketch frame is not a rotator',
  )
  t.equal(
    codeOf(() => RotatorDelta.deserialize(bytes)),
    'ERR_GRUDGE_FORMAT_FAMILY',
  )
  t.equal(
    codeOf(() => SketchDelta.deserialize(bytes)),
    'ERR_GRUDGE_FORMAT_INVALID',
    'a full frame is not a delta',
  )
  t.equal(
    codeOf(() => Sketch.deserialize('GRDG' as never)),
    'ERR_GRUDGE_OPTION_INVALID',
  )
  t.equal(
    codeOf(() => Sketch.deserialize(bytes, { clock: {} as never })),
    'ERR_GRUDGE_OPTION_INVALID',
  )
  t.equal(
    codeOf(() => Sketch.deserialize(bytes, { wallMs: NaN })),
    'ERR_GRUDGE_OPTION_INVALID',
  )
  t.equal(
    codeOf(() => smallSketch().serializeAt(0, Infinity)),
    'ERR_GRUDGE_VALUE_NOT_FINITE',
  )
  t.equal(
    codeOf(() => smallSketch().serializeAt(NaN, 0)),
    'ERR_GRUDGE_VALUE_NOT_FINITE',
  )
})

t.test('every sketch params field and cell is checked (ERR_GRUDGE_FORMAT_INVALID naming it)', async (t) => {
  const bytes = serializeAtWall(smallSketch(), WALL)
  const F = FAMILY.sketch
  const cases: [string, Uint8Array, RegExp][] = [
    ['levels 0', edit(bytes, F, ({ dv }) => dv.setUint32(0, 0, true)), /levels/],
    ['levels 2 (size mismatch)', edit(bytes, F, ({ dv }) => dv.setUint32(0, 2, true)), /payload length/],
    ['cells 3 (size mismatch)', edit(bytes, F, ({ dv }) => dv.setUint32(4, 3, true)), /payload length/],
    ['cells 0', edit(bytes, F, ({ dv }) => dv.setUint32(4, 0, true)), /cellsPerLevel/],
    [
      'L·M too big',
      edit(bytes, F, ({ dv }) => {
        dv.setUint32(0, 1 << 20)
        dv.setUint32(4, 1 << 20, true)
      }),
      /cellsPerLevel|levels/,
    ],
    ['decay id 3', edit(bytes, F, ({ dv }) => dv.setUint8(8, 3)), /decay id/],
    ['aggregator id 3', edit(bytes, F, ({ dv }) => dv.setUint8(9, 3)), /aggregator id/],
    ['hasher id 0', edit(bytes, F, ({ dv }) => dv.setUint8(10, 0)), /hasher id/],
    ['reserved byte', edit(bytes, F, ({ dv }) => dv.setUint8(11, 1)), /reserved/],
    ['rate 0 for exponential', edit(bytes, F, ({ dv }) => dv.setFloat64(12, 0, true)), /decay rate/],
    ['rate NaN', edit(bytes, F, ({ dv }) => dv.setFloat64(12, NaN, true)), /decay rate/],
    ['rate ≠ 0 for none', edit(bytes, F, ({ dv }) => dv.setUint8(8, 0)), /decay rate/],
    ['lo > 0', edit(bytes, F, ({ dv }) => dv.setFloat64(20, 1, true)), /"lo"/],
    ['hi < 0', edit(bytes, F, ({ dv }) => dv.setFloat64(28, -1, true)), /"hi"/],
    ['hi Infinity', edit(bytes, F, ({ dv }) => dv.setFloat64(28, Infinity, true)), /"hi"/],
    ['writer wall NaN', edit(bytes, F, ({ dv }) => dv.setFloat64(36, NaN, true)), /wall-clock/],
    ['writer now Infinity', edit(bytes, F, ({ dv }) => dv.setFloat64(44, Infinity, true)), /writer clock/],
    [
      'params 53 bytes',
      (() => {
        const f = readFrame(bytes, F, 1)
        const p = new Uint8Array(53)
        p.set(f.params)
        return writeFrame({
          family: F,
          version: 1,
          flags: 0,
          seed: new Uint8Array(f.seed),
          params: p,
          payload: new Uint8Array(f.payload),
        })
      })(),
      /params length/,
    ],
    ['unknown flag bit', edit(bytes, F, () => {}, { flags: 4 }), /flags/],
    ['score above hi', edit(bytes, F, ({ pv }) => pv.setFloat64(0, 51, true)), /score\[0\]/],
    ['score below lo', edit(bytes, F, ({ pv }) => pv.setFloat64(8, -0.5, true)), /score\[1\]/],
    ['score NaN', edit(bytes, F, ({ pv }) => pv.setFloat64(0, NaN, true)), /score\[0\]/],
    ['time NaN', edit(bytes, F, ({ pv }) => pv.setFloat64(16, NaN, true)), /time\[0\]/],
    ['time −Infinity', edit(bytes, F, ({ pv }) => pv.setFloat64(24, -Infinity, true)), /time\[1\]/],
  ]
  for (const [name, frame, message] of cases) {
    t.throws(() => Sketch.deserialize(frame, { wallMs: WALL }), { code: 'ERR_GRUDGE_FORMAT_INVALID', message }, name)
  }
})

t.test('every rotator params field is checked; a failed load starts no ticker task', async (t) => {
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 1, cellsPerLevel: 2, decay: linear(1), hi: 5 },
    periodMs: 5_000,
    seed: 9,
    ticker,
    clock: new FakeClock(0),
  })
  r.update('a', 1)
  const bytes = serializeAtWall(r, WALL)
  r.close()
  const F = FAMILY.rotator
  const cases: [string, Uint8Array, string, RegExp][] = [
    [
      'generations 1',
      edit(bytes, F, ({ dv }) => dv.setUint32(52, 1, true)),
      'ERR_GRUDGE_FORMAT_INVALID',
      /generations/,
    ],
    [
      'generations 3 (size mismatch)',
      edit(bytes, F, ({ dv }) => dv.setUint32(52, 3, true)),
      'ERR_GRUDGE_FORMAT_INVALID',
      /payload length/,
    ],
    ['reserved', edit(bytes, F, ({ dv }) => dv.setUint32(56, 1, true)), 'ERR_GRUDGE_FORMAT_INVALID', /reserved/],
    ['periodMs 0', edit(bytes, F, ({ dv }) => dv.setFloat64(60, 0, true)), 'ERR_GRUDGE_FORMAT_INVALID', /periodMs/],
    [
      'rotations 1.5',
      edit(bytes, F, ({ dv }) => dv.setFloat64(68, 1.5, true)),
      'ERR_GRUDGE_FORMAT_INVALID',
      /rotations/,
    ],
    [
      'rotations 1 (seeds no longer derive)',
      edit(bytes, F, ({ dv }) => dv.setFloat64(68, 1, true)),
      'ERR_GRUDGE_FORMAT_INVALID',
      /generation 0 seed/,
    ],
    [
      'last rotation NaN',
      edit(bytes, F, ({ dv }) => dv.setFloat64(76, NaN, true)),
      'ERR_GRUDGE_FORMAT_INVALID',
      /last rotation/,
    ],
    [
      'another generation seed',
      edit(bytes, F, ({ payload }) => {
        payload[32 + 32] ^= 1 // version 2: each generation block is 32 header bytes + 2 cells × 16
      }),
      'ERR_GRUDGE_FORMAT_INVALID',
      /generation 1 seed/,
    ],
    ['seed field without flag', edit(bytes, F, () => {}, { flags: 0 }), 'ERR_GRUDGE_FORMAT_INVALID', /seed/],
    ['unknown flag', edit(bytes, F, () => {}, { flags: 2 | 4 }), 'ERR_GRUDGE_FORMAT_INVALID', /flags/],
    ['a delta frame', edit(bytes, F, () => {}, { flags: 2 | 1 }), 'ERR_GRUDGE_FORMAT_INVALID', /delta/],
    [
      'a period that fails the amnesty guard',
      edit(bytes, F, ({ dv }) => dv.setFloat64(60, 4_999, true)),
      'ERR_GRUDGE_ROTATOR_AMNESTY',
      /5000/,
    ],
  ]
  for (const [name, frame, code, message] of cases) {
    const tk = new FakeTicker()
    t.throws(
      () => Rotator.deserialize(frame, { wallMs: WALL, ticker: tk, clock: new FakeClock(0) }),
      { code, message },
      name,
    )
    t.equal(tk.size, 0, `${name}: no ticker task left behind`)
  }
})

t.test('time across processes: scores decay over the downtime, neither reset nor frozen', async (t) => {
  const writer = new FakeClock(100_000)
  const s = new Sketch({ decay: halfLife(10_000), hi: 100, clock: writer })
  s.update('k', 8)
  writer.advance(2_000) // serialized 2 s after the update
  const bytes = serializeAtWall(s, WALL)
  // a fresh process: its monotonic clock starts near 0; 18 s of wall time passed
  const reader = new FakeClock(3)
  const r = Sketch.deserialize(bytes, { clock: reader, wallMs: WALL + 18_000 })
  t.ok(Math.abs(r.estimate('k') - 2) < 1e-12, `2 s + 18 s = two half-lives: 8 → 2 (got ${r.estimate('k')})`)
  reader.advance(10_000)
  t.ok(Math.abs(r.estimate('k') - 1) < 1e-12, 'and it keeps decaying on the reader clock')
  // a reader whose wall clock is behind the writer's: no negative downtime, no future times
  const skewed = Sketch.deserialize(bytes, { clock: new FakeClock(0), wallMs: WALL - 60_000 })
  t.ok(Math.abs(skewed.estimate('k') - 8 / Math.SQRT2 ** (2 / 5)) < 1e-12, 'only the 2 s before serialization count')

  const lw = new FakeClock(7_000)
  const debt = new Sketch({ decay: linear(1), hi: 10, clock: lw })
  debt.tryUpdate('ip', 10, 10)
  const lb = serializeAtWall(debt, WALL)
  t.equal(
    Sketch.deserialize(lb, { clock: new FakeClock(0), wallMs: WALL + 4_000 }).estimate('ip'),
    6,
    'linear: 10 − 4 s × 1/s',
  )
  t.equal(
    Sketch.deserialize(lb, { clock: new FakeClock(0), wallMs: WALL + 60_000 }).estimate('ip'),
    0,
    'fully drained, not negative',
  )
  t.equal(
    Sketch.deserialize(lb, { clock: new FakeClock(0), wallMs: WALL }).estimate('ip'),
    10,
    'no downtime: unchanged',
  )
})

t.test('a cell touched after the writer clock went back counts as touched at serialization', async (t) => {
  const w = new FakeClock(50_000)
  const s = new Sketch({ decay: linear(1), hi: 100, clock: w })
  s.update('k', 20)
  w.set(40_000) // the clock jumps back 10 s; the cell keeps its time
  const r = Sketch.deserialize(serializeAtWall(s, WALL), { clock: new FakeClock(0), wallMs: WALL + 5_000 })
  t.equal(r.estimate('k'), 15, 'age 0 at serialization + 5 s down')
})

t.test('Rotator round trip keeps generations, seeds, rotations and phase', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 32, decay: exponential(0.01) },
    generations: 3,
    periodMs: 10_000,
    clock,
    ticker,
  })
  r.update('a', 3)
  clock.set(10_000)
  ticker.tick()
  r.update('b', 4)
  clock.set(14_000)
  const bytes = serializeAtWall(r, WALL)
  t.equal(bytes[6], 8, 'no master seed: flags 8 (keyed-mix placement, private master in the seed field)')
  const tk = new FakeTicker()
  const back = Rotator.deserialize(bytes, { clock, ticker: tk, wallMs: WALL })
  t.equal(back.rotations, 1)
  t.equal(back.estimate('a'), r.estimate('a'))
  t.equal(back.estimate('b'), r.estimate('b'))
  t.same(serializeAtWall(back, WALL), serializeAtWall(r, WALL), 'random generation seeds are stored and restored')
  clock.set(20_000)
  ticker.tick()
  tk.tick()
  t.equal(back.estimate('b'), r.estimate('b'), 'both rotate in step')
  t.equal(back.rotations, 2)
  r.close()
  back.close()
})

t.test('sparse delta frames: chosen when smaller, read back exactly, every field checked', async (t) => {
  const clock = new FakeClock(2_000)
  const s = new Sketch({
    levels: 2,
    cellsPerLevel: 16,
    decay: exponential(0.1),
    lo: -10,
    hi: 10,
    hasher: murmur3(8),
    clock,
  })
  s.update('a', 3)
  s.update('b', -2)
  const d = s.takeDelta()
  const k = [...d.scores].filter((v) => v !== 0).length
  t.ok(k >= 2 && k <= 4, `${k} non-zero cells`)
  const bytes = serializeAtWall(d, WALL)
  t.equal(bytes[6] & 4, 4, 'flag bit 2: sparse')
  t.equal(bytes.length, 36 + 52 + 16 + 12 * k + 4, '16-byte header + 12 bytes per non-zero cell')
  const back = SketchDelta.deserialize(bytes, { clock, wallMs: WALL })
  t.same([...back.scores], [...d.scores], 'values')
  t.same([...back.touched], [...d.touched], 'times')
  const dense = new Sketch({ levels: 1, cellsPerLevel: 1, hi: 10, hasher: murmur3(8), clock })
  dense.update('a', 1)
  t.equal(serializeAtWall(dense.takeDelta(), WALL)[6] & 4, 0, 'one cell: dense (16 bytes) beats sparse (28)')
  t.equal(
    codeOf(() => Sketch.deserialize(edit(serializeAtWall(smallSketch(), WALL), FAMILY.sketch, () => {}, { flags: 4 }))),
    'ERR_GRUDGE_FORMAT_INVALID',
    'sparse without delta',
  )

  const F = FAMILY.sketch
  const at = (i: number): number => 16 + 12 * i // offset of entry i in the payload
  const cases: [string, Uint8Array, RegExp][] = [
    ['count above L·M', edit(bytes, F, ({ pv }) => pv.setUint32(0, 33, true)), /sparse count/],
    ['count one more than written', edit(bytes, F, ({ pv }) => pv.setUint32(0, k + 1, true)), /payload length/],
    ['count one less than written', edit(bytes, F, ({ pv }) => pv.setUint32(0, k - 1, true)), /payload length/],
    ['reserved', edit(bytes, F, ({ pv }) => pv.setUint32(4, 1, true)), /sparse reserved/],
    ['time NaN', edit(bytes, F, ({ pv }) => pv.setFloat64(8, NaN, true)), /sparse time/],
    ['index out of range', edit(bytes, F, ({ pv }) => pv.setUint32(at(k - 1), 32, true)), /sparse index/],
    [
      'indexes not increasing',
      edit(bytes, F, ({ pv }) => pv.setUint32(at(1), pv.getUint32(at(0), true), true)),
      /sparse index\[1\]/,
    ],
    ['value 0', edit(bytes, F, ({ pv }) => pv.setFloat64(at(0) + 4, 0, true)), /sparse value\[0\]/],
    ['value beyond hi − lo', edit(bytes, F, ({ pv }) => pv.setFloat64(at(0) + 4, 20.5, true)), /sparse value\[0\]/],
    ['value NaN', edit(bytes, F, ({ pv }) => pv.setFloat64(at(0) + 4, NaN, true)), /sparse value\[0\]/],
  ]
  for (const [name, frame, message] of cases) {
    t.throws(
      () => SketchDelta.deserialize(frame, { wallMs: WALL }),
      { code: 'ERR_GRUDGE_FORMAT_INVALID', message },
      name,
    )
  }
  const bad: string[] = []
  for (let i = 0; i < bytes.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const copy = new Uint8Array(bytes)
      copy[i] ^= 1 << bit
      const code = codeOf(() => SketchDelta.deserialize(copy, { wallMs: WALL }))
      if (!FORMAT_CODES.has(code)) bad.push(`byte ${i} bit ${bit}: ${code}`)
    }
  }
  t.same(bad, [], `all ${bytes.length * 8} single-bit flips of the sparse frame are refused`)
})

t.test('sparse rotator delta frames: round trip and checks', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const r = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 32, hi: 100 },
    generations: 3,
    periodMs: 1_000,
    seed: 4,
    clock,
    ticker,
  })
  r.update('x', 5)
  const d = r.takeDelta()
  const bytes = serializeAtWall(d, WALL)
  t.equal(bytes[6], 1 | 2 | 4 | 8, 'delta, seeded, sparse, keyed-mix placement')
  t.equal(
    bytes.length,
    36 + 84 + 3 * (32 + 16 + 12 * 2) + 4,
    'per generation: seed, cells per level, creation time, sparse header, 2 cells',
  )
  const back = RotatorDelta.deserialize(bytes, { clock, wallMs: WALL })
  t.equal(back.rotations, 0)
  t.same(
    back.deltas.map((x) => [...x.scores]),
    d.deltas.map((x) => [...x.scores]),
  )
  const twin = new Rotator({
    sketch: { levels: 2, cellsPerLevel: 32, hi: 100 },
    generations: 3,
    periodMs: 1_000,
    seed: 4,
    clock,
    ticker,
  })
  t.equal(twin.applyDelta(bytes, { wallMs: WALL }), 3)
  t.equal(twin.estimate('x'), 5)
  const F = FAMILY.rotator
  t.equal(
    codeOf(() =>
      RotatorDelta.deserialize(
        edit(bytes, F, () => {}),
        { wallMs: WALL },
      ),
    ),
    'returned',
    'an unchanged re-frame still reads',
  )
  const cut = (() => {
    const f = readFrame(bytes, F, 2)
    return writeFrame({
      family: F,
      version: f.version,
      flags: f.flags,
      seed: new Uint8Array(f.seed),
      params: new Uint8Array(f.params),
      payload: new Uint8Array(f.payload.subarray(0, f.payload.length - 12)),
    })
  })()
  t.throws(
    () => RotatorDelta.deserialize(cut, { wallMs: WALL }),
    { code: 'ERR_GRUDGE_FORMAT_INVALID', message: /payload length/ },
    'a generation block cut short',
  )
  const extra = (() => {
    const f = readFrame(bytes, F, 2)
    const p = new Uint8Array(f.payload.length + 3)
    p.set(f.payload)
    return writeFrame({
      family: F,
      version: f.version,
      flags: f.flags,
      seed: new Uint8Array(f.seed),
      params: new Uint8Array(f.params),
      payload: p,
    })
  })()
  t.throws(
    () => RotatorDelta.deserialize(extra, { wallMs: WALL }),
    { code: 'ERR_GRUDGE_FORMAT_INVALID', message: /payload length/ },
    'bytes after the last generation',
  )
  r.close()
  twin.close()
})
