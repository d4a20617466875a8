// The regression tests, one module each in test/regressions/ (named for the bug each pins), run
// in this one process in file-name order: each was its own tap file, and the 34 start-ups
// (Node, tap's loader, the transpile of what each imports: ~1.5–2.5 CPU s each) cost more than
// their tests (33 s of own time in all, measured under load on 2026-12-03). The modules register
// their tests on tap's root with `t.test`, which runs them one after another, so no two
// regressions run at once (each module's set-up and teardown sit inside its own `t.test`).
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('./regressions/', import.meta.url))
for (const name of readdirSync(dir).sort()) {
  if (name.endsWith('.ts')) await import(`./regressions/${name.replace(/\.ts$/, '.js')}`)
}
