import t from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { repoRoot } from './fixtures/shared-data.js'
import { uncoveredChildEnv } from '../fixtures/child-env.js'

// The `grudge` command end to end, as a child process (bin/grudge.ts through tsx).
function grudge(args: string[], input?: Buffer | string) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(repoRoot, 'bin', 'grudge.ts'), ...args], {
    cwd: repoRoot,
    input,
    encoding: 'utf8',
    env: uncoveredChildEnv(), // keeps the child's tsx coverage out of tap's report
  })
  return { code: r.status, stdout: r.stdout, stderr: r.stderr }
}

const dir = mkdtempSync(join(tmpdir(), 'grudge-cli-'))
// 25 requests from one address in the same second and 1 from another: burst 20 → 5 rejected
const lines = [
  ...Array.from({ length: 25 }, () => '192.0.2.1 - - [05/Jan/2026:10:00:00 +0000] "GET /a HTTP/1.1" 200 1 "-" "x"'),
  '192.0.2.2 - - [05/Jan/2026:10:00:00 +0000] "GET /b HTTP/1.1" 200 1 "-" "x"',
  'not a log line',
].join('\n')
const file = join(dir, 'access.log')
writeFileSync(file, lines)
writeFileSync(file + '.gz', gzipSync(lines))

t.test('replay a file, a .gz file and stdin: the same JSON report', async (t) => {
  const runs = [
    grudge(['replay', '--json', file]),
    grudge(['replay', '--json', file + '.gz']),
    grudge(['replay', '--json', '-'], lines),
  ]
  for (const r of runs) {
    t.equal(r.code, 0, r.stderr)
    t.equal(r.stderr, '', 'no progress bar when stderr is not a TTY')
    const rep = JSON.parse(r.stdout)
    t.same(rep.totals, { requests: 26, admitted: 21, rejected: 5 })
    t.same([rep.input.linesRead, rep.input.linesUnparseable], [27, 1])
    t.same(
      rep.throttled.top.map((k: { key: string }) => k.key),
      ['192.0.2.1'],
    )
  }
  t.same(JSON.parse(runs[2].stdout).source, 'stdin')
})

t.test('text report and --html', async (t) => {
  const html = join(dir, 'r.html')
  const r = grudge(['replay', file, '--rate', '1', '--burst', '20', '--html', html])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /rejected\s+5 \(19\.23%\)/)
  t.match(r.stdout, /unparseable\s+1 \(first at line 27\)/)
  t.match(r.stdout, /192\.0\.2\.1\s+5 \[5\]\s+25/)
  const page = readFileSync(html, 'utf8')
  t.match(page, /^<!doctype html>/)
  t.notMatch(page, /<script|src="http|href="http/, 'self-contained: no script, no external asset')
})

t.test('bad options exit 2 with one line naming the flag', async (t) => {
  const rows: [string[], RegExp][] = [
    [['--burst', 'zero'], /^grudge: --burst: expected a number, received "zero"/],
    // parseArgs alone calls a value starting with a dash "ambiguous"
    [['--rate', '-1'], /^grudge: --rate: expected requests per second > 0, or off, received "-1"/],
    // the bound is the one a user can type, not the float tolerance behind it
    [['--burst', '0'], /^grudge: --burst: expected a number ≥ 1 \(a request costs 1\), received 0 /],
    [['--rat', '5'], /^grudge: --rat: unknown option; did you mean --rate\?/],
    [
      ['--key', 'ipp'],
      /^grudge: --key: expected ip \| ip24 \| route \| ip\+route \| ip\+method \| user \| ip\+user, received "ipp"; did you mean ip\?/,
    ],
    [['--half-life', '0'], /^grudge: --half-life: expected a finite number > 0, received 0/],
    [['--nope'], /^grudge: --nope: unknown option; did you mean --top\?/],
    [['--zzzzzzz'], /^grudge: --zzzzzzz: unknown option; known: --format --key/],
  ]
  for (const [args, want] of rows) {
    const r = grudge(['replay', file, ...args])
    t.equal(r.code, 2, args.join(' '))
    t.match(r.stderr, want, args.join(' '))
    t.equal(r.stderr.trimEnd().split('\n').length, 1, `${args.join(' ')}: one line`)
    t.notMatch(r.stderr, /usage:/, 'no usage dump')
  }
  // the same four mistakes on suggest: one line, the flag first, before any missing flag
  const suggestRows: [string[], RegExp][] = [
    [['--rate', '-1'], /^grudge: --rate: expected requests per second per key > 0, received "-1"/],
    [['--burst', '0'], /^grudge: --burst: expected a number ≥ 1 \(a request costs 1; --cost sets it\), received "0"/],
    [['--rat', '5'], /^grudge: --rat: unknown option; did you mean --rate\?/],
    [['--key', 'ipp'], /^grudge: --key: unknown option; known: --hot-keys/],
  ]
  for (const [args, want] of suggestRows) {
    const r = grudge(['suggest', ...args])
    t.equal(r.code, 2, `suggest ${args.join(' ')}`)
    t.match(r.stderr, want, `suggest ${args.join(' ')}`)
    t.equal(r.stderr.trimEnd().split('\n').length, 1, `suggest ${args.join(' ')}: one line`)
  }
  const c = grudge(['replai'])
  t.equal(c.code, 2)
  t.match(c.stderr, /^grudge: unknown command "replai"; did you mean replay\?/)
  const d = grudge(['replay', join(dir, 'missing.log')])
  t.equal(d.code, 2)
  t.match(d.stderr, /^grudge: ENOENT/)
  t.notMatch(d.stderr, /Unhandled/)
})

t.test('suggest prints levels, cellsPerLevel and memory', async (t) => {
  const r = grudge(['suggest', '--hot-keys', '1000', '--fp', '0.001', '--json'])
  t.equal(r.code, 0, r.stderr)
  const s = JSON.parse(r.stdout)
  t.ok(s.levels >= 1 && s.cellsPerLevel > 1 && s.falsePositiveRate <= 0.001)
  t.equal(s.levels, 4, "without --levels or --max-levels: the policies' default 4 levels")
  const m = grudge(['suggest', '--hot-keys', '1000', '--fp', '0.001', '--memory', '8MB', '--max-levels', '8'])
  t.equal(m.code, 0, m.stderr)
  // what new Limiter({ memory: '8MB', levels: 2 }) builds: 2 × 65,536 (the meter and the telemetry inside the budget)
  t.match(m.stdout, /levels\s+2\n\s+cellsPerLevel\s+65536\n\s+memory\s+2\.0 MiB per sketch, 4\.0 MiB for 2 generations/)
  t.match(m.stdout, /as options\s+\{ levels: 2, memory: 8388608 \}/)
  const d = grudge(['suggest', '--hot-keys', '1000', '--fp', '0.001', '--memory', '8MB'])
  // without --max-levels: new Limiter({ memory: '8MB' }) at its 4 levels builds 4 × 32,768
  t.match(d.stdout, /levels\s+4\n\s+cellsPerLevel\s+32768\n/)
  t.match(d.stdout, /as options\s+\{ levels: 4, memory: 8388608 \}/)
  const bad = grudge(['suggest', '--hot-keys', '1000', '--fp', '0.001', '--max-levels', '0'])
  t.equal(bad.code, 2)
  t.match(bad.stderr, /--max-levels: expected an integer in \[1, 64\], received "0"/)
  const tight = grudge(['suggest', '--hot-keys', '100000', '--fp', '1e-9', '--memory', '64KB'])
  t.equal(tight.code, 3, 'exit 3 when the budget cannot reach the target')
  t.match(tight.stdout, /budget is too small/)
})

t.test('--version prints the version of the package.json next to the script', async (t) => {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }
  for (const flag of ['--version', '-v', 'version']) {
    const r = grudge([flag])
    t.equal(r.code, 0, r.stderr)
    t.equal(r.stdout, `${pkg.version}\n`, flag)
  }
})
