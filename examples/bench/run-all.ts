// `npm run bench`: runs every examples/bench/*.bench.ts in its own process, one after
// another (so one benchmark's heap never skews the next), and prints what each prints.
// Arguments name the benchmarks to run (a part of the file name: `npm run bench -- decision`);
// those starting with `--` (`--quick`) are passed on to every benchmark run, and everything
// after a second `--` is passed on as it is (`npm run bench -- fold-tail -- 3000 60`).
// The standalone benchmarks of STANDALONE (examples/bench/plan.ts: scripts that need Redis, or
// that an issue asked for once) run only when an argument names them: `npm run bench -- fold-tail`.
import { readdirSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { STANDALONE, benchPlan } from './plan.js'

const dir = dirname(fileURLToPath(import.meta.url))
const plan = benchPlan(
  process.argv.slice(2),
  readdirSync(dir).filter((f) => f.endsWith('.bench.ts')),
)
if (typeof plan === 'string') {
  console.error(plan)
  process.exit(2)
}
// Node flags of one benchmark beyond the common ones. The sketch bench compiles on the main
// thread (as test/sketch/alloc.test.ts does), so that its warm-up ends with the optimized
// code the measured runs use: with background compilation its updateAndEstimate rows showed a
// scavenge per run in some runs of the bench and none in others (depending on what V8 had
// compiled and inlined by then), which made its "scav" column unreliable.
const EXTRA_FLAGS: Record<string, string[]> = { 'sketch.bench.ts': ['--no-concurrent-recompilation'] }
let failed = 0
for (const { file, args } of plan) {
  console.log(`\n=== ${file} ===`)
  const flags = ['--import', 'tsx', '--expose-gc', ...(EXTRA_FLAGS[file] ?? [])]
  const r = spawnSync(process.execPath, [...flags, join(dir, file), ...args], { stdio: 'inherit' })
  if (r.status !== 0) failed++
}
if (!plan.some(({ file }) => STANDALONE[file] !== undefined)) {
  console.log('\nrun by name only (npm run bench -- <name> [-- args]):')
  for (const [f, s] of Object.entries(STANDALONE)) console.log(`  ${f.replace(/\.ts$/, '')}: ${s.about}`)
}
process.exit(failed === 0 ? 0 : 1)
