// `npm run bench`: runs every examples/bench/*.bench.ts in its own process, one after
// another (so one benchmark's heap never skews the next), and prints what each prints.
import { readdirSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const dir = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort()
let failed = 0
for (const f of files) {
  console.log(`\n=== ${f} ===`)
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', join(dir, f)], { stdio: 'inherit' })
  if (r.status !== 0) failed++
}
process.exit(failed === 0 ? 0 : 1)
