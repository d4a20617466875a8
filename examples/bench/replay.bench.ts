// Throughput of `grudge replay` on an access log: the target is ≥ 300,000 lines/s.
// A synthetic Combined-format log (Zipf-distributed client addresses, a few heavy hitters,
// times a few seconds out of order like real logs) is generated in memory, then replayed
// through the same path as the CLI (bytes → UTF-8 lines → parser → policies + exact
// reference + timeline), beside baselines measured in the same run: splitting the bytes
// into lines only, and splitting + parsing.
import { Readable } from 'node:stream'
import { feedLines } from '../../src/cli/feed.js'
import { accessRecord, parseAccessLine } from '../../src/cli/access-log.js'
import { Replay } from '../../src/cli/replay.js'

const LINES = Number(process.env.REPLAY_BENCH_LINES ?? 1_000_000)
const RUNS = 5
const KEYS = 50_000

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
function clfTime(ms: number): string {
  const d = new Date(ms)
  const p = (n: number) => String(n).padStart(2, '0')
  return `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
}

function generate(n: number): Buffer[] {
  const rnd = mulberry32(42)
  const paths = [
    '/',
    '/index.html',
    '/api/items',
    '/api/items/42',
    '/login',
    '/static/app.js',
    '/static/style.css',
    '/favicon.ico',
  ]
  const statuses = [200, 200, 200, 200, 304, 404, 401, 500]
  const chunks: Buffer[] = []
  let buf: string[] = []
  const t0 = Date.UTC(2026, 0, 1)
  for (let i = 0; i < n; i++) {
    // Zipf(1) over KEYS addresses by inverse transform on the harmonic CDF approximation
    const k = Math.floor(Math.pow(KEYS, rnd())) - 1
    const ip = `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${k & 255}`
    const t = t0 + Math.floor(i / 1000) * 1000 - Math.floor(rnd() * 3) * 1000
    const path = paths[Math.floor(rnd() * paths.length)]
    buf.push(
      `${ip} - - [${clfTime(t)}] "GET ${path}?q=${i & 1023} HTTP/1.1" ${statuses[i & 7]} ${512 + (i & 4095)} "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"\n`,
    )
    if (buf.length === 4096) {
      chunks.push(Buffer.from(buf.join('')))
      buf = []
    }
  }
  if (buf.length) chunks.push(Buffer.from(buf.join('')))
  return chunks
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[s.length >> 1]
}

// The machine is shared: the figure is CPU time of this process (user + system, which also
// counts GC threads), median of RUNS runs; wall time is printed beside it.
async function measure(name: string, run: () => Promise<void>): Promise<number> {
  await run() // warm-up
  const cpu: number[] = []
  const wall: number[] = []
  for (let r = 0; r < RUNS; r++) {
    globalThis.gc?.()
    const c0 = process.cpuUsage()
    const t0 = performance.now()
    await run()
    wall.push(performance.now() - t0)
    const c = process.cpuUsage(c0)
    cpu.push((c.user + c.system) / 1000)
  }
  const ms = median(cpu)
  const perSec = (LINES / ms) * 1000
  console.log(
    `${name.padEnd(46)} ${((ms * 1e6) / LINES).toFixed(0).padStart(6)} ns/line CPU  ${Math.round(perSec).toLocaleString('en-US').padStart(11)} lines/s  (wall ${Math.round((LINES / median(wall)) * 1000).toLocaleString('en-US')} lines/s)`,
  )
  return perSec
}

const chunks = generate(LINES)
const bytes = chunks.reduce((a, c) => a + c.length, 0)
console.log(
  `replay bench: ${LINES.toLocaleString('en-US')} synthetic Combined-format lines (${(bytes / 1048576).toFixed(0)} MiB), ${KEYS.toLocaleString('en-US')} Zipf keys, median of ${RUNS} runs`,
)

const split = await measure('baseline: bytes → lines', async () => {
  await feedLines(Readable.from(chunks), { line() {} })
})
const rec = accessRecord()
const parse = await measure('baseline: bytes → lines → parse', async () => {
  await feedLines(Readable.from(chunks), { line: (l) => void parseAccessLine(l, rec) })
})
let report: ReturnType<Replay['finish']> | undefined
const full = await measure('grudge replay (rate policy + exact reference)', async () => {
  const replay = new Replay({ format: 'access', ratePerSecond: 1, burst: 20 })
  await feedLines(Readable.from(chunks), replay)
  report = replay.finish()
  replay.close()
})
const abuse = await measure('grudge replay (rate + abuse + exact reference)', async () => {
  const replay = new Replay({
    format: 'access',
    ratePerSecond: 1,
    burst: 20,
    abuse: { '401': 3, '404': 1, '2xx': -0.5 },
  })
  await feedLines(Readable.from(chunks), replay)
  replay.finish()
  replay.close()
})
console.log(`ratios: replay / split ${(split / full).toFixed(2)}×, replay / parse ${(parse / full).toFixed(2)}× slower`)
console.log(
  `rejected ${report!.totals.rejected.toLocaleString('en-US')} of ${report!.totals.requests.toLocaleString('en-US')}, decisions differing from the reference ${report!.reference.decisionsDiffering}`,
)
const target = 300_000
console.log(
  `target ≥ ${target.toLocaleString('en-US')} lines/s: ${full >= target ? 'met' : 'NOT met'} (rate policy ${Math.round(full).toLocaleString('en-US')}, rate + abuse ${Math.round(abuse).toLocaleString('en-US')})`,
)
