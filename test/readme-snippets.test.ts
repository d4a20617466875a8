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
    ['tsconfig', 'fastify-esm', 'express-esm', 'express-cjs'],
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

/** The checks every limited server snippet must pass: fields on an admitted request, then a 429. */
async function limitedAt(t: Test, origin: string, burst: number, spentBefore = 0) {
  const first = await get(origin + '/')
  t.equal(first.status, 200)
  // draft-ietf-httpapi-ratelimit-headers: quota q = burst; remaining r = burst − 1 after one
  t.match(String(first.headers['ratelimit-policy']), new RegExp(`;q=${burst};`), 'RateLimit-Policy states the burst')
  t.match(
    String(first.headers['ratelimit']),
    new RegExp(`;r=${burst - 1 - spentBefore};`),
    'RateLimit: the requests so far spent',
  )
  const statuses: number[] = []
  let denied: Awaited<ReturnType<typeof get>> | undefined
  for (let i = 0; i < burst + 10; i++) {
    const r = await get(origin + '/')
    statuses.push(r.status)
    if (r.status === 429 && denied === undefined) denied = r
  }
  t.ok(denied !== undefined, `a 429 within ${burst + 10} requests at 10/s (${statuses.join(' ')})`)
  t.ok(Number(denied?.headers['retry-after']) >= 1, 'the 429 says when to retry')
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
    await limitedAt(t, origin, 20)
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
    const login = await request(origin + '/login', { method: 'POST' })
    await login.body.text()
    t.equal(login.statusCode, 401, 'the login route answers')
    t.match(String(login.headers['ratelimit-policy']), /"per-ip";q=20;.*"login";q=5;/, 'stacked policies listed')
    const first = await limitedAt(t, origin, 20, 1)
    t.equal(first.headers['x-ratelimit-limit'], '20', 'legacyHeaders: true adds X-RateLimit-*')
  })

  t.test('express-cjs, as server.js in a CommonJS package', async (t) => {
    writeFileSync(join(app, 'server.js'), byName.get('express-cjs')!.code)
    const origin = await start(t, app, 'server.js')
    await limitedAt(t, origin, 20)
  })

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
