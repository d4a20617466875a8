import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, posix, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

// The import boundaries of ARCHITECTURE.md as a test: data flows adapter → policy → structure
// → hash, so the core never pulls in a web framework, a Redis client or the file system
// except where that is its job. Imports are read by the TypeScript scanner
// (`ts.preProcessFile`), which sees static imports, `export … from`, `import type`, dynamic
// `import()` and `require()`, and skips comments and strings.

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Every module specifier a source text imports, with its 1-based line. */
function importsOf(text: string): { spec: string; line: number }[] {
  const info = ts.preProcessFile(text, true, true)
  return info.importedFiles.map((f) => ({
    spec: f.fileName,
    line: text.slice(0, f.pos).split('\n').length,
  }))
}

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return out
  }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...sourceFiles(p))
    else if (/\.(c|m)?(t|j)s$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p)
  }
  return out.sort()
}

const bare = (spec: string) => spec.replace(/^node:/, '')
const isFs = (spec: string) => /^(fs|fs\/promises)$/.test(bare(spec))
const isHttp = (spec: string) => /^(http|https|http2)$/.test(bare(spec))
const isFramework = (spec: string) => /^(fastify|fastify-plugin|@fastify\/.*|express|express4|express-.*)$/.test(spec)
const isRedis = (spec: string) => /^(ioredis|redis|@redis\/.*)$/.test(spec)

/** Files under src/bloom whose job is checkpointing to disk. */
const mayUseFs = (rel: string) =>
  rel === 'src/bloom/managed.ts' ||
  rel === 'src/bloom/sharded.ts' ||
  (rel.startsWith('src/bloom/') && /checkpoint|fs/i.test(posix.basename(rel)))

/** The rule an import under src/ breaks, or undefined when it is allowed. */
function violation(rel: string, spec: string): string | undefined {
  if (spec.startsWith('.')) {
    const target = posix.normalize(posix.join(posix.dirname(rel), spec))
    if (!target.startsWith('src/')) return `reaches outside src/ (${target}): the core must not import plugins or tools`
    return undefined
  }
  if (isFramework(spec)) return 'imports a web framework: only plugins/ may'
  if (isHttp(spec)) return 'imports node:http: only plugins/ and examples may'
  if (isRedis(spec) && !rel.startsWith('src/cluster/')) return 'imports a Redis client: only src/cluster/ may'
  if (isFs(spec) && !mayUseFs(rel))
    return 'imports node:fs: only checkpoint code (src/bloom/managed.ts, sharded.ts, *checkpoint*, *fs*) may'
  return undefined
}

t.test('the import scanner sees every kind of import and nothing in comments', async (t) => {
  const text = [
    "import a from 'fastify'",
    "import type { B } from 'ioredis'",
    "export { c } from '../plugins/x.js'",
    "const d = await import('node:fs')",
    "const e = require('express')",
    "// import f from 'node:http'",
    'const g = \'import h from "redis"\'',
  ].join('\n')
  t.same(
    importsOf(text).map((i) => `${i.line}:${i.spec}`),
    ['1:fastify', '2:ioredis', '3:../plugins/x.js', '4:node:fs', '5:express'],
  )
})

t.test('the rules', async (t) => {
  const rows: [string, string, boolean][] = [
    ['src/sketch/sketch.ts', '../errors.js', true],
    ['src/http/index.ts', '../../plugins/fastify.js', false],
    ['src/http/index.ts', 'fastify', false],
    ['src/http/index.ts', '@fastify/rate-limit', false],
    ['src/limit/store.ts', 'express', false],
    ['src/http/headers.ts', 'node:http', false],
    ['src/http/headers.ts', 'http', false],
    ['src/cluster/redis.ts', 'ioredis', true],
    ['src/limit/store.ts', 'ioredis', false],
    ['src/window/window.ts', 'redis', false],
    ['src/bloom/managed.ts', 'node:fs', true],
    ['src/bloom/sharded.ts', 'node:fs/promises', true],
    ['src/bloom/checkpoint.ts', 'fs', true],
    ['src/bloom/bloom-filter.ts', 'node:fs', false],
    ['src/sketch/rotator.ts', 'node:fs', false],
    ['src/cluster/redis.ts', 'node:fs', false],
    ['src/hash/siphash.ts', 'node:crypto', true],
  ]
  for (const [file, spec, ok] of rows) t.equal(violation(file, spec) === undefined, ok, `${file} → ${spec}`)
})

t.test('nothing under src/ crosses a boundary', async (t) => {
  const files = sourceFiles(join(root, 'src'))
  t.ok(files.length > 10, `found the sources (${files.length} files)`)
  const found: string[] = []
  for (const file of files) {
    const rel = relative(root, file).split(sep).join('/')
    for (const { spec, line } of importsOf(readFileSync(file, 'utf8'))) {
      const why = violation(rel, spec)
      if (why) found.push(`${rel}:${line} imports '${spec}': ${why}`)
    }
  }
  t.same(found, [], found.length ? `boundary violations:\n  ${found.join('\n  ')}` : 'no boundary violations')
})
