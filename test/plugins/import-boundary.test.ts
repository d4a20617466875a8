import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

// Adapters translate, they do not decide: nothing under src/ may import a framework,
// node:http or the adapters themselves.
t.test('src/ imports no fastify, express, node:http or plugins/', async (t) => {
  const root = fileURLToPath(new URL('../../src', import.meta.url))
  const files: string[] = []
  const walk = (d: string) => {
    for (const f of readdirSync(d)) {
      const p = join(d, f)
      if (statSync(p).isDirectory()) walk(p)
      else if (p.endsWith('.ts')) files.push(p)
    }
  }
  walk(root)
  t.ok(files.length > 10)
  const bad =
    /(?:from\s+|import\s*\(\s*|require\s*\(\s*)['"](fastify[^'"]*|express[^'"]*|node:http|http|node:https|https|[./]+\/plugins\/[^'"]*)['"]/
  for (const f of files) {
    const m = bad.exec(readFileSync(f, 'utf8'))
    t.equal(m?.[1], undefined, f)
  }
})
