import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { SNAPSHOT_PATH, entryPoints, snapshot } from '../scripts/api-snapshot.js'

// The public API as a reviewed file: spec/api-snapshot.md lists every exported name with its
// kind and type per entry point. An accidental export, a removal or a changed signature makes
// this test fail with the diff; if the change is meant, `npm run api:update` and commit.

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
  t.fail(`${name}: source ${entry.source} named by package.json exports does not exist`)
}

t.test('spec/api-snapshot.md matches the sources', async (t) => {
  t.ok(missing.length < entryPoints().length, 'at least one entry point exists')
  const onDisk = existsSync(SNAPSHOT_PATH) ? readFileSync(SNAPSHOT_PATH, 'utf8') : ''
  // tap prints the diff (found = the sources, wanted = the file) when they differ.
  t.equal(text, onDisk, 'public API matches spec/api-snapshot.md; if the change is meant, run: npm run api:update')
})
