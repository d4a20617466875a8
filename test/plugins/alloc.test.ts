import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// What one request allocates on the adapters' synchronous path with ONE debt-meter policy
// (decision and the RateLimit / RateLimit-Policy values), the Fastify hook and the Express
// middleware driven directly (fixtures/alloc-child.ts), 1024 clients round-robin:
//
// - the request key, `'ip:' + address`: a string derived from the request (a cons string,
//   flattened when it is hashed), new for every request by nature;
// - one Decision, `req.grudge`: the request's own state, which later hooks and the handler
//   read after awaits (body parsing, other hooks) while other requests are decided, so it
//   cannot be a per-limiter object; with it its `scores`, its boxed doubles (score,
//   resetMs, scores.limit) and the adapter's own fields (`key`, and `bloom` or the field mark);
// - nothing else: the store's answer and the debt meter's verdict are one reused object per
//   meter on this path (DebtMeter.charge); `RateLimit-Policy` is built once per policy;
//   the `RateLimit` value of a (remaining, reset) pair is built the first time the pair is
//   seen and then read from the policy's cache (≤ 2048 values per limiter), so a steady state
//   allocates no header string (a figure ≥ 32 768, or a pair past the cache, is a new string
//   per request: a value carrying a changing figure cannot be a constant).
//
// The budget is measured, not pasted: the child builds that key and a Decision-shaped object
// with the same fields in the same loop (the 'reference' row), and each adapter must stay
// within it plus 32 B (one boxed double of slack). Before the per-meter verdict, the admitted
// path allocated a second verdict object and its doubles per request (~100 B over the reference).
// The refused path also answers with the cached default body; it allocates about 90 B more
// than the reference today (boxed waits of the denial), bounded here at reference + 128 B.
t.test('one policy: the adapters allocate only the key and the Decision per request', async (t) => {
  const env = { ...process.env }
  delete env.NODE_V8_COVERAGE
  // as test/sketch/alloc.test.ts: keep tap's coverage hook out of the child
  env._TAPJS_PROCESSINFO_COVERAGE_ = '0'
  const child = fileURLToPath(new URL('./fixtures/alloc-child.ts', import.meta.url))
  const r = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--expose-gc',
      '--no-concurrent-recompilation',
      '--min-semi-space-size=128',
      '--max-semi-space-size=128',
      child,
    ],
    { env, encoding: 'utf8', timeout: 300_000 },
  )
  t.equal(r.status, 0, `child exited cleanly: ${r.stderr}`)
  const rows = JSON.parse(r.stdout.trim().split('\n').pop()!) as Array<{
    adapter: string
    path: string
    requests: number
    minorGcs: number
    bytesPerRequest: number
    nexts: number
  }>
  t.same(
    rows.map((x) => `${x.adapter} ${x.path}`),
    ['reference key + one Decision', 'fastify admitted', 'express admitted', 'fastify refused', 'express refused'],
  )
  const ref = rows[0]
  t.ok(ref.bytesPerRequest > 100, `the reference allocates (${ref.bytesPerRequest.toFixed(1)} B/request)`)
  for (const row of rows.slice(1)) {
    const name = `${row.adapter} ${row.path}`
    t.equal(row.minorGcs, 0, `${name}: no scavenge while measured (the young generation holds the run)`)
    t.equal(row.nexts, row.path === 'admitted' ? row.requests : 0, `${name}: every request ${row.path}`)
    const budget = ref.bytesPerRequest + (row.path === 'admitted' ? 32 : 128)
    t.ok(
      row.bytesPerRequest <= budget,
      `${name}: ${row.bytesPerRequest.toFixed(1)} B/request ≤ ${budget.toFixed(1)} (reference ${ref.bytesPerRequest.toFixed(1)})`,
    )
  }
})
