import t from 'tap'
import { readFileSync } from 'node:fs'
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
