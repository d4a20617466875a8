// The package.json that goes into the tarball: without the scripts npm runs when a package is
// installed (`prepare`, `preinstall`, `install`, `postinstall`). `prepare` builds dist/ for
// `npm ci` in a clone; in a user's app it would only draw npm's "install scripts not yet
// covered by allowScripts" warning (npm 11) for a package that has nothing to build there.
//
//   node scripts/pack-manifest.mjs strip     (prepack)  keep a copy, write the stripped file
//   node scripts/pack-manifest.mjs restore   (postpack) put the copy back, byte for byte
//
// npm re-reads package.json after `prepack`, so `prepare` does not run a second build while
// packing, and the tarball holds the stripped file. A pack that fails between the two leaves
// the copy behind: the next `strip` (or `restore`) puts it back first.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const manifest = join(root, 'package.json')
const saved = join(root, '.package.json.prepack')

/** Scripts npm runs on `npm install` of a package: none may ship. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare']

function restore() {
  if (existsSync(saved)) renameSync(saved, manifest) // atomic, as is the write in strip
}

const mode = process.argv[2]
if (mode === 'strip') {
  restore()
  const text = readFileSync(manifest, 'utf8')
  const pkg = JSON.parse(text)
  for (const name of INSTALL_SCRIPTS) delete pkg.scripts?.[name]
  writeFileSync(saved, text)
  // written aside and renamed: a process starting meanwhile (node reads package.json for
  // "type") sees the old file or the new one, never half of one
  const next = join(root, '.package.json.next')
  writeFileSync(next, JSON.stringify(pkg, null, 2) + '\n')
  renameSync(next, manifest)
} else if (mode === 'restore') {
  restore()
} else {
  process.stderr.write('usage: node scripts/pack-manifest.mjs strip|restore\n')
  process.exitCode = 2
}
