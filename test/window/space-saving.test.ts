import t from 'tap'
import { SpaceSaving, spaceSavingBytes } from '../../src/window/space-saving.js'
import { mulberry32 } from '../fixtures/mulberry32.js'

// Space-Saving (Metwally, Agrawal & El Abbadi, ICDT 2005) against an exact count. The reference
// is the paper's guarantee for n adds into m counters (Lemma 3.3, Theorem 3.5), not a run's
// output: the counts sum to n, min ≤ n / m, every monitored key's true count f lies in
// [count − ε, count] with ε ≤ n / m, every key with f > min (so f > n / m) is monitored, and an
// unmonitored key has f ≤ min.

/** A Zipf(s) stream of n draws over keys 0..k−1 (inverse CDF on a fixed seed). */
function zipfStream(n: number, k: number, s: number, seed: number): Uint32Array {
  const cdf = new Float64Array(k)
  let sum = 0
  for (let i = 0; i < k; i++) cdf[i] = sum += 1 / Math.pow(i + 1, s)
  const random = mulberry32(seed)
  const out = new Uint32Array(n)
  for (let j = 0; j < n; j++) {
    const u = random() * sum
    let lo = 0
    let hi = k - 1
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (cdf[mid] < u) lo = mid + 1
      else hi = mid
    }
    out[j] = lo
  }
  return out
}

// two key layouts: spread hashes, and hashes whose low 16 bits are all equal (every key's index
// home is the same few slots: long probe runs, so the backward-shift deletion is exercised)
const layouts: Record<string, (id: number) => [number, number]> = {
  spread: (id) => [Math.imul(id + 1, 0x9e3779b1), Math.imul(id ^ 0x5bd1e995, 0x85ebca6b)],
  'clustered low bits': (id) => [0, (id << 16) | 0x1234],
}

for (const [name, keyOf] of Object.entries(layouts)) {
  t.test(`the paper's guarantee on a skewed stream (Zipf 1.1, ${name} keys)`, async (t) => {
    const n = 200_000
    const k = 20_000
    const m = 128
    const stream = zipfStream(n, k, 1.1, 7)
    const exact = new Uint32Array(k)
    const ss = new SpaceSaving(m)
    for (const id of stream) {
      exact[id]++
      const [hi, lo] = keyOf(id)
      ss.add(hi, lo)
    }
    t.equal(ss.total, n, 'n adds')
    t.equal(ss.size, m, 'every counter in use')
    let sum = 0
    for (let i = 0; i < ss.size; i++) sum += ss.countAt(i)
    t.equal(sum, n, 'the counts sum to n')
    t.ok(ss.minCount <= n / m, `min ${ss.minCount} ≤ n / m = ${n / m}`)
    let monitored = 0
    let frequent = 0
    let bad = 0
    for (let id = 0; id < k; id++) {
      const [hi, lo] = keyOf(id)
      const f = exact[id]
      if (ss.has(hi, lo)) {
        monitored++
        const c = ss.count(hi, lo)
        const g = ss.guaranteed(hi, lo)
        if (!(g <= f && f <= c && c - g <= n / m)) {
          bad++
          t.fail(`key ${id}: f ${f} outside [${g}, ${c}] or ε ${c - g} > n / m`)
        }
      } else if (f > ss.minCount) {
        bad++
        t.fail(`key ${id}: f ${f} > min ${ss.minCount} but not monitored`)
      }
      if (f > n / m) frequent++
    }
    t.equal(bad, 0, 'no key breaks the bounds')
    t.equal(monitored, m, 'm keys monitored')
    // the stream has keys above n / m for the guarantee to bite (Zipf 1.1 over 20,000 keys: the
    // top key alone is about 1/(H ≈ 8.7) of the stream)
    t.ok(frequent >= 10, `${frequent} keys above n / m, all monitored`)
  })
}

t.test('an unmonitored key takes the least counter: count min + 1, error min (the paper step by step)', async (t) => {
  const ss = new SpaceSaving(2)
  const rows: Array<{ add: number; counts: Record<number, [number, number] | undefined> }> = [
    { add: 1, counts: { 1: [1, 1] } },
    { add: 1, counts: { 1: [2, 2] } },
    { add: 2, counts: { 1: [2, 2], 2: [1, 1] } },
    // 3 evicts 2 (count 1): count 2, guaranteed 2 − 1 = 1
    { add: 3, counts: { 1: [2, 2], 2: undefined, 3: [2, 1] } },
    // 2 evicts the least again: 1 and 3 tie at 2, either may go; 2 comes back at 3, guaranteed 1
    { add: 2, counts: { 2: [3, 1] } },
  ]
  for (const row of rows) {
    ss.add(0, row.add)
    for (const [key, want] of Object.entries(row.counts)) {
      const id = Number(key)
      if (want === undefined) t.notOk(ss.has(0, id), `after ${row.add}: ${id} evicted`)
      else t.same([ss.count(0, id), ss.guaranteed(0, id)], want, `after ${row.add}: ${id} count, guaranteed`)
    }
  }
  t.equal(ss.size, 2)
  t.equal(ss.minCount, 2, 'the other survivor holds 2')
  ss.clear()
  t.equal(ss.size, 0)
  t.equal(ss.total, 0)
  t.notOk(ss.has(0, 2), 'clear forgets every key')
  t.equal(ss.count(0, 2), 0, 'an empty summary counts 0')
})

t.test('constant memory: 5 arrays of m and an index of 2m 16-bit slots', async (t) => {
  t.equal(spaceSavingBytes(128), 128 * 20 + 256 * 2, '3 KiB at 128 counters')
  t.equal(new SpaceSaving(128).sizeBytes(), spaceSavingBytes(128))
  t.equal(new SpaceSaving(100).sizeBytes(), spaceSavingBytes(100), 'the index rounds 200 up to 256 slots')
  t.equal(spaceSavingBytes(100), 100 * 20 + 256 * 2)
  for (const bad of [0, 1.5, -1, 2 ** 14 + 1, NaN])
    t.throws(() => new SpaceSaving(bad), { code: 'ERR_GRUDGE_OPTION_INVALID' }, `counters ${bad}`)
})
