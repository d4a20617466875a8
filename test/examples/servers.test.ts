import t, { type Test } from 'tap'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import { buildFastifyServer } from '../../examples/fastify-server.js'
import { buildExpressServer } from '../../examples/express-server.js'
import { DEMO_LOOP_REQUESTS, EXAMPLE_ROUTES, startupBanner } from '../../examples/app/banner.js'

// The example API on both frameworks, over real HTTP on loopback. Expected figures come from
// the policies in examples/app/config.ts: per-tenant burst 20, login abuse threshold 5 with
// +1 per failure, the Bloom filter holding every seeded name (no false negatives).

type Call = (
  method: 'GET' | 'POST',
  path: string,
  headers?: Record<string, string>,
  body?: unknown,
) => Promise<{ status: number; json: Record<string, unknown> }>

function caller(origin: string): Call {
  return async (method, path, headers = {}, body) => {
    const res = await request(origin + path, {
      method,
      headers: {
        ...headers,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    })
    return {
      status: res.statusCode,
      json: (await res.body.json()) as Record<string, unknown>,
    }
  }
}

async function scenario(t: Test, call: Call, origin: string): Promise<void> {
  // Bloom pre-check: a seeded name reaches the database; most unknown names do not
  const taken = await call('GET', '/users/available?username=alice', {
    'x-forwarded-for': '192.0.2.1',
  })
  t.same(taken.json, {
    username: 'alice',
    available: false,
    dbConsulted: true,
  })
  let skipped = 0
  for (let i = 0; i < 20; i++) {
    const r = await call('GET', `/users/available?username=nobody-${i}`, {
      'x-forwarded-for': `192.0.2.${10 + i}`,
    })
    t.equal(r.json.available, true)
    if (r.json.dbConsulted === false) skipped++
  }
  t.ok(skipped >= 15, `${skipped} of 20 unknown names answered by the Bloom filter (1% false positives)`)

  // /login: 5 failures reach the threshold; the 6th attempt is blocked with 403
  const statuses: number[] = []
  for (let i = 0; i < 7; i++)
    statuses.push(
      (await call('POST', '/login', { 'x-forwarded-for': '203.0.113.9' }, { username: 'bob', password: 'nope' }))
        .status,
    )
  t.same(statuses.slice(0, 5), [401, 401, 401, 401, 401])
  t.equal(statuses.at(-1), 403, 'blocked once the abuse score reaches 5')
  const ok = await call(
    'POST',
    '/login',
    { 'x-forwarded-for': '203.0.113.10' },
    { username: 'bob', password: 'bob-secret' },
  )
  t.same([ok.status, ok.json.ok], [200, true], 'another client logs in')

  // /api/*: the per-tenant burst (20) binds before the per-IP one (40) for a tenant's many IPs
  // (each IP sends one request, so only the tenant's limit can refuse). The servers run on
  // the real clock, so the figures are bounds, not timings: the 20 of the burst are admitted
  // first, and the refusal is the tenant policy's (r=0 in its member).
  const api: { status: number; ratelimit: string }[] = []
  for (let i = 0; i < 60; i++) {
    const res = await request(`${origin}/api/items`, {
      headers: { 'x-forwarded-for': `198.51.100.${i}`, 'x-tenant-id': 'acme' },
    })
    await res.body.text()
    api.push({ status: res.statusCode, ratelimit: String(res.headers.ratelimit) })
  }
  const firstRefusal = api.findIndex((r) => r.status === 429)
  t.ok(firstRefusal >= 20, `the tenant's burst of 20 is admitted first (first 429 at request ${firstRefusal + 1})`)
  t.match(api[firstRefusal]?.ratelimit, /"api-tenant";r=0;/, 'refused by the per-tenant policy')
  const listed = await request(`${origin}/api/items`, {
    headers: { 'x-forwarded-for': '198.51.100.98', 'x-tenant-id': 'initech' },
  })
  await listed.body.text()
  t.match(
    String(listed.headers['ratelimit-policy']),
    /"api-ip";q=40;w=2, "api-tenant";q=20;w=2/,
    'both policies listed',
  )
  const other = await call('GET', '/api/items', {
    'x-forwarded-for': '198.51.100.1',
    'x-tenant-id': 'globex',
  })
  t.equal(other.status, 200, 'another tenant from the same IP is not affected')

  // every route the startup banner lists exists (a limiter's 429/403 would still prove it)
  for (const r of EXAMPLE_ROUTES) {
    const res = await call(r.method, r.path, { 'x-forwarded-for': '192.0.2.77' }, r.method === 'POST' ? {} : undefined)
    t.not(res.status, 404, `${r.method} ${r.path} is served`)
  }
  // the banner's curl loop (one client, no tenant, sequential): it must show the limit
  const loop: number[] = []
  for (let i = 0; i < DEMO_LOOP_REQUESTS; i++)
    loop.push((await call('GET', '/api/items', { 'x-forwarded-for': '192.0.2.200' })).status)
  const first429 = loop.indexOf(429)
  t.ok(first429 >= 40, `the per-IP burst of 40 is admitted first (first 429 at request ${first429 + 1})`)
  t.ok(
    first429 >= 0 && loop.slice(first429).some((s) => s === 429),
    `the banner's loop of ${DEMO_LOOP_REQUESTS} shows 429s`,
  )

  const stats = await call('GET', '/grudge/stats')
  t.equal(stats.status, 200)
  t.ok((stats.json.database as { queries: number }).queries >= 1)
}

t.test('Fastify example', async (t) => {
  const { app } = await buildFastifyServer({ trustProxy: true, users: 1000 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  await scenario(t, caller(origin), origin)
})

t.test('Express example', async (t) => {
  const { app, close } = await buildExpressServer({
    trustProxy: true,
    users: 1000,
  })
  const server = app.listen(0, '127.0.0.1')
  await new Promise<void>((r) => server.once('listening', () => r()))
  t.teardown(async () => {
    await new Promise<void>((r) => server.close(() => r()))
    await close()
  })
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  await scenario(t, caller(origin), origin)
})

t.test('the startup banner lists the routes, a curl line, and the configuration one setting a line', async (t) => {
  const text = startupBanner('http://127.0.0.1:3000', { framework: 'fastify', policies: { '/login': { rate: 1 } } })
  for (const r of EXAMPLE_ROUTES) t.match(text, `${r.method} ${r.path}`)
  t.match(text, /curl -i http:\/\/127\.0\.0\.1:3000\/api\/items/)
  t.match(text, /\n {2}framework: fastify\n {2}policies:\n {4}\/login:\n {6}rate: 1\n/)
  t.ok(
    text.split('\n').every((l) => l.length <= 120),
    'no line longer than 120 characters',
  )
})
