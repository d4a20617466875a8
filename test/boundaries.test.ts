import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, posix, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

// The layering of ARCHITECTURE.md as a test. Data flows one way:
//
//   hash → structures (sketch, bloom, window) → limit → http → cli (and plugins/, outside src/)
//
// with a floor everyone may import (src/clock.ts, src/errors.ts, src/options.ts, src/format/),
// src/cluster beside the structures (it implements the store interface of src/limit/store.ts
// over the sketches and is reached only through the root barrel), and src/testing re-exporting
// clock things only. Externally, the core never pulls in a web framework or node:http, only
// checkpoint code touches node:fs and only src/cluster/ a Redis client.
//
// Imports are read by the TypeScript scanner (`ts.preProcessFile`), which sees static imports,
// `export … from`, `import type`, dynamic `import()` and `require()`, and skips comments and
// strings. A type-only import counts: a type in the wrong layer is a file in the wrong place.

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
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    if (e.isDirectory()) out.push(...sourceFiles(p))
    else if (/\.(c|m)?(t|j)s$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(p)
  }
  return out.sort()
}

// ---- external imports ----

const bare = (spec: string) => spec.replace(/^node:/, '')
const isFs = (spec: string) => /^(fs|fs\/promises)$/.test(bare(spec))
const isHttp = (spec: string) => /^(http|https|http2)$/.test(bare(spec))
const isFramework = (spec: string) => /^(fastify|fastify-plugin|@fastify\/.*|express|express4|express-.*)$/.test(spec)
const isRedis = (spec: string) => /^(ioredis|redis|@redis\/.*)$/.test(spec)
/** Checkpoint code: the files of src/bloom/ whose name says they checkpoint to disk. */
const isCheckpointCode = (rel: string) => rel.startsWith('src/bloom/') && /checkpoint/.test(posix.basename(rel))

// ---- internal layers ----

/** The layer of a file under src/. */
type Layer =
  'floor' | 'hash' | 'sketch' | 'bloom' | 'window' | 'limit' | 'http' | 'cli' | 'cluster' | 'testing' | 'barrel'

const FLOOR_FILES = new Set(['src/clock.ts', 'src/errors.ts', 'src/options.ts'])
const STRUCTURES = new Set<Layer>(['sketch', 'bloom', 'window'])
/** Rank in the one-way flow; a file may import only layers of a lower rank (or its own). */
const RANK: Partial<Record<Layer, number>> = {
  floor: 0,
  hash: 1,
  sketch: 2,
  bloom: 2,
  window: 2,
  limit: 3,
  http: 4,
  cli: 5,
}
/** What src/cluster may reach in src/limit: the store interface it implements. */
const STORE_INTERFACE = 'src/limit/store.ts'

function layerOf(rel: string): Layer | undefined {
  if (rel === 'src/index.ts') return 'barrel'
  if (FLOOR_FILES.has(rel) || rel.startsWith('src/format/')) return 'floor'
  const m = /^src\/([^/]+)\//.exec(rel)
  const dir = m?.[1] as Layer | undefined
  return dir !== undefined && (dir in RANK || dir === 'cluster' || dir === 'testing') && dir !== 'floor'
    ? dir
    : undefined
}

/** The source file a relative specifier names (`.js` written for the `.ts` file, NodeNext style). */
function targetOf(rel: string, spec: string): string {
  return posix.normalize(posix.join(posix.dirname(rel), spec)).replace(/\.js$/, '.ts')
}

/** Why an import from `rel` (under src/) to `target` (under src/) breaks the layering, or undefined. */
function layerViolation(rel: string, target: string): string | undefined {
  const from = layerOf(rel)
  const to = layerOf(target)
  if (from === undefined) return `${rel} is in no layer of ARCHITECTURE.md`
  if (to === undefined) return `${target} is in no layer of ARCHITECTURE.md`
  if (to === 'barrel') return 'imports the root barrel: inside src/ import the file that holds the name'
  if (from === 'testing')
    return target === 'src/clock.ts' ? undefined : 'src/testing only re-exports clock things (src/clock.ts)'
  if (to === 'testing') return 'imports src/testing: production code takes its manual clock from src/clock.ts'
  if (from === 'barrel') return to === 'cli' ? 'the root barrel does not export the CLI' : undefined
  if (from === to) return undefined
  if (to === 'cluster') return 'imports src/cluster: a Redis store reaches the core only as a store option'
  if (from === 'cluster') {
    if (to === 'floor' || to === 'hash' || to === 'sketch') return undefined
    if (target === STORE_INTERFACE) return undefined
    return `src/cluster speaks to the core only through ${STORE_INTERFACE} and the sketches`
  }
  const a = RANK[from]!
  const b = RANK[to]!
  if (STRUCTURES.has(from) && STRUCTURES.has(to)) return `the structures do not import each other (${from} → ${to})`
  if (b >= a) return `data flows hash → structures → limit → http → cli: ${from} must not import ${to}`
  return undefined
}

/** The rule an import under src/ breaks, or undefined when it is allowed. */
function violation(rel: string, spec: string): string | undefined {
  if (spec.startsWith('.')) {
    const target = targetOf(rel, spec)
    if (!target.startsWith('src/')) return `reaches outside src/ (${target}): the core must not import plugins or tools`
    return layerViolation(rel, target)
  }
  if (isFramework(spec)) return 'imports a web framework: only plugins/ may'
  if (isHttp(spec)) return 'imports node:http: only plugins/ and examples may'
  if (isRedis(spec) && !rel.startsWith('src/cluster/')) return 'imports a Redis client: only src/cluster/ may'
  if (isFs(spec) && !isCheckpointCode(rel)) return 'imports node:fs: only checkpoint code (src/bloom/*checkpoint*) may'
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
  const rows: [file: string, spec: string, allowed: boolean][] = [
    // external
    ['src/http/index.ts', '../../plugins/fastify/index.js', false],
    ['src/cli/replay.ts', '../../bin/grudge.js', false],
    ['src/http/index.ts', 'fastify', false],
    ['src/http/index.ts', '@fastify/rate-limit', false],
    ['src/limit/store.ts', 'express', false],
    ['src/http/headers.ts', 'node:http', false],
    ['src/http/headers.ts', 'http', false],
    ['src/cluster/client.ts', 'ioredis', true],
    ['src/limit/store.ts', 'ioredis', false],
    ['src/window/window.ts', 'redis', false],
    ['src/bloom/checkpoint-file.ts', 'node:fs', true],
    ['src/bloom/checkpoint-file.ts', 'node:fs/promises', true],
    ['src/bloom/managed.ts', 'node:fs', false],
    ['src/bloom/bloom-filter.ts', 'fs', false],
    ['src/sketch/rotator.ts', 'node:fs', false],
    ['src/cluster/redis-store.ts', 'node:fs', false],
    ['src/cli/feed.ts', 'node:zlib', true],
    ['src/hash/siphash.ts', 'node:crypto', true],
    // the floor: everyone may import it; it imports only itself
    ['src/sketch/sketch.ts', '../errors.js', true],
    ['src/hash/hasher.ts', '../errors.js', true],
    ['src/window/window.ts', '../format/frame.js', true],
    ['src/cli/replay.ts', '../clock.js', true],
    ['src/format/frame.ts', '../errors.js', true],
    ['src/clock.ts', './errors.js', true],
    ['src/options.ts', './hash/hasher.js', false],
    ['src/format/frame.ts', '../sketch/shape.js', false],
    // one way: hash → structures → limit → http → cli
    ['src/hash/murmur3.ts', './siphash.js', true],
    ['src/sketch/sketch.ts', '../hash/indexes.js', true],
    ['src/hash/hasher.ts', '../sketch/sketch.js', false],
    ['src/bloom/bloom-filter.ts', '../window/window.js', false],
    ['src/window/window.ts', '../sketch/sketch.js', false],
    ['src/limit/telemetry.ts', '../window/hyperloglog.js', true],
    ['src/limit/debt-meter.ts', '../sketch/rotator.js', true],
    ['src/sketch/rotator.ts', '../limit/store.js', false],
    ['src/limit/decision.ts', '../http/headers.js', false],
    ['src/http/headers.ts', '../limit/decision.js', true],
    ['src/http/options.ts', '../cli/args.js', false],
    ['src/cli/replay.ts', '../http/client-key.js', true],
    ['src/cli/replay.ts', '../limit/abuse-score.js', true],
    ['src/cli/distinct.ts', '../window/hyperloglog.js', true],
    // src/cluster beside the structures
    ['src/cluster/redis-store.ts', '../limit/store.js', true],
    ['src/cluster/sync-store.ts', '../sketch/sketch.js', true],
    ['src/cluster/fleet-hash.ts', '../hash/hasher.js', true],
    ['src/cluster/exact-store.ts', '../limit/limiter.js', false],
    ['src/cluster/sync-store.ts', '../window/window.js', false],
    ['src/cluster/sync-store.ts', '../http/headers.js', false],
    ['src/limit/store.ts', '../cluster/redis-store.js', false],
    ['src/sketch/rotator.ts', '../cluster/index.js', false],
    ['src/cli/replay.ts', '../cluster/index.js', false],
    ['src/index.ts', './cluster/index.js', true],
    // src/testing re-exports clock things; nobody else imports it
    ['src/testing/index.ts', '../clock.js', true],
    ['src/testing/index.ts', '../sketch/sketch.js', false],
    ['src/cli/replay.ts', '../testing/index.js', false],
    ['src/sketch/rotator.ts', '../testing/index.js', false],
    // the root barrel imports the layers (not the CLI); nothing imports the barrel
    ['src/index.ts', './sketch/index.js', true],
    ['src/index.ts', './http/index.js', true],
    ['src/index.ts', './cli/replay.js', false],
    ['src/limit/limiter.ts', '../index.js', false],
    // a directory ARCHITECTURE.md does not name
    ['src/misc/util.ts', '../errors.js', false],
  ]
  for (const [file, spec, ok] of rows) {
    const why = violation(file, spec)
    t.equal(why === undefined, ok, `${file} → ${spec}${why === undefined ? '' : `: ${why}`}`)
  }
})

t.test('nothing under src/ crosses a boundary', async (t) => {
  const files = sourceFiles(join(root, 'src'))
  t.ok(files.length > 10, `found the sources (${files.length} files)`)
  const found: string[] = []
  for (const file of files) {
    const rel = relative(root, file).split(sep).join('/')
    for (const { spec, line } of importsOf(readFileSync(file, 'utf8'))) {
      const why = violation(rel, spec)
      if (why === undefined) continue
      found.push(`${rel}:${line} imports '${spec}': ${why}`)
    }
  }
  t.same(found, [], found.length ? `boundary violations:\n  ${found.join('\n  ')}` : 'no boundary violations')
})
