import t from 'tap'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ManagedBloomFilter } from '../../src/bloom/managed.js'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'
import { sipHash } from '../../src/hash/hasher.js'
import { FakeTicker } from '../../src/testing/index.js'
import { MANAGED_BLOOM_OPTION_KEYS, type ManagedBloomFilterOptions } from '../../src/bloom/managed.js'
import type { PersistPolicy } from '../../src/bloom/persist.js'
import { typo, unknownOption } from '../unknown-option.js'

const manual = { checkpointIntervalMs: Infinity, checkpointInsertThreshold: Infinity, checkpointOnShutdown: false }

t.test('starts empty without a file, checkpoints on demand, reloads with its seed', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'users.bloom')
  const ticker = new FakeTicker()
  const f = new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual, ticker })
  t.equal(f.addedCount, 0)
  t.equal(ticker.size, 0, 'no timer for an Infinity interval')
  t.equal(await f.checkpoint(), 0, 'nothing unsaved: nothing written')
  t.notOk(existsSync(path))
  for (let i = 0; i < 50; i++) f.add(`u${i}`)
  t.equal(f.unsavedCount, 50)
  t.equal(await f.checkpoint(), 1)
  t.equal(f.unsavedCount, 0)
  t.equal(f.checkpointCount, 1)
  const onDisk = BloomFilter.deserialize(readFileSync(path))
  t.equal(onDisk.addedCount, 50)
  await f.close()
  // no seed given: the file's seed is adopted, so members are still found
  const g = new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual, ticker })
  for (let i = 0; i < 50; i++) if (!t.ok(g.mightContain(`u${i}`))) t.bailout()
  t.equal(g.addedCount, 50)
  t.same(g.filter.seed, f.filter.seed)
  t.equal(g.bitCount, 9586)
  t.equal(g.hashCount, 7)
  t.ok(g.fillRatio() > 0 && g.estimatedFalsePositiveRate() > 0 && g.estimatedCardinality() > 40)
  await g.close()
})

t.test('policy: insert threshold, interval timer, idle writes nothing, close', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'p.bloom')
  const ticker = new FakeTicker()
  const f = new ManagedBloomFilter({
    capacity: 1000,
    errorRate: 0.01,
    path,
    ticker,
    seed: 1,
    policy: { checkpointIntervalMs: 5000, checkpointInsertThreshold: 5, checkpointOnShutdown: true },
  })
  t.same(ticker.periods(), [5000], 'one timer at the interval')
  const steps: Array<{ action: () => void | Promise<void>; expected: number; what: string }> = [
    { action: () => ticker.tick(), expected: 0, what: 'idle tick writes nothing' },
    {
      action: () => {
        for (let i = 0; i < 4; i++) f.add(`a${i}`)
      },
      expected: 0,
      what: '4 inserts: under the threshold',
    },
    { action: () => void f.add('a4'), expected: 1, what: 'the 5th insert triggers a checkpoint' },
    { action: () => ticker.tick(), expected: 1, what: 'tick with nothing unsaved writes nothing' },
    { action: () => void f.add('b0'), expected: 1, what: 'one insert, no tick yet' },
    { action: () => ticker.tick(), expected: 2, what: 'tick with an unsaved insert writes' },
    { action: () => void f.add('b0'), expected: 2, what: 'a duplicate is not unsaved' },
    { action: () => ticker.tick(), expected: 2, what: 'so the next tick writes nothing' },
  ]
  for (const s of steps) {
    await s.action()
    await f.settled()
    t.equal(f.checkpointCount, s.expected, s.what)
  }
  t.equal(
    BloomFilter.deserialize(readFileSync(path)).addedCount,
    6,
    'the duplicate add is counted but not written on its own',
  )
  f.add('c0')
  const closing = f.close()
  t.equal(f.close(), closing, 'close is idempotent')
  await closing
  t.equal(ticker.size, 0, 'timer cancelled')
  t.equal(BloomFilter.deserialize(readFileSync(path)).addedCount, 8, 'checkpoint on shutdown')
  t.throws(() => f.add('late'), { code: 'ERR_GRUDGE_BLOOM_CLOSED' })
  await t.rejects(f.checkpoint(), { code: 'ERR_GRUDGE_BLOOM_CLOSED' })
  t.ok(f.mightContain('c0'), 'still answers after close')

  const path2 = join(dir, 'noshutdown.bloom')
  const g = new ManagedBloomFilter({ capacity: 10, errorRate: 0.1, path: path2, ticker, policy: manual })
  g.add('x')
  await g.close()
  t.notOk(existsSync(path2), 'checkpointOnShutdown: false writes nothing on close')
})

t.test('inserts made during a checkpoint stay unsaved for the next one', async (t) => {
  const path = join(t.testdir(), 'd.bloom')
  const f = new ManagedBloomFilter({
    capacity: 100_000,
    errorRate: 0.01,
    path,
    policy: manual,
    writeChunkBytes: 4096,
    seed: 2,
  })
  for (let i = 0; i < 100; i++) f.add(`k${i}`)
  const p = f.checkpoint()
  await new Promise((r) => setImmediate(r)) // the snapshot was taken in a microtask before this
  f.add('during')
  t.ok(f.checkpointing)
  t.equal(await p, 1)
  t.equal(f.unsavedCount, 1)
  t.equal(BloomFilter.deserialize(readFileSync(path)).addedCount, 100, 'addedCount of the snapshot')
  t.equal(await f.checkpoint(), 1)
  t.equal(f.unsavedCount, 0)
  await f.close()
})

t.test('policy options are parsed once and bad values named', async (t) => {
  const path = join(t.testdir(), 'o.bloom')
  const rows: Array<[string, object]> = [
    ['policy.checkpointIntervalMs', { policy: { checkpointIntervalMs: 0 } }],
    ['policy.checkpointIntervalMs', { policy: { checkpointIntervalMs: NaN } }],
    ['policy.checkpointInsertThreshold', { policy: { checkpointInsertThreshold: 0 } }],
    ['policy.checkpointInsertThreshold', { policy: { checkpointInsertThreshold: 1.5 } }],
    ['policy.checkpointOnShutdown', { policy: { checkpointOnShutdown: 'yes' } }],
    ['onBadCheckpoint', { onBadCheckpoint: 'delete' }],
    ['writeChunkBytes', { writeChunkBytes: 10 }],
    ['ticker', { ticker: {} }],
    ['path', { path: '' }],
    ['capacity', { capacity: 0 }],
    ['errorRate', { errorRate: 2 }],
  ]
  for (const [name, over] of rows) {
    t.throws(
      () => new ManagedBloomFilter({ capacity: 10, errorRate: 0.1, path, ...over }),
      { code: 'ERR_GRUDGE_OPTION_INVALID', message: new RegExp(`"${name.replace('.', '\\.')}"`) },
      name,
    )
  }
  t.ok(Object.isFrozen(new ManagedBloomFilter({ capacity: 10, errorRate: 0.1, path, policy: manual }).policy))
})

t.test('mismatched parameters or a corrupt file: coded error and the file untouched', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'm.bloom')
  const f = new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual, seed: 5 })
  f.add('kept')
  await f.checkpoint()
  await f.close()
  const original = readFileSync(path)
  const mtime = statSync(path).mtimeMs
  const untouched = () => readFileSync(path).equals(original) && statSync(path).mtimeMs === mtime
  const rows: Array<[string, object]> = [
    ['capacity', { capacity: 2000 }],
    ['errorRate', { errorRate: 0.001 }],
    ['seed', { seed: 6 }],
    ['hasher', { hasher: sipHash(5) }],
  ]
  for (const [what, over] of rows) {
    t.throws(
      () => new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual, ...over }),
      { code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH' },
      what,
    )
    t.ok(untouched(), `file untouched after ${what}`)
  }
  const corrupt = new Uint8Array(original)
  corrupt[corrupt.length - 10] ^= 0x40
  writeFileSync(path, corrupt)
  t.throws(() => new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual }), {
    code: 'ERR_GRUDGE_FORMAT_CHECKSUM',
    message: /m\.bloom/,
  })
  t.ok(readFileSync(path).equals(Buffer.from(corrupt)), 'corrupt file untouched')
  writeFileSync(path, original.subarray(0, 50))
  t.throws(() => new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual }), {
    code: 'ERR_GRUDGE_FORMAT_TRUNCATED',
  })

  // explicit opt-in: start empty and move the bad file aside, never delete it
  const g = new ManagedBloomFilter({
    capacity: 1000,
    errorRate: 0.01,
    path,
    policy: manual,
    onBadCheckpoint: 'start-empty',
  })
  t.equal(g.addedCount, 0)
  t.notOk(existsSync(path), 'the bad file is no longer at the path')
  t.ok(g.movedAside !== null && /m\.bloom\.bad-\d+$/.test(g.movedAside), `moved to ${g.movedAside}`)
  t.ok(readFileSync(g.movedAside!).equals(original.subarray(0, 50)), 'moved, bytes intact')
  await g.close()
  // mismatch under start-empty moves aside too
  writeFileSync(path, original)
  const h = new ManagedBloomFilter({
    capacity: 5000,
    errorRate: 0.01,
    path,
    policy: manual,
    onBadCheckpoint: 'start-empty',
  })
  t.equal(h.addedCount, 0)
  t.ok(h.movedAside !== null && readFileSync(h.movedAside).equals(original))
  t.equal(readdirSync(dir).filter((n) => n.includes('.bad-')).length, 2, 'both bad files kept')
  await h.close()
})

t.test('stale temp files are removed on open; write failures are coded and keep inserts unsaved', async (t) => {
  const dir = t.testdir({ 's.bloom.tmp-123-4': 'partial', 'other.tmp-1-1': 'not ours' })
  const f = new ManagedBloomFilter({ capacity: 10, errorRate: 0.1, path: join(dir, 's.bloom'), policy: manual })
  t.same(readdirSync(dir).sort(), ['other.tmp-1-1'])
  await f.close()
  const errors: Error[] = []
  const g = new ManagedBloomFilter({
    capacity: 10,
    errorRate: 0.1,
    path: join(dir, 'missing-dir', 'x.bloom'),
    policy: { checkpointIntervalMs: Infinity, checkpointInsertThreshold: 1, checkpointOnShutdown: false },
    onError: (e) => errors.push(e),
  })
  g.add('a')
  await g.settled()
  t.equal(errors.length, 1, 'a background failure goes to onError')
  t.equal((errors[0] as { code?: string }).code, 'ERR_GRUDGE_BLOOM_IO')
  await t.rejects(g.checkpoint(), { code: 'ERR_GRUDGE_BLOOM_IO' })
  t.equal(g.unsavedCount, 1, 'still unsaved')
  await g.close()
})

t.test('a failing background checkpoint is retried every threshold inserts, not on every insert', async (t) => {
  const dir = t.testdir()
  const errors: Error[] = []
  const f = new ManagedBloomFilter({
    capacity: 1000,
    errorRate: 0.01,
    seed: 9,
    path: join(dir, 'later', 'r.bloom'),
    policy: { checkpointIntervalMs: Infinity, checkpointInsertThreshold: 5, checkpointOnShutdown: false },
    onError: (e) => errors.push(e),
  })
  // one insert per request, each awaited: a retry per insert would write (and fail) 26 times
  for (let i = 0; i < 30; i++) {
    if (!t.ok(f.add(`r${i}`))) t.bailout()
    await f.settled()
  }
  t.equal(errors.length, 6, 'tried at 5, 10, 15, 20, 25 and 30 unsaved inserts')
  t.equal(f.unsavedCount, 30)
  mkdirSync(join(dir, 'later'))
  for (let i = 30; i < 35; i++) {
    f.add(`r${i}`)
    await f.settled()
  }
  t.equal(errors.length, 6)
  t.equal(f.checkpointCount, 1, 'the next retry succeeds')
  t.equal(f.unsavedCount, 0)
  for (let i = 35; i < 40; i++) f.add(`r${i}`)
  await f.settled()
  t.equal(f.checkpointCount, 2, 'after a success the threshold is the policy one again')
  await f.close()
})

t.test('each mismatched field is named: same bits but other hashes, other hasher, other seed', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'f.bloom')
  // 1000 items at 0.01: 9586 bits and 7 hashes; files that differ in exactly one field
  const rows: Array<[string, BloomFilter, object]> = [
    ['hashes', BloomFilter.bySize({ bits: 9586, hashes: 6, seed: 5 }), { seed: 5 }],
    ['hasher id', BloomFilter.bySize({ bits: 9586, hashes: 7, hasher: sipHash(5) }), { seed: 5 }],
    ['seed', BloomFilter.bySize({ bits: 9586, hashes: 7, seed: 6 }), { seed: 5 }],
    ['bits', BloomFilter.bySize({ bits: 9587, hashes: 7, seed: 5 }), { seed: 5 }],
  ]
  for (const [field, file, over] of rows) {
    const bytes = file.serialize()
    writeFileSync(path, bytes)
    t.throws(
      () => new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual, ...over }),
      { code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH', message: new RegExp(`: ${field} expected`) },
      field,
    )
    t.ok(readFileSync(path).equals(bytes), `file untouched after a ${field} mismatch`)
  }
})

t.test(
  'an unknown option or policy field throws naming its path, before any file is touched; every option passes',
  async (t) => {
    const dir = t.testdir()
    const path = join(dir, 'users.bloom')
    const ticker = new FakeTicker()
    t.throws(
      () =>
        new ManagedBloomFilter(
          typo<ManagedBloomFilterOptions>({ capacity: 10, errorRate: 0.01, path, onEror: () => {} }),
        ),
      unknownOption('onEror', 'onError'),
    )
    t.throws(
      () =>
        new ManagedBloomFilter({
          capacity: 10,
          errorRate: 0.01,
          path,
          policy: typo<Partial<PersistPolicy>>({ checkpointIntervalMS: 10 }),
        }),
      unknownOption('policy.checkpointIntervalMS', 'checkpointIntervalMs'),
    )
    t.same(readdirSync(dir), [], 'nothing written')
    const policy: Required<PersistPolicy> = { ...manual }
    const all: Required<ManagedBloomFilterOptions> = {
      capacity: 10,
      errorRate: 0.01,
      path,
      hasher: sipHash(),
      seed: 9,
      policy,
      ticker,
      onError: () => {},
      onBadCheckpoint: 'start-empty',
      writeChunkBytes: 4096,
    }
    t.same(Object.keys(all).sort(), [...MANAGED_BLOOM_OPTION_KEYS].sort(), 'the test names every option')
    await new ManagedBloomFilter(all).close()
  },
)
