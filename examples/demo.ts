// `npm run demo`: starts the example Fastify API in this process, drives it over real HTTP
// with undici for about ten seconds, and prints what grudge did to each kind of client.
//
// Clients are told apart by X-Forwarded-For (the server trusts it in this demo only), so
// thousands of "addresses" can come from one machine:
// - well-behaved: 40 clients, 2 requests/s each on /api/*, in 20 tenants of 2;
// - greedy tenant: 5 clients of one tenant, 6 requests/s each (each under the per-IP limit,
//   the tenant over its own);
// - abusive: 3 clients at 100 requests/s each on /api/items (limit: 20/s, bursts of 40);
// - brute force: 1 client trying passwords on /login at 20/s;
// - key churn: a fresh address every 5 ms asking /users/available for a random name.
import { Pool } from 'undici'
import { buildFastifyServer } from './fastify-server.js'

const DURATION_MS = Number(process.env.DEMO_SECONDS ?? 10) * 1000

type ClientClass = 'well-behaved' | 'greedy tenant' | 'abusive' | 'brute force' | 'key churn'
interface Tally {
  sent: number
  admitted: number
  rejected: number
  other: number
  latenciesMs: number[]
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

async function main(): Promise<void> {
  const t0 = performance.now()
  const { app, config } = await buildFastifyServer({ trustProxy: true })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const origin = `http://127.0.0.1:${port}`
  console.log(
    `grudge demo: example API (Fastify, ${String(config.database)}, ${String(config.users)} users) on ${origin}, ${DURATION_MS / 1000} s of traffic\n`,
  )
  const pool = new Pool(origin, { connections: 64, pipelining: 1 })
  const tallies = new Map<ClientClass, Tally>()
  let dbSkipped = 0
  let dbConsulted = 0

  async function request(
    cls: ClientClass,
    ip: string,
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ): Promise<void> {
    let t = tallies.get(cls)
    if (t === undefined) tallies.set(cls, (t = { sent: 0, admitted: 0, rejected: 0, other: 0, latenciesMs: [] }))
    t.sent++
    const start = performance.now()
    try {
      const res = await pool.request({
        method,
        path,
        headers: {
          'x-forwarded-for': ip,
          ...headers,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      })
      const text = await res.body.text()
      t.latenciesMs.push(performance.now() - start)
      if (res.statusCode === 429 || res.statusCode === 403 || res.statusCode === 503) t.rejected++
      else t.admitted++
      if (path.startsWith('/users/available') && res.statusCode === 200) {
        if ((JSON.parse(text) as { dbConsulted: boolean }).dbConsulted) dbConsulted++
        else dbSkipped++
      }
    } catch {
      t.other++
    }
  }

  /** Run `fn` every `periodMs` until the end, without waiting for answers (an open-loop client). */
  async function every(periodMs: number, fn: (i: number) => Promise<void>): Promise<void> {
    const pending: Promise<void>[] = []
    const start = performance.now()
    for (let i = 0; performance.now() - start < DURATION_MS; i++) {
      pending.push(fn(i))
      const next = start + (i + 1) * periodMs
      const wait = next - performance.now()
      if (wait > 0) await sleep(wait)
    }
    await Promise.all(pending)
  }

  const clients: Promise<void>[] = []
  for (let c = 0; c < 40; c++) {
    const ip = `198.51.100.${c + 1}`
    const tenant = `tenant-${c % 20}`
    clients.push(
      sleep(Math.random() * 500).then(() =>
        every(500, (i) =>
          request('well-behaved', ip, 'GET', i % 2 ? '/api/items' : `/api/items/${i}`, { 'x-tenant-id': tenant }),
        ),
      ),
    )
  }
  for (let c = 0; c < 5; c++) {
    clients.push(
      every(1000 / 6, () =>
        request('greedy tenant', `192.0.2.${c + 1}`, 'GET', '/api/items', {
          'x-tenant-id': 'bigcorp',
        }),
      ),
    )
  }
  for (let c = 0; c < 3; c++) {
    clients.push(every(10, () => request('abusive', `203.0.113.${c + 1}`, 'GET', '/api/items')))
  }
  clients.push(
    every(50, (i) =>
      request('brute force', '203.0.113.66', 'POST', '/login', {}, { username: 'alice', password: `guess-${i}` }),
    ),
  )
  clients.push(
    every(5, (i) => {
      const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
      const name = i % 10 === 0 ? `user${i % 10_000}` : `nobody-${Math.random().toString(36).slice(2, 10)}`
      return request('key churn', ip, 'GET', `/users/available?username=${name}`)
    }),
  )
  await Promise.all(clients)

  const rows: string[][] = [['client class', 'sent', 'admitted', 'rejected', 'errors', 'p50 ms', 'p99 ms']]
  for (const cls of ['well-behaved', 'greedy tenant', 'abusive', 'brute force', 'key churn'] as ClientClass[]) {
    const t = tallies.get(cls)!
    const lat = t.latenciesMs.sort((a, b) => a - b)
    rows.push([
      cls,
      String(t.sent),
      String(t.admitted),
      String(t.rejected),
      String(t.other),
      quantile(lat, 0.5).toFixed(1),
      quantile(lat, 0.99).toFixed(1),
    ])
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  for (const [n, r] of rows.entries()) {
    console.log(r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '))
    if (n === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  }
  console.log(
    `\n/users/available: ${dbSkipped} answered by the Bloom filter alone, ${dbConsulted} reached the database`,
  )

  const stats = (await (await pool.request({ method: 'GET', path: '/grudge/stats' })).body.json()) as {
    perIp: StatsView
    api: StatsView
    tenants: StatsView
    database: { kind: string; queries: number }
  }
  console.log('\nGET /grudge/stats (last 5 minutes):')
  for (const [name, s] of [
    ['per IP (login, availability)', stats.perIp],
    ['/api per IP', stats.api],
    ['/api per tenant', stats.tenants],
  ] as const) {
    const p = s.policies
    console.log(
      `  ${name.padEnd(30)} requests ${s.requests}, rejected ${s.rejected} (limit ${p.limit.rejected}, abuse ${p.abuse.rejected}), ` +
        `bloom absent ${p.bloom.rejected}, distinct keys ≈ ${Math.round(s.distinctKeys)}, sketches ${(s.memoryBytes / 1048576).toFixed(1)} MiB, est. false positives ${s.falsePositiveRate.toExponential(1)}`,
    )
  }
  console.log(`  database: ${stats.database.kind}, ${stats.database.queries} queries`)
  const mem = process.memoryUsage()
  console.log(
    `\nprocess memory: rss ${(mem.rss / 1048576).toFixed(0)} MiB, heap ${(mem.heapUsed / 1048576).toFixed(0)} MiB (server and clients in one process)`,
  )
  await pool.close()
  await app.close()
  console.log(`done in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
}

interface StatsView {
  requests: number
  rejected: number
  distinctKeys: number
  memoryBytes: number
  falsePositiveRate: number
  policies: Record<'limit' | 'abuse' | 'bloom', { admitted: number; rejected: number }>
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
