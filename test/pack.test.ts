import t from 'tap'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { installTarball, packOnce, root, userEnv as env } from './fixtures/packed.js'

// What users install is what is tested: build, `npm pack`, install the tarball into a fresh
// project, then load every entry point through ESM `import` and CommonJS `require` in child
// processes and use it a little. Offline: only grudge's runtime dependencies (crc-32,
// ipaddr.js, fastify-plugin) are installed, from the npm cache. The build and the pack are
// shared with test/readme-snippets.test.ts (test/fixtures/packed.ts).

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string
  exports: Record<string, unknown>
}

interface Entry {
  specifier: string
  source: string
  /** JS expression over `m` (the loaded module) that must be true */
  check: string
}
const entries: Entry[] = [
  {
    specifier: 'grudge',
    source: 'src/index.ts',
    // SipHash-2-4 paper, Appendix A: key 00..0f, message 00..0e → a129ca6149be45e5.
    // A fresh Sketch without decay returns exactly what was added to a lone key.
    check: `typeof m.Sketch === 'function' && typeof m.GrudgeError === 'function' &&
      m.ERROR_CODES.ERR_GRUDGE_OPTION_INVALID !== undefined &&
      m.sipHash(Uint8Array.from({ length: 16 }, (_, i) => i)).hash(Uint8Array.from({ length: 15 }, (_, i) => i)) === 0xa129ca6149be45e5n &&
      (() => { const s = new m.Sketch({ decay: m.none(), seed: 1 }); s.update('a', 5); return s.estimate('a') === 5 })() &&
      (() => { try { new m.Sketch({ levels: -1 }); return false } catch (e) { return e instanceof m.GrudgeError && e.code === 'ERR_GRUDGE_OPTION_INVALID' } })()`,
  },
  {
    specifier: 'grudge/testing',
    source: 'src/testing/index.ts',
    check: `(() => { const c = new m.FakeClock(10); c.advance(5); return c.now() === 15 })() && typeof m.FakeTicker === 'function'`,
  },
  { specifier: 'grudge/fastify', source: 'plugins/fastify/index.ts', check: `Object.keys(m).length > 0` },
  { specifier: 'grudge/express', source: 'plugins/express/index.ts', check: `Object.keys(m).length > 0` },
]

t.test('the documented entry points are the ones in package.json exports', async (t) => {
  t.same(
    Object.keys(pkg.exports).filter((k) => k !== './package.json'),
    ['.', './testing', './fastify', './express'],
  )
})

const tmp = mkdtempSync(join(tmpdir(), 'grudge-pack-'))
t.teardown(() => rmSync(tmp, { recursive: true, force: true }))

t.test('packed tarball', async (t) => {
  const { tarball, files, manifestBefore } = packOnce()

  t.test('contains the builds and types, and no tests or examples', async (t) => {
    const stray = files.filter((f) => /^(test|examples|scripts|src|plugins|coverage|\.tap)\//.test(f))
    t.same(stray, [], 'no test/, examples/, scripts/ or TypeScript sources in the tarball')
    for (const want of [
      'package.json',
      'dist/cjs/package.json',
      'dist/esm/src/index.js',
      'dist/esm/src/index.d.ts',
      'dist/cjs/src/index.js',
      'dist/cjs/src/index.d.ts',
      'dist/esm/src/testing/index.js',
      'dist/esm/src/testing/index.d.ts',
      'dist/cjs/src/testing/index.js',
      'dist/cjs/src/testing/index.d.ts',
    ])
      t.ok(files.includes(want), `tarball has ${want}`)
    t.ok(
      files.some((f) => f.startsWith('dist/esm/') && f.endsWith('.d.ts')) &&
        files.some((f) => f.startsWith('dist/cjs/') && f.endsWith('.d.ts')),
      'declarations for both builds',
    )
    // stripInternal (tsconfig.build.json) drops every declaration whose docstring says
    // @internal; a tag left in a .d.ts is one that was not attached to a declaration
    const leaked = files
      .filter((f) => f.endsWith('.d.ts'))
      .filter((f) => readFileSync(join(root, f), 'utf8').includes('@internal'))
    t.same(leaked, [], 'no @internal declaration ships in the types')
  })

  t.test('the packed package.json runs nothing on install; ours is put back as it was', async (t) => {
    const packedManifest = spawnSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' })
    t.equal(packedManifest.status, 0, 'tar reads package/package.json')
    const packedPkg = JSON.parse(packedManifest.stdout) as { scripts?: Record<string, string> }
    // the scripts npm runs when a package is installed (npm docs, "scripts": life cycle
    // operation order of npm install); npm 11 warns about any of them in a dependency
    for (const name of ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare'])
      t.equal(packedPkg.scripts?.[name], undefined, `no ${name} script in the tarball`)
    t.same(
      { ...packedPkg, scripts: undefined },
      { ...(JSON.parse(manifestBefore) as object), scripts: undefined },
      'the rest of the manifest is packed unchanged',
    )
    t.equal(readFileSync(join(root, 'package.json'), 'utf8'), manifestBefore, 'package.json is restored byte for byte')
    t.equal(
      typeof (pkg as { scripts?: Record<string, string> }).scripts?.prepare,
      'string',
      'a clone still builds on npm ci',
    )
    t.notOk(existsSync(join(root, '.package.json.prepack')), 'no copy left behind')
  })

  const project = join(tmp, 'consumer')
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
  const r = installTarball(project, tarball, ['fastify', 'express', '@types/express'])
  t.equal(r.status, 0, `npm install of the tarball succeeds${r.status ? `:\n${r.stderr}` : ''}`)
  if (r.status !== 0) return

  t.test('types resolve for ESM and CommonJS consumers (moduleResolution NodeNext)', async (t) => {
    const landed = entries.filter((e) => existsSync(join(root, e.source)))
    const body = (kw: 'import' | 'require') =>
      landed
        .map((e, i) =>
          kw === 'import'
            ? `import * as m${i} from ${JSON.stringify(e.specifier)}\nvoid m${i}\n`
            : `import m${i} = require(${JSON.stringify(e.specifier)})\nvoid m${i}\n`,
        )
        .join('') +
      `import { Sketch } from 'grudge'\nimport { FakeClock } from 'grudge/testing'\n` +
      `const n: number = new Sketch({ clock: new FakeClock() }).estimate('k')\nvoid n\n`
    writeFileSync(join(project, 'types-esm.mts'), body('import'))
    writeFileSync(join(project, 'types-cjs.cts'), body('require'))
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: [],
        },
        files: ['types-esm.mts', 'types-cjs.cts'],
      }),
    )
    // ~17 CPU s (it checks every .d.ts it reaches); it took 171 s by hand under a load average
    // of 16 on 2 cores (2026-12-02), so it gets 300 s (tap gives the whole file 600 s)
    const c = spawnSync(process.execPath, [tsc, '-p', project], {
      cwd: project,
      env,
      encoding: 'utf8',
      timeout: 300_000,
    })
    t.equal(c.status, 0, `tsc accepts both consumers${c.status ? `:\n${c.stdout}${c.stderr}` : ''}`)
  })

  for (const e of entries) {
    t.test(e.specifier, async (t) => {
      t.ok(existsSync(join(root, e.source)), `${e.source} exists`)
      t.ok(files.includes(`dist/esm/${e.source.replace(/\.ts$/, '.js')}`), 'ESM build is packed')
      t.ok(files.includes(`dist/cjs/${e.source.replace(/\.ts$/, '.js')}`), 'CommonJS build is packed')
      const esm = join(project, `check-${e.specifier.replace(/\W/g, '_')}.mjs`)
      writeFileSync(esm, `const m = await import(${JSON.stringify(e.specifier)})\nif (!(${e.check})) process.exit(3)\n`)
      const cjs = join(project, `check-${e.specifier.replace(/\W/g, '_')}.cjs`)
      writeFileSync(
        cjs,
        `const m = require(${JSON.stringify(e.specifier)})\nif (!(${e.check})) process.exit(3)\n` +
          // CommonJS must get the CommonJS build, not the ESM one through require(esm).
          `if (!require.resolve(${JSON.stringify(e.specifier)}).includes('/dist/cjs/')) process.exit(4)\n`,
      )
      for (const [label, file] of [
        ['ESM import', esm],
        ['CommonJS require', cjs],
      ]) {
        const c = spawnSync(process.execPath, [file], { cwd: project, env, encoding: 'utf8', timeout: 30_000 })
        t.equal(c.status, 0, `${label} of ${e.specifier} loads and works${c.stderr ? `:\n${c.stderr}` : ''}`)
      }
    })
  }
})
