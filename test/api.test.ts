import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { SNAPSHOT_PATH, entryPoints, snapshot } from '../scripts/api-snapshot.js'

// The public API as a reviewed file: spec/api-snapshot.md lists every exported name with its
// kind and type per entry point. An accidental export, a removal or a changed signature makes
// this test fail with the diff; if the change is meant, `npm run api:update` and commit.

// Entry points whose source has not landed yet. TEMPORARY (issue 9): the coordinator empties
// this list once plugins/fastify.ts and plugins/express.ts are merged; after that a missing
// entry point source fails.
const NOT_YET_LANDED = new Set(['plugins/fastify.ts', 'plugins/express.ts'])

t.test('package.json exports the four documented entry points', async (t) => {
  t.same(
    entryPoints().map((e) => e.specifier),
    ['grudge', 'grudge/testing', 'grudge/fastify', 'grudge/express'],
  )
})

const { text, missing } = snapshot()

for (const entry of entryPoints()) {
  if (entry.exists) continue
  const name = `entry point ${entry.specifier}`
  if (NOT_YET_LANDED.has(entry.source))
    t.test(name, { skip: `${entry.source} does not exist on this branch yet (lands with its adapter issue)` }, () => {})
  else t.fail(`${entry.specifier}: source ${entry.source} named by package.json exports does not exist`)
}

t.test('spec/api-snapshot.md matches the sources', async (t) => {
  t.ok(missing.length < entryPoints().length, 'at least one entry point exists')
  const onDisk = existsSync(SNAPSHOT_PATH) ? readFileSync(SNAPSHOT_PATH, 'utf8') : ''
  // tap prints the diff (found = the sources, wanted = the file) when they differ.
  t.equal(text, onDisk, 'public API matches spec/api-snapshot.md; if the change is meant, run: npm run api:update')
})
