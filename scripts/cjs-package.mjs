// The CommonJS build lives in dist/cjs under a package.json that says so, so that
// `require('grudge')` loads .js files as CommonJS while the root package is ESM.
import { mkdirSync, writeFileSync } from 'node:fs'
mkdirSync('dist/cjs', { recursive: true })
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n')
