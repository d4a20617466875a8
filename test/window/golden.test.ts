import t from 'tap'
import { readFileSync } from 'node:fs'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { Window } from '../../src/window/window.js'
import { Murmur3Hasher } from '../../src/hash/hasher.js'
import { kmIndexes } from '../../src/hash/indexes.js'

// Golden frames written once by test/fixtures/make-golden-window.ts (format version 1).
// Later releases must keep loading them; the expected values are derived from the
// operations recorded there, register values from the 64-bit hash by BigInt. They were
// written under hasher id 1 (murmur3x64: h1 of MurmurHash3_x64_128, the default before
// 0.1.0) and are read back under it.
const murmur3x64 = (seed: number) => new Murmur3Hasher(seed, 'x64_128')
const fixture = (name: string) => new Uint8Array(readFileSync(new URL(`../fixtures/${name}`, import.meta.url)))

/** Registers (precision p) after adding `items`, from the definition in spec/window.md §2. */
function expectedRegisters(p: number, seed: number, items: string[]): Uint8Array {
  const h = murmur3x64(seed)
  const q = BigInt(64 - p)
  const regs = new Uint8Array(2 ** p)
  for (const x of items) {
    const v = h.hash(x)
    const rest = v & ((1n << q) - 1n)
    const rho = rest === 0n ? Number(q) + 1 : Number(q) - rest.toString(2).length + 1
    const i = Number(v >> q)
    if (rho > regs[i]) regs[i] = rho
  }
  return regs
}

t.test('hyperloglog-p4.v1.bin: precision 4, seed 42, items a, b, c', async (t) => {
  const bytes = fixture('hyperloglog-p4.v1.bin')
  const h = HyperLogLog.deserialize(bytes)
  t.equal(h.precision, 4)
  t.equal(h.hasher.name, 'murmur3x64')
  t.ok(h.isCompatible(HyperLogLog.bySize({ precision: 4, hasher: murmur3x64(42) })))
  t.notOk(
    h.isCompatible(HyperLogLog.bySize({ precision: 4, seed: 42 })),
    'the new default hasher (id 3) is another function',
  )
  t.same(bytes.subarray(40, 56), expectedRegisters(4, 42, ['a', 'b', 'c']))
  t.ok(Math.abs(h.estimate() - 3) < 0.5, `estimate ${h.estimate()}`)
  t.same(h.serialize(), bytes, 'the writer still writes the same bytes')
})

t.test('count-min-64x3.v1.bin: conservative, seed 42, a×3 b×2 c×1', async (t) => {
  const bytes = fixture('count-min-64x3.v1.bin')
  const c = CountMinSketch.deserialize(bytes)
  t.equal(c.width, 64)
  t.equal(c.depth, 3)
  t.equal(c.conservative, true)
  t.equal(c.totalCount, 6)
  // each item's counters sit where kmIndexes puts them (spec/window.md §3)
  const h = murmur3x64(42)
  const idx = new Uint32Array(3)
  const counters = new DataView(bytes.buffer, bytes.byteOffset + 36 + 12 + 8)
  const cells = new Map<number, number>()
  for (const [x, n] of [
    ['a', 3],
    ['b', 2],
    ['c', 1],
  ] as const) {
    const v = h.hash(x)
    kmIndexes(Number(v >> 32n) | 0, Number(v & 0xffffffffn) | 0, 3, 64, idx)
    for (let r = 0; r < 3; r++) {
      const p = r * 64 + idx[r]
      t.ok(counters.getUint32(4 * p, true) >= n, `${x}: row ${r} counter ≥ ${n}`)
      cells.set(p, (cells.get(p) ?? 0) + 1)
    }
  }
  let nonzero = 0
  for (let p = 0; p < 192; p++) if (counters.getUint32(4 * p, true) !== 0) nonzero++
  t.equal(nonzero, cells.size, 'no counter outside the items’ cells is set')
  t.same(
    ['a', 'b', 'c', 'd'].map((x) => c.estimate(x)),
    [3, 2, 1, 0],
  )
  t.same(c.serialize(), bytes)
})

t.test('window-hyperloglog.v1.bin: everyMs 1000, keep 3, a@0 b@1000 c@2500', async (t) => {
  const bytes = fixture('window-hyperloglog.v1.bin')
  const w = Window.deserialize<HyperLogLog>(bytes)
  t.equal(w.everyMs, 1000)
  t.equal(w.keep, 3)
  t.equal(w.lastSeenMs, 2500)
  t.same(
    w.slotsAt(2500).map((s) => s.key),
    [2, 1, 0],
  )
  t.same(
    w.slotsAt(2500).map((s) => s.sketch.serialize().subarray(40, 56)),
    [['c'], ['b'], ['a']].map((items) => expectedRegisters(4, 42, items)),
  )
  t.same(w.mergedAt(2500).serialize().subarray(40, 56), expectedRegisters(4, 42, ['a', 'b', 'c']))
  t.same(w.serialize(), bytes)
  t.same(
    w.slotsAt(3000).map((s) => s.key),
    [2, 1],
    'slot 0 expires at 3000',
  )
})
