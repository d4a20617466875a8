// `npm run bench`: runs every examples/bench/*.bench.ts in its own process, one after
// another (so one benchmark's heap never skews the next), and prints what each prints.
// Arguments name the benchmarks to run (a part of the file name: `npm run bench -- decision`);
// those starting with `--` (`--quick`) are passed on to every benchmark run.
import { readdirSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const dir = dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
const only = args.filter((a) => !a.startsWith('--'))
const passed = args.filter((a) => a.startsWith('--'))
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
// Node flags of one benchmark beyond the common ones. The sketch bench compiles on the main
// thread (as test/sketch/alloc.test.ts does), so that its warm-up ends with the optimized
// code the measured runs use: with background compilation its updateAndEstimate rows showed a
// scavenge per run in some runs of the bench and none in others (depending on what V8 had
// compiled and inlined by then), which made its "scav" column unreliable.
const EXTRA_FLAGS: Record<string, string[]> = { 'sketch.bench.ts': ['--no-concurrent-recompilation'] }
let failed = 0
for (const f of files) {
  console.log(`\n=== ${f} ===`)
  const flags = ['--import', 'tsx', '--expose-gc', ...(EXTRA_FLAGS[f] ?? [])]
  const r = spawnSync(process.execPath, [...flags, join(dir, f), ...passed], { stdio: 'inherit' })
  if (r.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)
