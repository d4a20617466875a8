// Window-area benchmark: HyperLogLog add/estimate, Count-Min add/estimate and Window
// update in ns/op (median of several runs) and JS-heap bytes/op (typed-array backing
// stores live outside the JS heap and are not counted), beside bloom-filters' HyperLogLog
// and CountMinSketch measured in the same run. bloom-filters is far slower per op, so it
// gets fewer ops. Runs are interleaved round-robin across the cases, so that a noisy,
// shared machine slows every case alike. Run: `npm run bench -- window`.
import { HyperLogLog, CountMinSketch, Window } from '../../src/index.js'
import { murmur3 } from '../../src/hash/hasher.js'
import bloomFilters from 'bloom-filters'

const { HyperLogLog: BfHyperLogLog, CountMinSketch: BfCountMinSketch } = bloomFilters
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {})
const KEYS = Array.from({ length: 1 << 16 }, (_, i) => `203.0.113.${i & 255}:client-${i}`)
const MASK = KEYS.length - 1
// plain IPv4 addresses (≤ 15 bytes: one murmur3 tail, no full block), the common key
const IPS = Array.from({ length: 1 << 16 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.${(i * 7) & 255}`)
const RUNS = 7

interface Case {
  name: string
  ops: number
  body: (n: number) => void
  times: number[]
  cpu: number[]
  bytes: number[]
}
const cases: Case[] = []
function add(name: string, ops: number, body: (n: number) => void): Case {
  const c = { name, ops, body, times: [], cpu: [], bytes: [] }
  cases.push(c)
  return c
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const ns = (c: Case) => median(c.times)

let sink = 0
// the floor under every add: the 64-bit hash of the key as the structures take it
// (hashKey: an ASCII string is read from its chars, anything else is UTF-8 encoded first)
const hasher = murmur3(1)
const hashOnly = add('baseline: murmur3 hashKey (no sketch)', 300_000, (n) => {
  for (let i = 0; i < n; i++) {
    hasher.hashKey(KEYS[i & MASK])
    sink ^= hasher.hashLo
  }
})
const hll = HyperLogLog.bySize({ precision: 14, seed: 1 })
const hllAdd = add('grudge HyperLogLog.add (p=14)', 300_000, (n) => {
  for (let i = 0; i < n; i++) hll.add(KEYS[i & MASK])
})
const hllEst = add('grudge HyperLogLog.estimate (p=14)', 500, (n) => {
  for (let i = 0; i < n; i++) sink ^= hll.estimate() | 0
})
const hllIp = HyperLogLog.bySize({ precision: 14, seed: 2 })
const hllAddIp = add('grudge HyperLogLog.add (p=14, IPv4 keys)', 300_000, (n) => {
  for (let i = 0; i < n; i++) hllIp.add(IPS[i & MASK])
})
const bfHll = new BfHyperLogLog(2 ** 14)
const bfHllAdd = add('bloom-filters HyperLogLog.update (16384 registers)', 300, (n) => {
  for (let i = 0; i < n; i++) bfHll.update(KEYS[i & MASK])
})
const bfHllEst = add('bloom-filters HyperLogLog.count (16384 registers)', 300, (n) => {
  for (let i = 0; i < n; i++) sink ^= bfHll.count() | 0
})
const cms = CountMinSketch.byAccuracy({ epsilon: 0.001, delta: 0.001, seed: 1 })
const cmsAdd = add('grudge CountMinSketch.add (ε=δ=0.001: 2719×7)', 300_000, (n) => {
  for (let i = 0; i < n; i++) cms.add(KEYS[i & MASK])
})
const cmsEst = add('grudge CountMinSketch.estimate (2719×7)', 300_000, (n) => {
  for (let i = 0; i < n; i++) sink ^= cms.estimate(KEYS[i & MASK])
})
const cmsCu = CountMinSketch.bySize({ width: 2719, depth: 7, seed: 1, conservative: true })
add('grudge CountMinSketch.add conservative (2719×7)', 300_000, (n) => {
  for (let i = 0; i < n; i++) cmsCu.add(KEYS[i & MASK])
})
const bfCms = BfCountMinSketch.create(0.001, 0.001)
const bfCmsAdd = add(`bloom-filters CountMinSketch.update (${bfCms.columns}×${bfCms.rows})`, 5_000, (n) => {
  for (let i = 0; i < n; i++) bfCms.update(KEYS[i & MASK])
})
const bfCmsEst = add(`bloom-filters CountMinSketch.count (${bfCms.columns}×${bfCms.rows})`, 5_000, (n) => {
  for (let i = 0; i < n; i++) sink ^= bfCms.count(KEYS[i & MASK])
})
// Window addAt at 1000 adds per simulated second: a new 16 KiB slot every 1000 ops.
let now = 0
const wHll = new Window(HyperLogLog.bySize({ precision: 14, seed: 1 }), { everyMs: 1000, keep: 5 })
const winUpd = add('grudge Window<HyperLogLog p=14>.addAt (1 ms/op)', 300_000, (n) => {
  for (let i = 0; i < n; i++) wHll.addAt(now++, KEYS[i & MASK])
})
let nowC = 0
const wCms = new Window(CountMinSketch.bySize({ width: 2719, depth: 7, seed: 1 }), { everyMs: 60_000, keep: 5 })
const winCms = add('grudge Window<CountMinSketch 2719×7>.addAt (1 ms/op)', 300_000, (n) => {
  for (let i = 0; i < n; i++) wCms.addAt(nowC++, KEYS[i & MASK])
})
add('grudge Window<CountMinSketch 2719×7>.estimateAt(t, item) (≤ 5 slots)', 100_000, (n) => {
  for (let i = 0; i < n; i++) sink ^= wCms.estimateAt(nowC, KEYS[i & MASK])
})
add('grudge Window<HyperLogLog p=14>.estimateAt (5 slots)', 200, (n) => {
  for (let i = 0; i < n; i++) sink ^= wHll.estimateAt(now) | 0
})

for (const c of cases) c.body(Math.min(c.ops, 10_000)) // warm-up (JIT)
for (let r = 0; r < RUNS; r++) {
  for (const c of cases) {
    gc()
    const heap0 = process.memoryUsage().heapUsed
    const cpu0 = process.cpuUsage()
    const t0 = process.hrtime.bigint()
    c.body(c.ops)
    const t1 = process.hrtime.bigint()
    const cpu1 = process.cpuUsage(cpu0)
    c.cpu.push(((cpu1.user + cpu1.system) * 1000) / c.ops)
    c.bytes.push(Math.max(0, process.memoryUsage().heapUsed - heap0) / c.ops)
    c.times.push(Number(t1 - t0) / c.ops)
  }
}
// wall-clock ns/op is the headline; CPU ns/op (process.cpuUsage) shows how much of it was
// this process running rather than waiting for a core on a shared machine
console.log(`${'case'.padEnd(62)} ${'wall ns/op'.padStart(10)} ${'cpu ns/op'.padStart(10)} ${'heap B/op'.padStart(9)}`)
for (const c of cases) {
  console.log(
    `${c.name.padEnd(62)} ${ns(c).toFixed(1).padStart(10)} ${median(c.cpu).toFixed(1).padStart(10)} ${median(c.bytes).toFixed(1).padStart(9)}`,
  )
}
const x = (a: Case, b: Case) => (ns(b) / ns(a)).toFixed(0)
console.log('')
console.log(
  `HyperLogLog add:      grudge ${ns(hllAdd).toFixed(0)} ns vs bloom-filters ${ns(bfHllAdd).toFixed(0)} ns (×${x(hllAdd, bfHllAdd)}); IPv4 keys ${ns(hllAddIp).toFixed(0)} ns`,
)
console.log(
  `HyperLogLog estimate: grudge ${ns(hllEst).toFixed(0)} ns vs bloom-filters ${ns(bfHllEst).toFixed(0)} ns (×${x(hllEst, bfHllEst)})`,
)
console.log(
  `Count-Min add:        grudge ${ns(cmsAdd).toFixed(0)} ns vs bloom-filters ${ns(bfCmsAdd).toFixed(0)} ns (×${x(cmsAdd, bfCmsAdd)})`,
)
console.log(
  `Count-Min estimate:   grudge ${ns(cmsEst).toFixed(0)} ns vs bloom-filters ${ns(bfCmsEst).toFixed(0)} ns (×${x(cmsEst, bfCmsEst)})`,
)
console.log(
  `Window update:        HyperLogLog ${ns(winUpd).toFixed(0)} ns, Count-Min ${ns(winCms).toFixed(0)} ns (target for add: ≤ 200 ns/op)`,
)
console.log(
  `hash floor:           ${ns(hashOnly).toFixed(0)} ns of every add is hashing the key (murmur3 hashKey, keys of ~25 chars)`,
)
if (sink === 42) console.log('')
