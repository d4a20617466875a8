import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildSync } from 'esbuild'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'

// A process SIGKILLed at a random instant during back-to-back checkpoints must leave a
// checkpoint that loads and holds every item of the last checkpoint it reported done.
// The child is bundled once with esbuild so each spawn is a plain `node` start (~50 ms).
const ROUNDS = 24

t.test('SIGKILL in the middle of checkpoints leaves a loadable checkpoint, every time', async (t) => {
  const dir = t.testdir()
  const bundle = join(dir, 'child.mjs')
  buildSync({
    entryPoints: [fileURLToPath(new URL('../fixtures/bloom-crash-child.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: bundle,
    logLevel: 'silent',
  })
  const path = join(dir, 'crash.bloom')
  let seed = 12345
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32
  let midWrite = 0
  let lastSaved = 0
  for (let round = 0; round < ROUNDS; round++) {
    const child = spawn(process.execPath, [bundle, path], { stdio: ['ignore', 'pipe', 'inherit'] })
    const killAfter = 1 + Math.floor(rnd() * 3) // checkpoints to let complete first
    const delayMs = rnd() * 12 // then kill at a random instant of the next ones
    let saved = lastSaved
    let buf = ''
    let seen = 0
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString()
      let nl: number
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        const m = /^saved (\d+)$/.exec(line)
        if (m) {
          saved = Number(m[1])
          if (++seen === killAfter) setTimeout(() => child.kill('SIGKILL'), delayMs)
        }
      }
    })
    await exited
    if (readdirSync(dir).some((n) => n.startsWith('crash.bloom.tmp-'))) midWrite++
    t.ok(existsSync(path), `round ${round}: a checkpoint exists`)
    let f: BloomFilter
    try {
      f = BloomFilter.deserialize(readFileSync(path))
    } catch (err) {
      t.fail(`round ${round}: checkpoint does not load: ${(err as Error).message}`)
      return
    }
    t.ok(
      f.addedCount >= saved,
      `round ${round}: holds at least the ${saved} items reported saved (has ${f.addedCount})`,
    )
    let lost = 0
    for (let i = 0; i < saved; i++) if (!f.mightContain(`item-${i}`)) lost++
    t.equal(lost, 0, `round ${round}: no saved item lost`)
    lastSaved = f.addedCount
  }
  // the kills must have hit writes in progress, or this test proves nothing
  t.ok(midWrite > 0, `${midWrite} of ${ROUNDS} kills landed while a temporary file was being written`)
})

t.test("the checkpoint timer is unref'd: a process with an open filter exits by itself", async (t) => {
  const dir = t.testdir()
  const bundle = join(dir, 'idle.mjs')
  buildSync({
    entryPoints: [fileURLToPath(new URL('../fixtures/bloom-idle-child.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: bundle,
    logLevel: 'silent',
  })
  const child = spawn(process.execPath, [bundle, join(dir, 'idle.bloom')], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  // if the 60 000 ms timer held the loop, this would only end by tap's timeout
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
  t.equal(code, 0)
  t.match(out, /timer period 60000/)
  t.notOk(existsSync(join(dir, 'idle.bloom')), 'nothing written without close()')
})
