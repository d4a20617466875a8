import t from 'tap'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { STANDALONE, benchPlan } from '../../examples/bench/plan.js'

// Every script of examples/bench is reachable from an npm script: a `*.bench.ts` by
// `npm run bench` (examples/bench/run-all.ts), a standalone one by `npm run bench -- <name>`
// (STANDALONE), a package.json `bench:*` script, or another benchmark that imports or spawns
// it. fold-batch-cost.ts and fold-tail-defaults.ts were once in none of these (issue #14).
// Nothing is run here: the files are read as text.
const dir = join(dirname(fileURLToPath(import.meta.url)), '../../examples/bench')
const pkg = JSON.parse(readFileSync(join(dir, '../../package.json'), 'utf8')) as { scripts: Record<string, string> }
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'))
const text = new Map(files.map((f) => [f, readFileSync(join(dir, f), 'utf8')]))

/** How f is reached, or undefined. */
function reachedBy(f: string): string | undefined {
  if (f.endsWith('.bench.ts')) return 'npm run bench'
  if (f === 'run-all.ts' || f === 'plan.ts') return 'npm run bench itself'
  if (STANDALONE[f] !== undefined) return `npm run bench -- ${f.replace(/\.ts$/, '')}`
  const script = Object.entries(pkg.scripts).find(([, cmd]) => cmd.includes(`examples/bench/${f}`))
  if (script !== undefined) return `npm run ${script[0]}`
  const base = f.replace(/\.ts$/, '')
  const by = files.find(
    (g) =>
      g !== f &&
      g !== 'standalone.ts' &&
      new RegExp(`['"]\\./${base}\\.(js|ts)['"]|['"]${base}\\.ts['"]`).test(text.get(g)!),
  )
  return by === undefined ? undefined : `imported or spawned by ${by}`
}

t.test('every examples/bench/*.ts is reachable from an npm script', async (t) => {
  for (const f of files) t.ok(reachedBy(f), `${f}: ${reachedBy(f) ?? 'reached by nothing'}`)
  t.equal(reachedBy('fold-tail-defaults.ts'), 'npm run bench -- fold-tail-defaults')
  t.equal(reachedBy('fold-batch-cost.ts'), 'npm run bench -- fold-batch-cost')
  t.equal(reachedBy('unwired.ts'), undefined, 'a file in none of them is reported')
})

t.test('every standalone entry names a file that exists and is no *.bench.ts', async (t) => {
  for (const f of Object.keys(STANDALONE)) {
    t.ok(existsSync(join(dir, f)), f)
    t.notOk(f.endsWith('.bench.ts'), `${f}: a *.bench.ts runs without its name`)
  }
})

t.test('npm run bench -- <name> runs a standalone benchmark by name, with its own arguments', async (t) => {
  const bench = files.filter((f) => f.endsWith('.bench.ts'))
  const plan = (...argv: string[]) => benchPlan(argv, bench)
  const all = plan()
  t.same(
    typeof all !== 'string' && all.map((p) => p.file),
    bench.sort(),
    'no names: every *.bench.ts, no standalone one',
  )
  t.same(plan('fold-tail'), [{ file: 'fold-tail-defaults.ts', args: [] }])
  t.same(plan('fold'), [
    { file: 'fold-batch-cost.ts', args: [] },
    { file: 'fold-tail-defaults.ts', args: [] },
    { file: 'sync-fold-pause.ts', args: [] },
  ])
  // positional scripts read process.argv[2], [3]: a --quick meant for the others must not reach them
  t.same(plan('fold-tail', 'rotator', '--quick', '--', '3000', '60'), [
    { file: 'fold-tail-defaults.ts', args: ['3000', '60'] },
    { file: 'rotator.bench.ts', args: ['--quick', '3000', '60'] },
  ])
  t.same(plan('sync-store-memory', '--quick'), [{ file: 'sync-store-memory.ts', args: ['--quick'] }])
  t.match(plan('no-such-bench'), /^bench: no benchmark matches no-such-bench; known: .*fold-tail-defaults\.ts/)
})
