import t from 'tap'
import fc from 'fast-check'
import { checkMergeableFamily, hasWholeEstimate, type Mergeable } from '../../src/window/mergeable.js'
import { HyperLogLog } from '../../src/window/hyperloglog.js'
import { CountMinSketch } from '../../src/window/count-min.js'
import { Window } from '../../src/window/window.js'
import { FakeClock } from '../../src/testing/index.js'
import { TinySet } from '../fixtures/tiny-set-family.js'

t.test('the runtime check accepts every family with the contract', async (t) => {
  for (const family of [HyperLogLog, CountMinSketch, TinySet])
    t.doesNotThrow(() => checkMergeableFamily(family), family.name)
  t.ok(hasWholeEstimate(HyperLogLog.bySize({ precision: 4, seed: 1 })))
  t.notOk(hasWholeEstimate(CountMinSketch.bySize({ width: 4, depth: 1, seed: 1 })), 'estimate(item) is per item')
  t.ok(hasWholeEstimate(new TinySet()))
})

t.test('the runtime check names the family and the missing method', async (t) => {
  const base = {
    add() {},
    isCompatible() {
      return true
    },
    serialize() {
      return new Uint8Array(0)
    },
    sizeBytes() {
      return 0
    },
    merge() {},
  }
  const make = (name: string, drop: string, noStatic = false) => {
    const C = { [name]: class {} }[name] as unknown as { prototype: Record<string, unknown>; deserialize?: unknown }
    for (const [k, v] of Object.entries(base)) if (k !== drop) C.prototype[k] = v
    if (!noStatic) C.deserialize = () => new (C as unknown as new () => object)()
    return C
  }
  const rows: Array<[string, string, boolean, RegExp]> = [
    ['NoMergeFamily', 'merge', false, /NoMergeFamily: expected a mergeable family with a merge\(\) method/],
    ['NoCompat', 'isCompatible', false, /NoCompat: .*isCompatible\(\)/],
    ['NoSerialize', 'serialize', false, /NoSerialize: .*serialize\(\)/],
    ['NoSize', 'sizeBytes', false, /NoSize: .*sizeBytes\(\)/],
    ['NoAdd', 'add', false, /NoAdd: .*add\(\)/],
    ['NoDeserialize', '', true, /NoDeserialize: .*static deserialize/],
  ]
  for (const [name, drop, noStatic, re] of rows) {
    t.throws(
      () => checkMergeableFamily(make(name, drop, noStatic)),
      { code: 'ERR_GRUDGE_UNSUPPORTED_OPERATION', message: re },
      name,
    )
  }
  t.doesNotThrow(() => checkMergeableFamily(make('Complete', '')))
  for (const bad of [undefined, null, 42, 'HyperLogLog', {}]) {
    t.throws(() => checkMergeableFamily(bad), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"family"/ })
  }
})

// Merge is order-independent: for three sketches a, b, c of one family, every one of the
// 6 orders of folding them into an empty sketch gives the same bytes, and so does the
// nested form (a ⊕ (b ⊕ c)). Checked for every family, and for the Window's merged().
const PERMUTATIONS = [
  [0, 1, 2],
  [0, 2, 1],
  [1, 0, 2],
  [1, 2, 0],
  [2, 0, 1],
  [2, 1, 0],
]

interface Fam {
  name: string
  empty: () => Mergeable & { add(x: string): void }
  fold: (into: Mergeable, other: Mergeable) => void
}
const families: Fam[] = [
  {
    name: 'HyperLogLog',
    empty: () => HyperLogLog.bySize({ precision: 6, seed: 42 }),
    fold: (a, b) => (a as HyperLogLog).merge(b as HyperLogLog),
  },
  {
    name: 'CountMinSketch',
    empty: () => CountMinSketch.bySize({ width: 16, depth: 3, seed: 42 }),
    fold: (a, b) => (a as CountMinSketch).merge(b as CountMinSketch),
  },
  {
    name: 'CountMinSketch (conservative)',
    empty: () => CountMinSketch.bySize({ width: 16, depth: 3, seed: 42, conservative: true }),
    fold: (a, b) => (a as CountMinSketch).merge(b as CountMinSketch),
  },
  {
    name: 'TinySet',
    empty: () => new TinySet({ salt: 1 }),
    fold: (a, b) => (a as TinySet).merge(b as TinySet),
  },
]

for (const fam of families) {
  t.test(`merge order independence over permutations of three sketches: ${fam.name}`, async (t) => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.string({ maxLength: 6 }), { maxLength: 60 }), { minLength: 3, maxLength: 3 }),
        (streams) => {
          const build = () =>
            streams.map((items) => {
              const s = fam.empty()
              for (const x of items) s.add(x)
              return s
            })
          let reference: Uint8Array | undefined
          for (const order of PERMUTATIONS) {
            const parts = build()
            const acc = fam.empty()
            for (const i of order) fam.fold(acc, parts[i])
            const bytes = acc.serialize()
            if (reference === undefined) reference = bytes
            else if (Buffer.compare(reference, bytes) !== 0) return false
            // nested: parts[order[0]] ⊕ (parts[order[1]] ⊕ parts[order[2]])
            const [x, y, z] = order.map((i) => parts[i])
            fam.fold(y, z)
            fam.fold(x, y)
            if (Buffer.compare(reference, x.serialize()) !== 0) return false
          }
          return true
        },
      ),
      { seed: 4242, numRuns: 60 },
    )
    t.pass('all 6 orders and the nested form give identical frames')
  })
}

t.test('Window.merged() does not depend on the order slots were filled in', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.string({ maxLength: 4 }), { maxLength: 30 }), { minLength: 3, maxLength: 3 }),
      (streams) => {
        let reference: Uint8Array | undefined
        for (const order of PERMUTATIONS) {
          const w = new Window(CountMinSketch.bySize({ width: 16, depth: 2, seed: 7 }), {
            everyMs: 10,
            keep: 3,
            clock: new FakeClock(),
          })
          // the same items land in slots 0, 1, 2, but in a permuted assignment
          order.forEach((streamIdx, slot) => w.addAllAt(slot * 10, streams[streamIdx]))
          const bytes = w.mergedAt(20).serialize()
          if (reference === undefined) reference = bytes
          else if (Buffer.compare(reference, bytes) !== 0) return false
        }
        return true
      },
    ),
    { seed: 77, numRuns: 40 },
  )
  t.pass('same merged frame for every assignment of streams to slots')
})
