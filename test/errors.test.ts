import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { ERROR_CODES } from '../src/errors.js'

// The error table in spec/errors.md and the declarations in src/errors.ts must agree.
t.test('every declared code has a row in spec/errors.md and every row a declaration', async (t) => {
  const md = readFileSync(new URL('../spec/errors.md', import.meta.url), 'utf8')
  const rows = new Map<string, string>()
  for (const line of md.split('\n')) {
    const m = /^\| (ERR_GRUDGE_[A-Z0-9_]+) \| (.+?) \| (.+?) \|$/.exec(line)
    if (m) rows.set(m[1], m[3])
  }
  const declared = Object.keys(ERROR_CODES)
  for (const code of declared) t.ok(rows.has(code), `${code} has a row in spec/errors.md`)
  for (const code of rows.keys())
    t.ok(declared.includes(code), `${code} in spec/errors.md is declared in src/errors.ts`)
  for (const [code, fix] of rows) t.ok(fix.trim().length > 10, `${code} says how to fix it`)
})

// A code used in src/ or plugins/ as a string literal ('ERR_GRUDGE_…') must be declared, so a
// typo or a code added without its table row fails here (and not in a user's catch block).
t.test('every ERR_GRUDGE_ code used in src/ and plugins/ is declared', async (t) => {
  const root = new URL('../', import.meta.url)
  const used = new Map<string, string>()
  const walk = (dir: string) => {
    let entries
    try {
      entries = readdirSync(new URL(dir, root), { withFileTypes: true })
    } catch {
      return // plugins/ may not exist yet
    }
    for (const e of entries) {
      const rel = `${dir}/${e.name}`
      if (e.isDirectory()) walk(rel)
      else if (/\.(c|m)?ts$/.test(e.name)) {
        const text = readFileSync(new URL(rel, root), 'utf8')
        for (const m of text.matchAll(/['"`](ERR_GRUDGE_[A-Z0-9_]*)['"`]/g)) if (!used.has(m[1])) used.set(m[1], rel)
      }
    }
  }
  walk('src')
  walk('plugins')
  t.ok(used.size > 5, `found the codes in use (${used.size})`)
  const undeclared = [...used].filter(([code]) => !(code in ERROR_CODES)).map(([code, file]) => `${code} (${file})`)
  t.same(undeclared, [], `codes used but not declared in src/errors.ts: ${undeclared.join(', ') || 'none'}`)
})
