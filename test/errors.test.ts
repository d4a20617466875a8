import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import {
  ERROR_CODES,
  GrudgeError,
  GrudgeRangeError,
  GrudgeTypeError,
  describeSecret,
  describeValue,
  invalidOption,
} from '../src/errors.js'

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

t.test('rows and declarations say the same, once, under the naming rule', async (t) => {
  const md = readFileSync(new URL('../spec/errors.md', import.meta.url), 'utf8')
  const seen = new Set<string>()
  for (const line of md.split('\n')) {
    const m = /^\| (ERR_GRUDGE_[A-Z0-9_]+) \| (.+?) \| (.+?) \|$/.exec(line)
    if (!m) continue
    const [, code, meaning] = m
    t.notOk(seen.has(code), `${code} has one row`)
    seen.add(code)
    if (code in ERROR_CODES)
      t.equal(meaning, ERROR_CODES[code as keyof typeof ERROR_CODES], `${code}: spec/errors.md meaning = src/errors.ts`)
  }
  for (const code of Object.keys(ERROR_CODES))
    t.match(code, /^ERR_GRUDGE_[A-Z0-9]+(_[A-Z0-9]+)+$/, `${code} reads ERR_GRUDGE_<AREA>_<PROBLEM>`)
})

// A code used in src/ or plugins/ as a string literal ('ERR_GRUDGE_…') must be declared, so a
// typo or a code added without its table row fails here (and not in a user's catch block).
// A prefix ending in `_` (`code.startsWith('ERR_GRUDGE_FORMAT_')`) is not a code.
t.test('every ERR_GRUDGE_ code used in src/ and plugins/ is declared', async (t) => {
  const root = new URL('../', import.meta.url)
  const used = new Map<string, string>()
  const walk = (dir: string) => {
    for (const e of readdirSync(new URL(dir, root), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`
      if (e.isDirectory()) walk(rel)
      else if (/\.(c|m)?ts$/.test(e.name)) {
        const text = readFileSync(new URL(rel, root), 'utf8')
        for (const m of text.matchAll(/['"`](ERR_GRUDGE_[A-Z0-9]+(?:_[A-Z0-9]+)*)['"`]/g))
          if (!used.has(m[1])) used.set(m[1], rel)
      }
    }
  }
  walk('src')
  walk('plugins')
  t.ok(used.size > 5, `found the codes in use (${used.size})`)
  const undeclared = [...used].filter(([code]) => !(code in ERROR_CODES)).map(([code, file]) => `${code} (${file})`)
  t.same(undeclared, [], `codes used but not declared in src/errors.ts: ${undeclared.join(', ') || 'none'}`)
})

t.test('the error classes carry code, name and the standard base class', async (t) => {
  const cause = new Error('inner')
  const rows = [
    [new GrudgeError('ERR_GRUDGE_MERGE_SELF', 'm', { cause }), 'GrudgeError', Error],
    [new GrudgeRangeError('ERR_GRUDGE_VALUE_NOT_FINITE', 'm'), 'GrudgeRangeError', RangeError],
    [new GrudgeTypeError('ERR_GRUDGE_KEY_INVALID', 'm'), 'GrudgeTypeError', TypeError],
  ] as const
  for (const [err, name, base] of rows) {
    t.equal(err.name, name)
    t.ok(err instanceof base, `${name} is a ${base.name}`)
    t.ok(err.code in ERROR_CODES, `${name} has a declared code`)
    t.equal(err.message, 'm')
  }
  t.equal(rows[0][0].cause, cause, 'GrudgeError keeps its cause')
})

t.test('describeValue renders any received value without throwing', async (t) => {
  const rows: [unknown, string][] = [
    ['abc', '"abc"'],
    ['x'.repeat(100), JSON.stringify('x'.repeat(80) + '…')],
    [12n, '12n'],
    [new Uint8Array(3), 'Uint8Array(3)'],
    [[1, 2], 'Array(2)'],
    [null, 'null'],
    [undefined, 'undefined'],
    [{ toString: () => 'boom' }, 'object'],
    [() => 1, 'function'],
    [NaN, 'NaN'],
    [-Infinity, '-Infinity'],
    [true, 'true'],
    [Symbol('s'), 'Symbol(s)'],
  ]
  for (const [value, expected] of rows) t.equal(describeValue(value), expected, expected)
})

t.test('invalidOption throws OPTION_INVALID saying option, expected and received', async (t) => {
  t.throws(() => invalidOption('limit.rate', 'a positive finite number', -1), {
    name: 'GrudgeError',
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: 'option "limit.rate": expected a positive finite number, received -1',
  })
})

t.test('a secret option is described by kind and length, never by its content', async (t) => {
  const rows: [unknown, string][] = [
    ['abc', 'a string of 3 hex digits'],
    ['xyz', 'a string of 3 characters, not all hex digits'],
    ['00ff', 'a string of 4 hex digits'],
    ['', 'an empty string'],
    [12, 'a number'],
    [-1, 'a negative number'],
    [1.5, 'a number that is not a safe integer'],
    [255n, 'a bigint of 8 bits'],
    [new Uint8Array(12), 'Uint8Array(12)'],
    [undefined, 'undefined'],
  ]
  for (const [value, expected] of rows) t.equal(describeSecret(value), expected, expected)
  t.throws(() => invalidOption('seed', '32 hex digits', 's3cr3t-value', { secret: true }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: 'option "seed": expected 32 hex digits, received a string of 12 characters, not all hex digits',
  })
})
