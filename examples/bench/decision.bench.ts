// Decision bench (issue #18): the time of one in-process rate-limit decision over fresh keys,
// grudge against the per-key stores it replaces, in one process, round-robin.
//
// Contenders, each over the same N fresh key strings (IPv4 addresses, one request each, as
// a churn of new clients or an address-rotating attacker sends them):
//   grudge  `Limiter.decide(key)` of a `Limiter({ limit: { rate, burst } })` with its default
//           memory budget (self-sized), hasher (SipHash) and clock, then the header values
//           the adapters write for that decision: `writeRateLimitFields` (src/http/headers.ts,
//           draft-10 `RateLimit` and `RateLimit-Policy`, as both adapters call it) into a
//           sink that keeps the values.
//   grudge 4×262k      the same with a fixed shape (4 levels × 262,144 cells, 2 generations,
//           as bench:compare): no load measurement for sizing.
//   grudge 4×262k m3   the same fixed shape hashed with murmur3 instead of SipHash.
//   LRU     @fastify/rate-limit's LocalStore (`store.incr`, toad-cache LRU) with an LRU big
//           enough for every key (so it forgets nobody, as grudge does not); its plugin's
//           header formatting is not counted (it lives inline in the plugin), which can only
//           favour the LRU.
//   Map     a `Map<string, number>` counter (`m.set(k, (m.get(k) ?? 0) + 1)`): the least a
//           per-key store can do, with no time, no eviction and no headers.
// Every round builds a fresh instance of each contender (so every key is new to it; grudge's
// fixed memory is first touched with 100,000 other keys, untimed, as a server's sketch is
// touched in its first seconds, while a per-key store's growth is what it pays per key) and fresh
// key strings (decoded from one pre-generated buffer: flat strings whose hash V8 has not
// cached yet, as a key parsed from a request), then runs the contenders one after another,
// in an order that rotates from round to round. ns/op is CPU time of this process (user +
// system, so GC threads count) over the N operations; wall time is printed beside it.
// Targets: grudge ≤ the LRU in every round; aim: grudge ≤ the Map.
//
// Run: npm run bench -- decision [--quick]   (DECISION_BENCH_KEYS=n keys, DECISION_BENCH_ROUNDS=r ≥ 5)
import { createRequire } from 'node:module'
import { Limiter } from '../../src/limit/limiter.js'
import type { Decision } from '../../src/limit/decision.js'
import { murmur3 } from '../../src/hash/hasher.js'
import { fieldSource, writeRateLimitFields, type FieldSource } from '../../src/http/headers.js'

const QUICK = process.argv.includes('--quick')
const N = Number(process.env.DECISION_BENCH_KEYS ?? (QUICK ? 100_000 : 1_000_000))
const ROUNDS = Math.max(5, Number(process.env.DECISION_BENCH_ROUNDS ?? (QUICK ? 5 : 9)))

// N distinct IPv4 addresses, newline-separated, in one buffer; offsets of each
const text: string[] = []
for (let i = 0; i < N; i++) {
  // spread over the address space (not a.b.c.0 … in order), as real churn is
  const x = Math.imul(i + 1, 0x9e3779b1) >>> 0
  text.push(`${1 + ((x >>> 24) % 223)}.${(x >>> 16) & 255}.${(x >>> 8) & 255}.${x & 255}`)
}
const pool = Buffer.from(text.join('\n') + '\n', 'latin1')
const starts = new Int32Array(N + 1)
{
  let k = 0
  for (let i = 0; i < pool.length; i++) if (pool[i] === 10) starts[++k] = i + 1
}
text.length = 0
/** N fresh flat strings (a `Buffer#toString` is a new sequential string each time). */
function freshKeys(): string[] {
  const keys = new Array<string>(N)
  for (let i = 0; i < N; i++) keys[i] = pool.toString('latin1', starts[i], starts[i + 1] - 1)
  return keys
}

// --- grudge: decide + the adapters' field writer into a reused sink
interface Sink {
  fields: number
  policy: string
  state: string
}
const sink: Sink = { fields: 0, policy: '', state: '' }
function setField(out: Sink, name: string, value: string): void {
  out.fields++
  if (name === 'ratelimit') out.state = value
  else out.policy = value
}
function runGrudge(limiter: Limiter, fields: FieldSource, keys: string[]): number {
  let admitted = 0
  for (let i = 0; i < keys.length; i++) {
    const d = limiter.decide(keys[i]) as Decision // in-process store: synchronous
    writeRateLimitFields(sink, setField, fields, d)
    if (d.admitted) admitted++
  }
  return admitted
}

// --- @fastify/rate-limit LocalStore
interface LocalStoreLike {
  incr(
    key: string,
    cb: (err: unknown, r: { current: number; ttl: number }) => void,
    windowMs: number,
    max: number,
  ): void
}
const require = createRequire(import.meta.url)
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache: number,
) => LocalStoreLike
let lruAdmitted = 0
const MAX = 20
const WINDOW_MS = 2_000
function lruCallback(_err: unknown, r: { current: number; ttl: number }): void {
  if (r.current <= MAX) lruAdmitted++
}
function runLru(store: LocalStoreLike, keys: string[]): number {
  lruAdmitted = 0
  for (let i = 0; i < keys.length; i++) store.incr(keys[i], lruCallback, WINDOW_MS, MAX)
  return lruAdmitted
}

// --- Map<string, number>
function runMap(m: Map<string, number>, keys: string[]): number {
  let admitted = 0
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]
    const c = (m.get(k) ?? 0) + 1
    m.set(k, c)
    if (c <= MAX) admitted++
  }
  return admitted
}

/** The grudge limiters measured: the defaults (what `limit: { rate, burst }` builds), and a fixed shape. */
const GRUDGES = {
  grudge: {},
  'grudge 4×262k': { levels: 4, cellsPerLevel: 262_144, generations: 2 },
  'grudge 4×262k m3': { levels: 4, cellsPerLevel: 262_144, generations: 2, hasher: murmur3() },
} as const
type Name = keyof typeof GRUDGES | 'LRU' | 'Map'
const NAMES: Name[] = [...(Object.keys(GRUDGES) as (keyof typeof GRUDGES)[]), 'LRU', 'Map']
/** Build a fresh contender and return its measured run (setup is not timed). */
function prepare(name: Name): () => number {
  if (name === 'LRU') {
    const store = new LocalStore(false, false, N + 1)
    return () => runLru(store, keysNow)
  }
  if (name === 'Map') {
    const m = new Map<string, number>()
    return () => runMap(m, keysNow)
  }
  // the adapters' limit: rate 10/s, burst 20 (RateLimit-Policy: "default";q=20;w=2)
  const limiter = new Limiter({ limit: { rate: 10, burst: MAX }, ...GRUDGES[name] })
  const fields = fieldSource(limiter)
  // grudge's memory is allocated once, at start: touch it (with other keys) before timing,
  // so that the run measures decisions, not the first page faults of a fresh sketch
  runGrudge(limiter, fields, warmKeys)
  return () => runGrudge(limiter, fields, keysNow)
}

let keysNow: string[] = []
/** Keys none of the measured ones equals (they have no dot). */
const warmKeys = Array.from({ length: 100_000 }, (_, i) => `w${i}`)
const gc = (globalThis as { gc?: () => void }).gc
function measure(name: Name): { cpu: number; wall: number; admitted: number } {
  keysNow = freshKeys()
  const run = prepare(name)
  gc?.()
  const c0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  const admitted = run()
  const wall = Number(process.hrtime.bigint() - t0) / N
  const c = process.cpuUsage(c0)
  keysNow = []
  return { cpu: ((c.user + c.system) * 1000) / N, wall, admitted }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const f1 = (x: number) => x.toFixed(1)

console.log(
  `decision bench: ${N.toLocaleString('en-US')} fresh IPv4 keys per contender per round, one request each; ${ROUNDS} round-robin rounds after a warm-up; node ${process.version}${QUICK ? ' (--quick)' : ''}`,
)
console.log('(ns/op = CPU time of this process per decision, GC included; wall = wall-clock)')
// warm-up round: every contender's code optimized before the first measured round
for (const n of NAMES) measure(n)
const cpu = Object.fromEntries(NAMES.map((n) => [n, [] as number[]])) as Record<Name, number[]>
const wall = Object.fromEntries(NAMES.map((n) => [n, [] as number[]])) as Record<Name, number[]>
const grudges = NAMES.filter((n) => n !== 'LRU' && n !== 'Map')
let admitted = ''
for (let r = 0; r < ROUNDS; r++) {
  // rotate the order, so that no contender always runs after the same one
  for (let j = 0; j < NAMES.length; j++) {
    const n = NAMES[(r + j) % NAMES.length]
    const m = measure(n)
    cpu[n].push(m.cpu)
    wall[n].push(m.wall)
    if (r === 0) admitted += `${n} ${m.admitted.toLocaleString('en-US')}, `
  }
  console.log(
    `round ${r + 1}: ${NAMES.map((n) => `${n} ${f1(cpu[n][r])}`).join('  ')} ns/op;  ${grudges.map((g) => `${g}: /LRU ${(cpu[g][r] / cpu.LRU[r]).toFixed(2)} /Map ${(cpu[g][r] / cpu.Map[r]).toFixed(2)}`).join('; ')}`,
  )
}
console.log('')
for (const n of NAMES) {
  const xs = cpu[n]
  console.log(
    `${n.padEnd(17)} median ${f1(median(xs)).padStart(7)} ns/op  spread ${f1(Math.min(...xs))}–${f1(Math.max(...xs))}  (wall median ${f1(median(wall[n]))})`,
  )
}
console.log(`admitted in round 1 (every key is fresh, so all): ${admitted.slice(0, -2)}`)
for (const g of grudges) {
  const vsLru = cpu[g].map((x, r) => x / cpu.LRU[r])
  const vsMap = cpu[g].map((x, r) => x / cpu.Map[r])
  console.log(`\n${g}/LRU per round: ${vsLru.map((x) => x.toFixed(2)).join(' ')}  (median ${median(vsLru).toFixed(2)})`)
  console.log(`${g}/Map per round: ${vsMap.map((x) => x.toFixed(2)).join(' ')}  (median ${median(vsMap).toFixed(2)})`)
  const missedRounds = vsLru.filter((x) => x > 1).length
  console.log(
    `  target ≤ LRU in every round: ${missedRounds === 0 ? 'met' : `MISSED in ${missedRounds} of ${ROUNDS} rounds, worst by ${((Math.max(...vsLru) - 1) * 100).toFixed(0)}%, median by ${((median(vsLru) - 1) * 100).toFixed(0)}%`}`,
  )
  const medMap = median(vsMap)
  console.log(
    `  aim ≤ Map: ${medMap <= 1 ? 'met' : `missed by ${((medMap - 1) * 100).toFixed(0)}% (median ratio ${medMap.toFixed(2)}; ${vsMap.filter((x) => x <= 1).length} of ${ROUNDS} rounds met)`}`,
  )
}
if (sink.fields === -1) console.log(sink.policy, sink.state)
