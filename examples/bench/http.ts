// `npm run bench:http`: autocannon against bare Fastify, Fastify + grudge (debt meter on the
// IP), Fastify + @fastify/rate-limit, and bare Express, Express + grudge, Express +
// express-rate-limit; first with nothing rejected, then with almost everything rejected
// (one client key, 1 request per second). Each server runs in its own process on
// 127.0.0.1; autocannon runs here. Prints req/s, p99 latency and the ratio to the bare
// framework (with a no-op hook/middleware as the floor of any limiter), then RSS and heap
// after 10^6 distinct keys for each limiter. Bounded: ROUNDS (default 5) × 14 runs of
// 1 s warm-up + BENCH_HTTP_SECONDS (default 3) + process start, about 6 minutes at the
// default 5 rounds, plus three memory runs. The spread column is the lowest and highest of
// each round's ratio to that same round's bare run.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { createRequire } from 'node:module'
import os from 'node:os'

interface CannonResult {
  requests: { average: number; total: number }
  latency: { p99: number }
  non2xx: number
}
// autocannon ships no types; this is the part of its API used here
const autocannon = createRequire(import.meta.url)('autocannon') as (o: {
  url: string
  connections: number
  duration: number
}) => Promise<CannonResult>

const dir = dirname(fileURLToPath(import.meta.url))
// compile grudge once (tsc, as shipped) so servers do not run tsx's transpilation of it
// (inside the package, under the git-ignored bench-results/, so bare imports resolve to its node_modules)
mkdirSync(join(dir, '../../bench-results'), { recursive: true })
const dist = mkdtempSync(join(dir, '../../bench-results/http-dist-'))
const tsc = spawnSync(
  process.execPath,
  [
    join(dir, '../../node_modules/typescript/bin/tsc'),
    '-p',
    join(dir, '../../tsconfig.build.json'),
    '--outDir',
    dist,
    '--sourceMap',
    'false',
    '--inlineSources',
    'false',
    '--declaration',
    'false',
  ],
  { stdio: 'inherit' },
)
if (tsc.status !== 0) throw new Error('tsc failed')
const env = { ...process.env, GRUDGE_DIST: dist }
const DURATION_S = Number(process.env.BENCH_HTTP_SECONDS ?? 3)
// round-robin rounds, median per configuration: a shared machine drifts, and every
// configuration then sees the same drift
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 5)
const CONNECTIONS = 10

interface Row {
  framework: string
  variant: string
  phase: string
  rps: number
  p99: number
  non2xx: number
  total: number
  // lowest and highest of this configuration's per-round ratio to the same round's bare run
  spread?: [number, number]
}

async function run(framework: string, variant: string, phase: string): Promise<Row> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(dir, 'http-server.ts'), framework, variant, phase], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
  })
  const url: string = await new Promise((resolve, reject) => {
    let buf = ''
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString()
      const m = /http:\/\/127\.0\.0\.1:\d+/.exec(buf)
      if (m) resolve(m[0])
    })
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)))
  })
  try {
    // 1 s warm-up, then the measured run
    await autocannon({ url, connections: CONNECTIONS, duration: 1 })
    const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S })
    return {
      framework,
      variant,
      phase,
      rps: r.requests.average,
      p99: r.latency.p99,
      non2xx: r.non2xx,
      total: r.requests.total,
    }
  } finally {
    child.kill()
  }
}

const configs: [string, string, string][] = []
for (const framework of ['fastify', 'express']) {
  configs.push([framework, 'bare', 'open'], [framework, 'noop', 'open'])
  for (const phase of ['open', 'reject'])
    for (const variant of ['grudge', 'other']) configs.push([framework, variant, phase])
}
const samples = new Map<string, Row[]>()
for (let round = 0; round < ROUNDS; round++) {
  for (const [framework, variant, phase] of configs) {
    const r = await run(framework, variant, phase)
    const k = `${framework}/${variant}/${phase}`
    samples.set(k, [...(samples.get(k) ?? []), r])
  }
}
// each round's ratio to the bare run of the same round (rounds are round-robin, so the pair
// saw the same machine), as [lowest, highest]
function ratioSpread(rs: Row[], bare: Row[]): [number, number] {
  const ratios = rs.map((r, i) => r.rps / bare[i].rps)
  return [Math.min(...ratios), Math.max(...ratios)]
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const rows: Row[] = configs.map(([framework, variant, phase]) => {
  const rs = samples.get(`${framework}/${variant}/${phase}`)!
  return {
    framework,
    variant,
    phase,
    rps: median(rs.map((r) => r.rps)),
    p99: median(rs.map((r) => r.p99)),
    non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
    total: rs.reduce((a, r) => a + r.total, 0),
    spread: ratioSpread(rs, samples.get(`${framework}/bare/open`)!),
  }
})

const name = (r: Row) =>
  r.variant === 'noop'
    ? `${r.framework} + no-op ${r.framework === 'fastify' ? 'onRequest hook' : 'middleware'}`
    : r.variant === 'bare'
      ? `${r.framework} (bare)`
      : r.variant === 'grudge'
        ? `${r.framework} + grudge`
        : r.framework === 'fastify'
          ? 'fastify + @fastify/rate-limit'
          : 'express + express-rate-limit'
console.log(
  `\nautocannon, ${CONNECTIONS} connections, ${DURATION_S} s per run, median of ${ROUNDS} round-robin rounds, loopback, node ${process.version}, load average ${os.loadavg()[0].toFixed(1)}`,
)
console.log('| server | phase | req/s | p99 ms | rejected | ratio to bare | spread over rounds |')
console.log('|---|---|---:|---:|---:|---:|---:|')
for (const r of rows) {
  const bare = rows.find((b) => b.framework === r.framework && b.variant === 'bare')!
  const rejected = r.total > 0 ? `${((r.non2xx / r.total) * 100).toFixed(1)}%` : '-'
  console.log(
    `| ${name(r)} | ${r.variant === 'bare' || r.variant === 'noop' ? '-' : r.phase === 'open' ? 'nothing rejected' : 'mostly rejected'} | ${r.rps.toFixed(0)} | ${r.p99} | ${rejected} | ${(r.rps / bare.rps).toFixed(2)} | ${r.spread![0].toFixed(2)}–${r.spread![1].toFixed(2)} |`,
  )
}

console.log('\nRSS after 10^6 distinct keys (in-process state of each limiter)')
console.log('| limiter | RSS before MB | RSS after MB | growth MB | heap used after MB |')
console.log('|---|---:|---:|---:|---:|')
for (const which of ['grudge', 'fastify-rate-limit', 'express-rate-limit']) {
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--expose-gc', '--max-old-space-size=4096', join(dir, 'http-memory.ts'), which],
    { encoding: 'utf8', timeout: 120_000, env },
  )
  const line = r.stdout.trim().split('\n').pop() ?? ''
  try {
    const m = JSON.parse(line) as { rssBeforeMB: number; rssAfterMB: number; heapUsedMB: number }
    console.log(
      `| ${which} | ${m.rssBeforeMB.toFixed(0)} | ${m.rssAfterMB.toFixed(0)} | ${(m.rssAfterMB - m.rssBeforeMB).toFixed(0)} | ${m.heapUsedMB.toFixed(0)} |`,
    )
  } catch {
    console.log(`| ${which} | failed: ${r.stderr.slice(0, 200).replace(/\n/g, ' ')} | | |`)
  }
}
rmSync(dist, { recursive: true, force: true })
