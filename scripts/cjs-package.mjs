// The CommonJS build lives in dist/cjs under a package.json that says so, so that
// `require('grudge')` loads .js files as CommonJS while the root package is ESM.
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
mkdirSync('dist/cjs', { recursive: true })
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n')
// tsc writes files 0644; the `grudge` bin must stay executable in a clone too (npm sets the
// bit only when it installs a package, not for `npx` inside the repository after a rebuild).
for (const bin of ['dist/esm/bin/grudge.js', 'dist/cjs/bin/grudge.js']) if (existsSync(bin)) chmodSync(bin, 0o755)
