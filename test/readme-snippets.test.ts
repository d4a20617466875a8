import t, { type Test } from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { installTarball, packOnce, root, userEnv } from './fixtures/packed.js'

// Every README code block marked `<!-- runnable: NAME -->` runs as pasted into a new app:
// a package made as `npm init -y` makes one (CommonJS, no "type"), grudge installed from the
// packed tarball (built and packed once per run, shared with test/pack.test.ts), the
// framework beside it. Each server snippet listens on PORT on 127.0.0.1 and prints
// `listening on …`; the test sends real HTTP requests and checks the fields and a 429.

/** A README block marked runnable: its name, fence language and code. */
export interface Runnable {
  name: string
  lang: string
  code: string
}

/** The blocks of `markdown` preceded by `<!-- runnable: NAME -->` (blank lines allowed between). */
export function runnableBlocks(markdown: string): Runnable[] {
  const out: Runnable[] = []
  for (const m of markdown.matchAll(/<!-- runnable: ([\w-]+) -->\s*\n```(\w+)\n([\s\S]*?)\n```/g))
    out.push({ name: m[1], lang: m[2], code: m[3] + '\n' })
  return out
}

const blocks = runnableBlocks(readFileSync(join(root, 'README.md'), 'utf8'))
const byName = new Map(blocks.map((b) => [b.name, b]))

t.test('the README marks its quick starts runnable', async (t) => {
  t.same(
    blocks.map((b) => b.name),
    ['tsconfig', 'fastify-esm', 'express-esm', 'express-cjs', 'fastify-tiers', 'express-tiers'],
  )
  t.equal(new Set(blocks.map((b) => b.name)).size, blocks.length, 'names are unique')
})

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })

/** Start `file` with node in `cwd` on a free PORT; resolves once it prints `listening on`. */
async function start(t: Test, cwd: string, file: string): Promise<string> {
  const port = await freePort()
  const child = spawn(process.execPath, [file], { cwd, env: { ...userEnv, PORT: String(port) } })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGTERM')
        setTimeout(() => child.kill('SIGKILL'), 3000).unref()
      }),
  )
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not print "listening on" in 30 s:\n${out}`)), 30_000)
    const check = () => {
      if (/listening on/.test(out)) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout.on('data', check)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`${file} exited with ${code}:\n${out}`))
    })
  })
  t.match(out, new RegExp(`listening on http://127\\.0\\.0\\.1:${port}`), 'it prints where it listens')
  return `http://127.0.0.1:${port}`
}

async function get(url: string) {
  const res = await request(url)
  await res.body.text()
  return { status: res.statusCode, headers: res.headers }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * What the README says of `limit: { rate, burst }` for one client of a fresh server, checked
 * request by request (GCRA: admitted iff debt + 1 ≤ burst, the debt drains at `rate`/s):
 * - the first `burst` requests are all answered (the fields state q = burst, r = burst − 1);
 * - at any moment the admitted count is ≤ burst + rate × (time since the first was sent):
 *   in particular a request after `burst` sent within 1 / rate of the first is refused;
 * - the refusal is a 429 with `Retry-After: 1` (a wait of at most 1 / rate, rounded up);
 * - refused requests cost nothing: 1 / rate after the last of them, a request is admitted.
 * No wall-clock threshold: the bound uses the time each run measured, so a slow machine
 * only admits more, as the README says it may.
 * @param spent requests this client had admitted since `t0` before this call
 */
async function limitedAt(
  t: Test,
  origin: string,
  { burst, rate, spent = 0, t0 = performance.now() }: { burst: number; rate: number; spent?: number; t0?: number },
) {
  const first = await get(origin + '/')
  t.equal(first.status, 200)
  // draft-ietf-httpapi-ratelimit-headers: quota q = burst; remaining r = burst − 1 after one
  t.match(String(first.headers['ratelimit-policy']), new RegExp(`;q=${burst};`), 'RateLimit-Policy states the burst')
  // r = floor(burst − debt): the earlier requests may have drained a little by now
  const r = Number(/;r=(\d+);/.exec(String(first.headers['ratelimit']))?.[1])
  if (spent === 0) t.equal(r, burst - 1, 'RateLimit: r = burst − 1 after one request')
  else
    t.ok(r >= burst - 1 - spent && r <= burst - 1, `RateLimit: r = ${r}, ${spent} spent before (some may have drained)`)
  let admitted = spent + 1
  const statuses = [first.status]
  let denied: Awaited<ReturnType<typeof get>> | undefined
  let overBound = ''
  // until the first refusal: the bound says it comes within burst + rate × elapsed requests
  for (let i = 0; i < 300 && denied === undefined; i++) {
    const r = await get(origin + '/')
    const elapsedS = (performance.now() - t0) / 1000
    statuses.push(r.status)
    if (r.status === 200) admitted++
    else if (r.status === 429) denied = r
    if (admitted > burst + rate * elapsedS && overBound === '')
      overBound = `${admitted} admitted within ${elapsedS.toFixed(3)} s`
  }
  t.same(
    statuses.slice(0, burst - spent),
    Array(burst - spent).fill(200),
    `the first ${burst} requests (back to back) are all answered`,
  )
  t.equal(overBound, '', `never more than ${burst} + ${rate} × t admitted (${statuses.join(' ')})`)
  t.ok(denied !== undefined, 'a 429 once the burst is spent')
  t.equal(denied?.headers['retry-after'], '1', `Retry-After: 1 (a wait ≤ ${1000 / rate} ms, rounded up)`)
  t.match(String(denied?.headers['ratelimit']), /;r=0;t=1\b/, 'RateLimit: none remaining, t = Retry-After')
  // a few more refused at once, then 1 / rate later one is admitted: refusals added nothing
  const after: number[] = []
  for (let i = 0; i < 5; i++) after.push((await get(origin + '/')).status)
  const last = performance.now()
  while (performance.now() - last < 1000 / rate + 1) await sleep(1000 / rate)
  const next = await get(origin + '/')
  t.equal(next.status, 200, `1 / rate after the last refusal (${after.join(' ')}), a request is admitted`)
  return first
}

t.test('the runnable snippets, from the packed tarball', async (t) => {
  const { tarball } = packOnce()
  const tmp = mkdtempSync(join(tmpdir(), 'grudge-readme-'))
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }))
  const app = join(tmp, 'app')
  mkdirSync(app)
  // what `npm init -y` writes, as far as module kind goes: no "type", so .js is CommonJS
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
  const r = installTarball(app, tarball, ['fastify', 'express', '@types/express', '@types/node', 'typescript'])
  t.equal(r.status, 0, `npm install of the tarball succeeds${r.status ? `:\n${r.stderr}` : ''}`)
  if (r.status !== 0) return

  t.test('fastify-esm, as server.mjs', async (t) => {
    writeFileSync(join(app, 'fastify.mjs'), byName.get('fastify-esm')!.code)
    const origin = await start(t, app, 'fastify.mjs')
    await limitedAt(t, origin, { burst: 20, rate: 10 })
    const health = await get(origin + '/health')
    t.equal(health.status, 200)
    t.equal(health.headers['ratelimit'], undefined, '/health is not limited')
    const report = await get(origin + '/reports/7')
    t.equal(report.status, 200)
    t.match(String(report.headers['ratelimit-policy']), /;q=5;/, 'the route has its own meter')
    t.equal((await get(origin + '/stats')).status, 200)
  })

  t.test('express-esm, as server.mjs', async (t) => {
    writeFileSync(join(app, 'express.mjs'), byName.get('express-esm')!.code)
    const origin = await start(t, app, 'express.mjs')
    // first, while the per-IP budget is whole: a login on top of it lists both policies
    const t0 = performance.now()
    const login = await request(origin + '/login', { method: 'POST' })
    await login.body.text()
    t.equal(login.statusCode, 401, 'the login route answers')
    t.match(String(login.headers['ratelimit-policy']), /"per-ip";q=20;.*"login";q=5;/, 'stacked policies listed')
    const first = await limitedAt(t, origin, { burst: 20, rate: 10, spent: 1, t0 })
    t.equal(first.headers['x-ratelimit-limit'], '20', 'legacyHeaders: true adds X-RateLimit-*')
  })

  t.test('express-cjs, as server.js in a CommonJS package', async (t) => {
    writeFileSync(join(app, 'server.js'), byName.get('express-cjs')!.code)
    const origin = await start(t, app, 'server.js')
    await limitedAt(t, origin, { burst: 20, rate: 10 })
  })

  // the tiers/peek/reset snippets run to the end by themselves (no listen): they must exit 0
  // and print what peek read, a debt of 1 after one request on the free tier (burst 10)
  for (const name of ['fastify-tiers', 'express-tiers']) {
    t.test(`${name}, as a script`, async (t) => {
      writeFileSync(join(app, `${name}.mjs`), byName.get(name)!.code)
      const run = spawnSync(process.execPath, [`${name}.mjs`], {
        cwd: app,
        env: userEnv,
        encoding: 'utf8',
        timeout: 60_000,
      })
      t.equal(run.status, 0, `${name} exits 0${run.status ? `:\n${run.stdout}${run.stderr}` : ''}`)
      t.match(run.stdout, /limit/, 'peek printed the limit policy')
    })
  }

  t.test('the tsconfig resolves the subpath exports', async (t) => {
    const dir = join(app, 'ts')
    mkdirSync(dir)
    writeFileSync(join(dir, 'tsconfig.json'), byName.get('tsconfig')!.code)
    writeFileSync(
      join(dir, 'index.ts'),
      `import grudge from 'grudge/fastify'\nimport { grudge as middleware } from 'grudge/express'\n` +
        `import { FakeClock } from 'grudge/testing'\nimport { Sketch } from 'grudge'\n` +
        `const n: number = new Sketch({ clock: new FakeClock() }).estimate('k')\n` +
        `export { grudge, middleware, n }\n`,
    )
    const tsc = join(app, 'node_modules', 'typescript', 'bin', 'tsc')
    const ok = spawnSync(process.execPath, [tsc, '-p', dir, '--noEmit'], { cwd: dir, env: userEnv, encoding: 'utf8' })
    t.equal(ok.status, 0, `tsc accepts the README's tsconfig${ok.status ? `:\n${ok.stdout}${ok.stderr}` : ''}`)
    // the failure the README warns about: classic node resolution does not read "exports"
    const classic = spawnSync(
      process.execPath,
      [tsc, '-p', dir, '--noEmit', '--module', 'commonjs', '--moduleResolution', 'node10'],
      {
        cwd: dir,
        env: userEnv,
        encoding: 'utf8',
      },
    )
    t.match(classic.stdout, /Cannot find module 'grudge\/fastify'/, 'moduleResolution node10 cannot see grudge/fastify')
  })
})
