// Window-area benchmark: HyperLogLog add/estimate, Count-Min add/estimate and Window
// update in ns/op (median of several runs) and JS-heap bytes/op (typed-array backing
// stores live outside the JS heap and are not counted), beside bloom-filters'
// HyperLogLog and CountMinSketch measured in the same run. bloom-filters is far slower
// per op, so it gets fewer ops. Run: `npm run bench -- window`.
import { HyperLogLog, CountMinSketch, Window } from '../../src/window/index.js'
import { murmur3 } from '../../src/hash/hasher.js'
import { keyBytes, keyLength, keyView } from '../../src/hash/key-bytes.js'
import bloomFilters from 'bloom-filters'

const { HyperLogLog: BfHyperLogLog, CountMinSketch: BfCountMinSketch } = bloomFilters

const gc = (globalThis as { gc?: () => void }).gc ?? (() => {})
const KEYS = Array.from({ length: 1 << 16 }, (_, i) => `203.0.113.${i & 255}:client-${i}`)
const MASK = KEYS.length - 1

interface Result {
  name: string
  nsPerOp: number
  bytesPerOp: number
}

/** Median ns/op of `runs` timed runs of `ops` calls, after one warm-up run. */
function bench(name: string, ops: number, runs: number, body: (n: number) => void): Result {
  body(Math.min(ops, 10_000)) // warm-up (JIT)
  const times: number[] = []
  const bytes: number[] = []
  for (let r = 0; r < runs; r++) {
    gc()
    const heap0 = process.memoryUsage().heapUsed
    const t0 = process.hrtime.bigint()
    body(ops)
    const t1 = process.hrtime.bigint()
    bytes.push(Math.max(0, process.memoryUsage().heapUsed - heap0) / ops)
    times.push(Number(t1 - t0) / ops)
  }
  times.sort((a, b) => a - b)
  bytes.sort((a, b) => a - b)
  const res = { name, nsPerOp: times[runs >> 1], bytesPerOp: bytes[runs >> 1] }
  console.log(`${name.padEnd(52)} ${res.nsPerOp.toFixed(1).padStart(10)} ns/op ${res.bytesPerOp.toFixed(1).padStart(8)} B/op`)
  return res
}

let sink = 0
// the floor under every add: UTF-8 encoding into the scratch buffer + the 64-bit hash
const hasher = murmur3(1)
const hashOnly = bench('baseline: keyBytes + murmur3 hashInto (no sketch)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) {
    keyBytes(KEYS[i & MASK])
    hasher.hashInto(keyView, keyLength)
    sink ^= hasher.hashLo
  }
})
const hll = new HyperLogLog({ precision: 14, seed: 1 })
const hllAdd = bench('grudge HyperLogLog.add (p=14)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) hll.add(KEYS[i & MASK])
})
const hllEst = bench('grudge HyperLogLog.estimate (p=14)', 2_000, 5, (n) => {
  for (let i = 0; i < n; i++) sink ^= hll.estimate() | 0
})
const bfHll = new BfHyperLogLog(2 ** 14)
const bfHllAdd = bench('bloom-filters HyperLogLog.update (16384 registers)', 2_000, 3, (n) => {
  for (let i = 0; i < n; i++) bfHll.update(KEYS[i & MASK])
})
const bfHllEst = bench('bloom-filters HyperLogLog.count (16384 registers)', 2_000, 3, (n) => {
  for (let i = 0; i < n; i++) sink ^= bfHll.count() | 0
})

const cms = CountMinSketch.withAccuracy({ epsilon: 0.001, delta: 0.001, seed: 1 })
const cmsAdd = bench('grudge CountMinSketch.add (ε=δ=0.001: 2719×7)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) cms.add(KEYS[i & MASK])
})
const cmsEst = bench('grudge CountMinSketch.estimate (2719×7)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) sink ^= cms.estimate(KEYS[i & MASK])
})
const cmsCu = new CountMinSketch({ width: 2719, depth: 7, seed: 1, conservative: true })
bench('grudge CountMinSketch.add conservative (2719×7)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) cmsCu.add(KEYS[i & MASK])
})
const bfCms = BfCountMinSketch.create(0.001, 0.001)
const bfCmsAdd = bench(`bloom-filters CountMinSketch.update (${bfCms.columns}×${bfCms.rows})`, 20_000, 3, (n) => {
  for (let i = 0; i < n; i++) bfCms.update(KEYS[i & MASK])
})
const bfCmsEst = bench(`bloom-filters CountMinSketch.count (${bfCms.columns}×${bfCms.rows})`, 20_000, 3, (n) => {
  for (let i = 0; i < n; i++) sink ^= bfCms.count(KEYS[i & MASK])
})

// Window update at 1000 updates per simulated second: a new 16 KiB slot every 1000 ops.
let now = 0
const wHll = new Window(HyperLogLog, { precision: 14, seed: 1 }, { everyMs: 1000, keep: 5 })
const winUpd = bench('grudge Window<HyperLogLog p=14>.update (1 ms/op)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) wHll.update(KEYS[i & MASK], now++)
})
const wCms = new Window(CountMinSketch, { width: 2719, depth: 7, seed: 1 }, { everyMs: 60_000, keep: 5 })
let nowC = 0
bench('grudge Window<CountMinSketch 2719×7>.update (1 ms/op)', 1_000_000, 5, (n) => {
  for (let i = 0; i < n; i++) wCms.update(KEYS[i & MASK], nowC++)
})
bench('grudge Window<HyperLogLog p=14>.estimate (5 slots)', 2_000, 5, (n) => {
  for (let i = 0; i < n; i++) sink ^= wHll.estimate(now) | 0
})

const ratio = (a: Result, b: Result) => (b.nsPerOp / a.nsPerOp).toFixed(0)
console.log('')
console.log(`HyperLogLog add:      grudge ${hllAdd.nsPerOp.toFixed(0)} ns vs bloom-filters ${bfHllAdd.nsPerOp.toFixed(0)} ns (×${ratio(hllAdd, bfHllAdd)} faster)`)
console.log(`HyperLogLog estimate: grudge ${hllEst.nsPerOp.toFixed(0)} ns vs bloom-filters ${bfHllEst.nsPerOp.toFixed(0)} ns (×${ratio(hllEst, bfHllEst)})`)
console.log(`Count-Min add:        grudge ${cmsAdd.nsPerOp.toFixed(0)} ns vs bloom-filters ${bfCmsAdd.nsPerOp.toFixed(0)} ns (×${ratio(cmsAdd, bfCmsAdd)} faster)`)
console.log(`Count-Min estimate:   grudge ${cmsEst.nsPerOp.toFixed(0)} ns vs bloom-filters ${bfCmsEst.nsPerOp.toFixed(0)} ns (×${ratio(cmsEst, bfCmsEst)} faster)`)
console.log(`Window<HLL> update:   ${winUpd.nsPerOp.toFixed(0)} ns (target for add: ≤ 200 ns/op)`)
console.log(`hash floor:           ${hashOnly.nsPerOp.toFixed(0)} ns of every add is key encoding + murmur3 (keys of ~25 chars)`)
if (sink === 42) console.log('')
