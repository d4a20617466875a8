// `npm run bench:compare`: grudge beside the in-memory stores of @fastify/rate-limit,
// express-rate-limit and rate-limiter-flexible on the same generated traffic, at the same
// nominal limit, for accuracy against an exact reference, memory after the run and
// throughput. Each limiter runs in its own child process (so one heap never skews the
// next); the parent writes BENCHMARKS.md.
//
// Traffic (seeded, 5 minutes of fake time), limit 10 requests per key per minute:
// - well-behaved: 100,000 keys, Zipf(1) popularity capped at 40 requests per key (most
//   stay well under the limit), ≈ 470,000 requests at uniform random times;
// - heavy hitters: 200 keys at 3 × the limit (one request every 2 s, jittered);
// - churn: 1,000,000 fresh keys, one request each.
//
// Accuracy is per request against the exact reference of the limiter's own algorithm, so
// that only memory effects (sketch collisions, rotation, LRU eviction) count as errors:
// grudge is a debt meter (GCRA): rate 10/60 per s, burst 10, against an exact per-key GCRA;
// the three others are per-key fixed windows of 60 s starting at the key's first request
// (their stores' documented behaviour), against an exact per-key fixed window.
// - innocent wrongly rejected: requests of well-behaved or churn keys the reference admits
//   and the limiter rejects, over all such requests;
// - heavy hitters' excess admitted: (heavy-hitter requests admitted − those the reference
//   admits) over (heavy-hitter requests − those the reference admits).
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execSync } from 'node:child_process'
import {
  HEAVY_COLUMN,
  JUMP_TABLE_HEAD,
  formatNoSizeOption,
  formatTrafficJump,
  runNoSizeOption,
  LONG_RUN_S,
  trafficJumpRows,
} from './no-size-option.js'
import { mulberry32 } from '../../test/fixtures/mulberry32.js'

const LIMIT = 10
const WINDOW_MS = 60_000
const DURATION_MS = 300_000
const T0 = Date.UTC(2026, 0, 1)
const GOOD_KEYS = 100_000
const HEAVY_KEYS = 200
const CHURN_KEYS = 1_000_000

const here = dirname(fileURLToPath(import.meta.url))
const root = join(here, '..', '..')

/** One row of the table. */
interface Row {
  name: string
  store: string
  clock: string
  innocentWronglyRejected: number
  innocentRequests: number
  heavyExcessAdmitted: number
  heavyExcess: number
  memoryBytes: number
  requests: number
  elapsedMs: number
  /** CPU time of the process during the run (user + system), ms. */
  cpuMs: number
  clockMs: number
  note: string
}

const LIMITERS: { name: string; store: string; clock: string; note: string }[] = [
  {
    name: 'grudge',
    store:
      "the adapters' DebtMeter (limit: { rate, burst }) with its defaults but 2 generations of 4 × 262,144 cells: maxDebt 10 × burst, rotation every 600 s",
    clock: 'FakeClock + FakeTicker (injected)',
    note: 'no rotation happens within the 5-minute run',
  },
  {
    name: 'grudge (undersized: 4 × 32,768 cells)',
    store:
      'same, with 8 × fewer cells: the sketch drains at most cells × rate per level, here ≈ 0.9 × the offered load',
    clock: 'FakeClock + FakeTicker (injected)',
    note: 'shows what too small a sketch does: shared cells accumulate debt and innocent keys are refused',
  },
  {
    name: 'grudge (60 s rotation)',
    store: 'same, with maxDebt = burst and a rotation every 60 s (the shortest the amnesty guard allows)',
    clock: 'FakeClock + FakeTicker (injected)',
    note: "tests the rotation amnesty: a fresh generation sees only admitted requests; the carry-forward (spec/rotator.md) floors it at the oldest generation's reading, so a key held at its limit gets no burst back when a generation retires",
  },
  {
    name: '@fastify/rate-limit (LRU 5,000)',
    store: 'LocalStore, toad-cache LRU of 5,000 keys (the default)',
    clock: 'Date mocked (node:test MockTimers)',
    note: 'attackers are evicted by churn between two of their requests',
  },
  {
    name: '@fastify/rate-limit (LRU 2,000,000)',
    store: 'LocalStore, LRU big enough for every key of the run',
    clock: 'Date mocked (node:test MockTimers)',
    note: '',
  },
  {
    name: 'express-rate-limit',
    store: 'MemoryStore (two Maps, cleared every windowMs)',
    clock: 'Date and setInterval mocked (node:test MockTimers)',
    note: 'async API, awaited per request',
  },
  {
    name: 'rate-limiter-flexible',
    store: 'RateLimiterMemory (a Map and a setTimeout per key)',
    clock: 'Date and setTimeout mocked (node:test MockTimers)',
    note: 'async API, awaited per request; the mocked setTimeout is slower than the real one',
  },
]

/** The traffic in time order: keys, times (ms, integers) and class (0 well-behaved, 1 heavy, 2 churn). */
function traffic(): { keys: string[]; times: Float64Array; cls: Uint8Array } {
  const rnd = mulberry32(2026)
  const at: number[] = []
  const who: number[] = [] // key id: [0, GOOD) good, [GOOD, GOOD+HEAVY) heavy, then churn
  for (let k = 1; k <= GOOD_KEYS; k++) {
    const n = Math.min(40, Math.ceil(100_000 / k))
    for (let j = 0; j < n; j++) {
      at.push(Math.floor(rnd() * DURATION_MS))
      who.push(k - 1)
    }
  }
  for (let h = 0; h < HEAVY_KEYS; h++) {
    const phase = rnd() * 2000
    for (let t = phase; t < DURATION_MS; t += 2000) {
      at.push(Math.min(DURATION_MS - 1, Math.max(0, Math.floor(t + (rnd() - 0.5) * 400))))
      who.push(GOOD_KEYS + h)
    }
  }
  for (let c = 0; c < CHURN_KEYS; c++) {
    at.push(Math.floor(rnd() * DURATION_MS))
    who.push(GOOD_KEYS + HEAVY_KEYS + c)
  }
  // counting sort by ms (stable)
  const counts = new Uint32Array(DURATION_MS + 1)
  for (const t of at) counts[t + 1]++
  for (let i = 1; i <= DURATION_MS; i++) counts[i] += counts[i - 1]
  const order = new Uint32Array(at.length)
  for (let i = 0; i < at.length; i++) order[counts[at[i]]++] = i
  const keyOf = (id: number): string =>
    id < GOOD_KEYS
      ? `10.${(id >> 16) & 255}.${(id >> 8) & 255}.${id & 255}`
      : id < GOOD_KEYS + HEAVY_KEYS
        ? `203.0.113.${id - GOOD_KEYS}`
        : `100.${64 + (((id - GOOD_KEYS - HEAVY_KEYS) >> 16) & 63)}.${((id - GOOD_KEYS - HEAVY_KEYS) >> 8) & 255}.${(id - GOOD_KEYS - HEAVY_KEYS) & 255}`
  const keys = new Array<string>(at.length)
  const times = new Float64Array(at.length)
  const cls = new Uint8Array(at.length)
  for (let i = 0; i < order.length; i++) {
    const j = order[i]
    keys[i] = keyOf(who[j])
    times[i] = T0 + at[j]
    cls[i] = who[j] < GOOD_KEYS ? 0 : who[j] < GOOD_KEYS + HEAVY_KEYS ? 1 : 2
  }
  return { keys, times, cls }
}

/** Exact per-key GCRA: admitted iff debt + 1 ≤ burst, debt draining at rate per second. */
function exactGcra(keys: string[], times: Float64Array, ratePerSecond: number, burst: number): Uint8Array {
  const out = new Uint8Array(keys.length)
  const m = new Map<string, { debt: number; at: number }>()
  for (let i = 0; i < keys.length; i++) {
    let e = m.get(keys[i])
    if (e === undefined) m.set(keys[i], (e = { debt: 0, at: times[i] }))
    e.debt = Math.max(0, e.debt - ((times[i] - e.at) * ratePerSecond) / 1000)
    e.at = times[i]
    if (e.debt + 1 <= burst) {
      e.debt += 1
      out[i] = 1
    }
  }
  return out
}

/** Exact per-key fixed window starting at the key's first request; every hit counts; admitted iff count ≤ limit. */
function exactFixedWindow(keys: string[], times: Float64Array, limit: number, windowMs: number): Uint8Array {
  const out = new Uint8Array(keys.length)
  const m = new Map<string, { start: number; count: number }>()
  for (let i = 0; i < keys.length; i++) {
    let e = m.get(keys[i])
    if (e === undefined || times[i] >= e.start + windowMs) m.set(keys[i], (e = { start: times[i], count: 0 }))
    e.count++
    if (e.count <= limit) out[i] = 1
  }
  return out
}

function cpuSince(start: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(start)
  return (c.user + c.system) / 1000
}

function memoryNow(): number {
  globalThis.gc?.()
  globalThis.gc?.()
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

/** Objects kept reachable until the process ends. */
const pinned: unknown[] = []

/** Run one limiter in this process and print its row as JSON. */
async function child(name: string): Promise<void> {
  const spec = LIMITERS.find((l) => l.name === name)!
  const { keys, times, cls } = traffic()
  const n = keys.length
  const isGrudge = name.startsWith('grudge')
  const reference = isGrudge
    ? exactGcra(keys, times, LIMIT / (WINDOW_MS / 1000), LIMIT)
    : exactFixedWindow(keys, times, LIMIT, WINDOW_MS)
  const decided = new Uint8Array(n)
  // Pin the traffic: V8 may otherwise collect `keys` after its last use, in the middle of the
  // memory measurement.
  pinned.push(keys, times, cls, reference, decided)
  let elapsedMs: number
  let cpuMs: number
  let clockMs: number
  let memoryBytes: number
  if (isGrudge) {
    const { DebtMeter } = await import('../../src/limit/debt-meter.js')
    const { resolveSketchOptions } = await import('../../src/limit/options.js')
    const { FakeClock, FakeTicker } = await import('../../src/testing/index.js')
    const short = name.includes('60 s')
    const clock = new FakeClock(times[0])
    const ticker = new FakeTicker()
    const before = memoryNow()
    // the adapters' debt meter (what `limit: { rate, burst }` builds), on a fake clock
    const store = new DebtMeter(
      { rate: LIMIT / (WINDOW_MS / 1000), burst: LIMIT, maxDebt: short ? LIMIT : undefined },
      resolveSketchOptions({
        levels: 4,
        cellsPerLevel: name.includes('32,768') ? 32_768 : 262_144,
        generations: 2,
        periodMs: short ? WINDOW_MS : undefined,
        clock,
        ticker,
      }),
      'bench',
    )
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      const t = times[i]
      if (t !== clock.now()) {
        clock.set(t)
        ticker.tick() // rotation follows the clock: runs once per elapsed period
      }
      decided[i] = (store.consume(keys[i]) as { admitted: boolean }).admitted ? 1 : 0
    }
    elapsedMs = performance.now() - t0
    cpuMs = cpuSince(cpu0)
    pinned.push(store)
    memoryBytes = memoryNow() - before
    void store.close()
    const c0 = performance.now()
    for (let i = 0; i < n; i++) if (times[i] !== clock.now()) clock.set(times[i])
    clockMs = performance.now() - c0
  } else {
    const { mock } = await import('node:test')
    process.removeAllListeners('warning') // the MockTimers "experimental" warning
    mock.timers.enable({ apis: ['Date', 'setTimeout', 'setInterval'], now: times[0] })
    let now = times[0]
    const before = memoryNow()
    let decide: (key: string) => boolean | Promise<boolean>
    let keep: unknown
    if (name.startsWith('@fastify/rate-limit')) {
      const { createRequire } = await import('node:module')
      const require = createRequire(import.meta.url)
      const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (
        continueExceeding: boolean,
        exponentialBackoff: boolean,
        cache: number,
      ) => {
        incr(key: string, cb: (err: unknown, r: { current: number }) => void, timeWindow: number, max: number): void
      }
      const store = new LocalStore(false, false, name.includes('5,000') ? 5000 : 2_000_000)
      keep = store
      let admitted = false
      const cb = (_err: unknown, r: { current: number }) => {
        admitted = r.current <= LIMIT
      }
      decide = (key) => {
        store.incr(key, cb, WINDOW_MS, LIMIT)
        return admitted
      }
    } else if (name === 'express-rate-limit') {
      const { MemoryStore } = await import('express-rate-limit')
      const store = new MemoryStore()
      store.init({ windowMs: WINDOW_MS } as never)
      keep = store
      decide = async (key) => (await store.increment(key)).totalHits <= LIMIT
    } else {
      const { RateLimiterMemory } = await import('rate-limiter-flexible')
      const limiter = new RateLimiterMemory({ points: LIMIT, duration: WINDOW_MS / 1000 })
      keep = limiter
      decide = (key) =>
        limiter.consume(key).then(
          () => true,
          () => false,
        )
    }
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      const t = times[i]
      if (t !== now) {
        mock.timers.tick(t - now)
        now = t
      }
      const d = decide(keys[i])
      decided[i] = (typeof d === 'boolean' ? d : await d) ? 1 : 0
    }
    elapsedMs = performance.now() - t0
    cpuMs = cpuSince(cpu0)
    const c0 = performance.now()
    mock.timers.tick(1)
    clockMs = performance.now() - c0
    pinned.push(keep)
    memoryBytes = memoryNow() - before
    mock.timers.reset()
  }
  let innocent = 0
  let innocentWrong = 0
  let heavy = 0
  let heavyRef = 0
  let heavyAdmitted = 0
  for (let i = 0; i < n; i++) {
    if (cls[i] === 1) {
      heavy++
      heavyRef += reference[i]
      heavyAdmitted += decided[i]
    } else if (reference[i] === 1) {
      innocent++
      if (decided[i] === 0) innocentWrong++
    }
  }
  const row: Row = {
    name,
    store: spec.store,
    clock: spec.clock,
    innocentWronglyRejected: innocentWrong,
    innocentRequests: innocent,
    heavyExcessAdmitted: heavyAdmitted - heavyRef,
    heavyExcess: heavy - heavyRef,
    memoryBytes,
    requests: n,
    elapsedMs,
    cpuMs,
    clockMs,
    note: spec.note,
  }
  process.stdout.write(JSON.stringify(row) + '\n')
}

function pct(a: number, b: number): string {
  if (b === 0) return '—'
  const p = (100 * a) / b
  return p === 0 ? '0%' : p < 0.01 ? `${p.toExponential(1)}%` : `${p.toFixed(2)}%`
}

function excess(r: Row): string {
  if (r.heavyExcessAdmitted < 0)
    return `0% (stricter: ${(-r.heavyExcessAdmitted).toLocaleString('en-US')} fewer admitted than the reference)`
  return `${pct(r.heavyExcessAdmitted, r.heavyExcess)} (${r.heavyExcessAdmitted.toLocaleString('en-US')} of ${r.heavyExcess.toLocaleString('en-US')})`
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`
}

function machine(): string {
  const sh = (cmd: string) => {
    try {
      return execSync(cmd, { encoding: 'utf8', shell: '/bin/sh' }).trimEnd()
    } catch {
      return '(unavailable)'
    }
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  return [
    `- CPU: ${cpu}, \`nproc\` = ${sh('nproc')}`,
    `- Memory: ${(totalmem() / 1024 ** 3).toFixed(1)} GiB total; \`free -h\`:`,
    '',
    '```',
    sh('free -h'),
    '```',
    '',
    `- Node.js ${sh('node --version')} on ${process.platform}/${process.arch}`,
  ].join('\n')
}

/** Throughput of one run, requests per CPU second. */
function throughput(r: Row): number {
  return (r.requests / r.cpuMs) * 1000
}

/** The median of `xs` (the lower middle one for an even count). */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[(s.length - 1) >> 1]
}

/** One child run of limiter `name`: its row (the child's last stdout line). */
function runChild(name: string): Row {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--expose-gc', '--max-old-space-size=4096', fileURLToPath(import.meta.url), '--run', name],
    { encoding: 'utf8', maxBuffer: 1 << 24 },
  )
  if (r.status !== 0) {
    process.stderr.write(r.stderr)
    throw new Error(`${name} failed with status ${r.status}`)
  }
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Row
}

function parent(rounds: number): void {
  // `rounds` alternating rounds: round k runs the limiters starting at the k-th, so none is
  // always first or last on a machine whose speed drifts. Accuracy and memory are the same
  // traffic each round (grudge's seed is random, so its collisions differ slightly): the table
  // shows the run whose throughput is the median, and the throughput's spread over all rounds.
  const runs: Row[][] = LIMITERS.map(() => [])
  for (let k = 0; k < rounds; k++) {
    for (let j = 0; j < LIMITERS.length; j++) {
      const i = (j + k) % LIMITERS.length
      process.stderr.write(`round ${k + 1}/${rounds}: ${LIMITERS[i].name} …\n`)
      runs[i].push(runChild(LIMITERS[i].name))
    }
  }
  const rows = runs.map((rs) => {
    const m = median(rs.map(throughput))
    return rs.find((r) => throughput(r) === m)!
  })
  const spread = (i: number): string => {
    const t = runs[i].map(throughput)
    return `${Math.round(median(t)).toLocaleString('en-US')} req/s (${Math.round(Math.min(...t)).toLocaleString('en-US')}–${Math.round(Math.max(...t)).toLocaleString('en-US')})`
  }
  // the issue's target (#18): grudge's in-process throughput ≥ @fastify/rate-limit's LocalStore
  // with an LRU holding every key, as the per-round ratio (same round, same machine state)
  const lruAll = LIMITERS.findIndex((l) => l.name === '@fastify/rate-limit (LRU 2,000,000)')
  const ratios = runs[0].map((r, k) => throughput(r) / throughput(runs[lruAll][k]))
  const ratioLine = `grudge ÷ @fastify/rate-limit (LRU 2,000,000), throughput per round: ${ratios.map((x) => x.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(2)} over ${rounds} rounds; target ≥ 1: ${ratios.every((x) => x >= 1) ? 'met in every round' : `missed in ${ratios.filter((x) => x < 1).length} of ${rounds}, by up to ${((1 - Math.min(...ratios)) * 100).toFixed(1)} %`}`
  const table = [
    "| limiter | innocent requests wrongly rejected | heavy hitters' excess admitted | memory after the run | throughput (per CPU second), median (min–max) |",
    '|---|---:|---:|---:|---:|',
    ...rows.map(
      (r, i) =>
        `| ${r.name} | ${pct(r.innocentWronglyRejected, r.innocentRequests)} (${r.innocentWronglyRejected.toLocaleString('en-US')}) | ${excess(r)} | ${mib(r.memoryBytes)} | ${spread(i)} |`,
    ),
  ].join('\n')
  const details = rows
    .map(
      (r) =>
        `- **${r.name}**: ${r.store}; clock: ${r.clock}.${r.note ? ` ${r.note[0].toUpperCase()}${r.note.slice(1)}.` : ''}`,
    )
    .join('\n')
  process.stderr.write('running grudge, no size option …\n')
  const noSize = formatNoSizeOption(runNoSizeOption())
  process.stderr.write(`running grudge, no size option over ${LONG_RUN_S} s …\n`)
  const noSizeLong = formatNoSizeOption(runNoSizeOption(1000, LONG_RUN_S), LONG_RUN_S)
  process.stderr.write('running grudge, traffic jumps …\n')
  const jumps = trafficJumpRows().map(formatTrafficJump).join('\n')
  const md = `# Benchmarks

## grudge vs the in-memory stores of other Node.js rate limiters

Same generated traffic for every limiter, 5 minutes of fake time, nominal limit **10
requests per key per minute**: ${rows[0].requests.toLocaleString('en-US')} requests from
${GOOD_KEYS.toLocaleString('en-US')} well-behaved keys (Zipf(1) popularity, at most 40
requests each), ${HEAVY_KEYS} heavy hitters at 3 × the limit and
${CHURN_KEYS.toLocaleString('en-US')} churn keys (one request each).

${table}

Each limiter is driven directly through its store or consume API (no HTTP), one request
after the other, in its own process. Accuracy is per request, against the exact reference
of the limiter's own algorithm, so only memory effects (sketch collisions, rotation, LRU
eviction) count as errors: grudge is a debt meter (GCRA: rate 10/60 per s, burst 10)
against an exact per-key GCRA; the others are per-key fixed windows of 60 s against an
exact per-key fixed window. "Innocent" requests are those of well-behaved and churn keys
that the reference admits; the heavy hitters' excess is what they send beyond what the
reference admits. Memory is the growth of V8 heap plus ArrayBuffers after a full GC,
measured with the limiter still alive. Throughput is requests per second of CPU time of
the process (user + system, so GC threads count), including advancing the fake clock; CPU
time rather than wall time because the machine is shared with other jobs. Each limiter ran
${rounds} times in alternating order; the table shows the median throughput with its
spread, and accuracy and memory of that median run. grudge's figure includes hashing each
key once (every generation's indexes come from that one hash) and reading the score back
(the in-process store's \`tryConsume\`).

${ratioLine}

${details}

## grudge with no size option

A \`Limiter\` with only \`limit: { rate: 1, burst: 10 }\`, so its default \`memory\` budget picks
the sketch; fake clock. Traffic: 1,000 fresh clients per second for 150 s, each sending 3
requests one second apart (3,000 requests/s, none over its limit), plus 50 heavy hitters at
20 requests/s. Targets: innocent false-reject ≤ 1e-4 after the first rotation period, heavy
hitters within ±5 % of an exact per-key GCRA **in aggregate** (all 50 together;
examples/bench/no-size-option.ts). One by one they spread wider: each row counts the keys
outside ±5 % but does not hold them to it, and the second row runs the same traffic for
${LONG_RUN_S} s; every key within ±5 % over 150 s would take
twice the cells (spec/sizing.md §2.6).

| limiter | innocent false-reject after the first period | ${HEAVY_COLUMN} |
|---|---:|---:|
${noSize}
${noSizeLong}

The same \`Limiter\` under a load jump, no heavy hitters: fresh clients (3 requests each, one
second apart) at the lower rate, then at the higher one. Target: back under 1e-3 of fresh
requests refused within 60 s of the jump (every later 10-s window), memory never above the
budget. The 60× row follows a quiet spell long enough for the generations to shrink. The memory
column gives the largest figure between folds (each second, once the event loop's turns have run
the folds in progress) and the largest while a growth's lazy fold runs: the smaller generation
it replaces stays held beside the larger until it ends, at most ⌈L·M / 8,192⌉ turns (32 at the
default shape; spec/rotator.md §1, _Bounded pause_), and a growth folds one generation at a
time, so the budget, which holds that half generation, bounds both (\`tsx
examples/bench/compare.ts --jump\` prints these rows alone).

${JUMP_TABLE_HEAD}
${jumps}

Fake clocks: grudge takes an injected clock and ticker. The other three read \`Date.now()\`
and schedule cleanup with \`setTimeout\`/\`setInterval\` and offer no clock option, so
their runs use node:test's MockTimers (Date and timers mocked, advanced request by
request); their cleanup timers fire on the fake clock as they would in real time.

## Machine

${machine()}

## Reproduce

\`\`\`sh
npm ci
npm run bench:compare   # tsx examples/bench/compare.ts: one child process per limiter; writes BENCHMARKS.md
\`\`\`
`
  // the other benches' recorded runs follow this marker; they are not this bench's to rewrite
  const file = join(root, 'BENCHMARKS.md')
  const marker = '<!-- other benchmarks: kept as they are by bench:compare -->'
  const old = existsSync(file) ? readFileSync(file, 'utf8') : ''
  const kept = old.includes(marker) ? old.slice(old.indexOf(marker)) : ''
  writeFileSync(file, kept === '' ? md : md + '\n' + kept)
  process.stdout.write(table + '\n\n' + ratioLine + '\n\nwrote BENCHMARKS.md\n')
}

if (process.argv[2] === '--run') await child(process.argv[3])
else if (process.argv[2] === '--no-size-option') {
  // `tsx examples/bench/compare.ts --no-size-option [--quick]`: that row alone (quick: a tenth of the clients)
  const quick = process.argv.includes('--quick')
  process.stdout.write(formatNoSizeOption(quick ? runNoSizeOption(100, 120, 5) : runNoSizeOption()) + '\n')
} else if (process.argv[2] === '--jump') {
  // `tsx examples/bench/compare.ts --jump`: the jump rows alone (fake clock: the same figures every run)
  process.stdout.write(JUMP_TABLE_HEAD + '\n' + trafficJumpRows().map(formatTrafficJump).join('\n') + '\n')
} else {
  // `--rounds N` (default 5, at least 1)
  const at = process.argv.indexOf('--rounds')
  const rounds = at === -1 ? 5 : Number(process.argv[at + 1])
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds: expected an integer ≥ 1')
  parent(rounds)
}
