import t from 'tap'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { ShardedBloomFilter, shardOf, shardFileName, MANIFEST_FILE } from '../../src/bloom/sharded.js'
import { bloomOptimalBits } from '../../src/bloom/sizing.js'
import { FakeTicker } from '../../src/testing/index.js'
import { sipHash } from '../../src/hash/hasher.js'
import { FAMILY, writeFrame } from '../../src/format/frame.js'
import { SHARDED_BLOOM_OPTION_KEYS, type ShardedBloomFilterOptions } from '../../src/bloom/sharded.js'
import { typo, unknownOption } from '../unknown-option.js'

const manual = { checkpointIntervalMs: Infinity, checkpointInsertThreshold: Infinity, checkpointOnShutdown: false }

/** An item that lands in shard `s`. */
function itemIn(f: ShardedBloomFilter, s: number, tag = ''): string {
  for (let i = 0; ; i++) if (f.shardIndexOf(`${tag}probe-${i}`) === s) return `${tag}probe-${i}`
}

t.test('a checkpoint rewrites only the dirty shards', async (t) => {
  const dir = join(t.testdir(), 'ips')
  const f = new ShardedBloomFilter({ capacity: 8000, errorRate: 0.01, dir, shardCount: 8, policy: manual, seed: 1 })
  t.ok(existsSync(join(dir, MANIFEST_FILE)), 'manifest written at creation')
  t.equal(f.dirtyCount, 0)
  f.add(itemIn(f, 3))
  t.equal(f.dirtyCount, 1)
  t.equal(await f.checkpoint(), 1, 'one insert into 8 shards: exactly 1 file written')
  t.equal(f.dirtyCount, 0)
  t.same(readdirSync(dir).sort(), [MANIFEST_FILE, shardFileName(3)])

  // fill every shard, checkpoint, then touch 2: only those 2 files are replaced
  for (let s = 0; s < 8; s++) f.add(itemIn(f, s, 'all-'))
  t.equal(await f.checkpoint(), 8)
  const inode = (s: number) => statSync(join(dir, shardFileName(s))).ino
  const before = Array.from({ length: 8 }, (_, s) => inode(s))
  f.add(itemIn(f, 1, 'x-'))
  f.add(itemIn(f, 6, 'x-'))
  f.add(itemIn(f, 6, 'y-'))
  t.equal(f.dirtyCount, 2)
  t.equal(await f.checkpoint(), 2)
  const after = Array.from({ length: 8 }, (_, s) => inode(s))
  t.same(
    after.map((ino, s) => ino !== before[s]),
    [false, true, false, false, false, false, true, false],
    'only shards 1 and 6 were replaced',
  )
  t.equal(await f.checkpoint(), 0, 'nothing dirty: nothing written')
  await f.close()

  const g = new ShardedBloomFilter({ capacity: 8000, errorRate: 0.01, dir, shardCount: 8, policy: manual })
  t.equal(g.addedCount, f.addedCount)
  for (let s = 0; s < 8; s++) t.ok(g.mightContain(itemIn(f, s, 'all-')))
  t.ok(g.mightContain(itemIn(f, 6, 'y-')))
  t.equal(g.bitCount, 8 * bloomOptimalBits(1000, 0.01))
  await g.close()
})

t.test('a directory written with other parameters is refused', async (t) => {
  const root = t.testdir()
  const dir = join(root, 's')
  const f = new ShardedBloomFilter({ capacity: 8000, errorRate: 0.01, dir, shardCount: 8, policy: manual, seed: 2 })
  for (let i = 0; i < 100; i++) f.add(`m${i}`)
  await f.checkpoint()
  await f.close()
  const snapshot = () =>
    readdirSync(dir)
      .sort()
      .map((n) => [n, readFileSync(join(dir, n)).toString('hex')])
  const before = snapshot()
  const rows: Array<[string, object]> = [
    ['shardCount', { shardCount: 16 }],
    ['shardCount', { shardCount: 4 }],
    ['bits per shard', { capacity: 16000 }],
    ['bits per shard', { errorRate: 0.001 }],
    ['seed', { seed: 3 }],
    ['hasher id', { hasher: sipHash(2) }],
  ]
  for (const [field, over] of rows) {
    t.throws(
      () => new ShardedBloomFilter({ capacity: 8000, errorRate: 0.01, dir, shardCount: 8, policy: manual, ...over }),
      { code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH', message: new RegExp(`^shard directory "[^"]*": ${field} expected`) },
      field,
    )
  }
  t.same(snapshot(), before, 'nothing in the directory changed')

  // shard files without a manifest, and stray shards beyond the count
  const orphan = join(root, 'orphan')
  const o = new ShardedBloomFilter({ capacity: 100, errorRate: 0.01, dir: orphan, shardCount: 2, policy: manual })
  o.add('a')
  o.add('b')
  o.add('c')
  await o.checkpoint()
  await o.close()
  renameSync(join(orphan, MANIFEST_FILE), join(root, 'saved-manifest'))
  t.throws(
    () => new ShardedBloomFilter({ capacity: 100, errorRate: 0.01, dir: orphan, shardCount: 2, policy: manual }),
    { code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH', message: /manifest/ },
  )
  renameSync(join(root, 'saved-manifest'), join(orphan, MANIFEST_FILE))
  writeFileSync(join(orphan, shardFileName(7)), 'stray')
  t.throws(
    () => new ShardedBloomFilter({ capacity: 100, errorRate: 0.01, dir: orphan, shardCount: 2, policy: manual }),
    { code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH', message: /shard files/ },
  )
})

t.test('a corrupt shard or manifest: coded error, or the shard moved aside on request', async (t) => {
  const dir = join(t.testdir(), 'c')
  const f = new ShardedBloomFilter({ capacity: 400, errorRate: 0.01, dir, shardCount: 4, policy: manual, seed: 4 })
  for (let s = 0; s < 4; s++) f.add(itemIn(f, s))
  await f.checkpoint()
  await f.close()
  const shard2 = join(dir, shardFileName(2))
  const bytes = readFileSync(shard2)
  bytes[bytes.length - 7] ^= 1
  writeFileSync(shard2, bytes)
  t.throws(() => new ShardedBloomFilter({ capacity: 400, errorRate: 0.01, dir, shardCount: 4, policy: manual }), {
    code: 'ERR_GRUDGE_FORMAT_CHECKSUM',
    message: /shard-00002/,
  })
  t.ok(readFileSync(shard2).equals(bytes), 'untouched')
  const g = new ShardedBloomFilter({
    capacity: 400,
    errorRate: 0.01,
    dir,
    shardCount: 4,
    policy: manual,
    onBadCheckpoint: 'start-empty',
  })
  t.equal(g.movedAside.length, 1)
  t.match(g.movedAside[0], /shard-00002\.bloom\.bad-\d+$/)
  t.ok(readFileSync(g.movedAside[0]).equals(bytes), 'moved aside intact')
  t.notOk(existsSync(shard2), 'no longer at the shard path, so no checkpoint can overwrite it')
  t.ok(g.mightContain(itemIn(g, 0)), 'other shards loaded')
  t.equal(g.shards[2].addedCount, 0, 'the bad shard starts empty')
  await g.close()
  const manifest = join(dir, MANIFEST_FILE)
  const m = readFileSync(manifest)
  m[20] ^= 0xff
  writeFileSync(manifest, m)
  t.throws(() => new ShardedBloomFilter({ capacity: 400, errorRate: 0.01, dir, shardCount: 4, policy: manual }), {
    code: 'ERR_GRUDGE_FORMAT_CHECKSUM',
    message: /manifest/,
  })
})

t.test('policy across shards: threshold counts all shards, timer, close', async (t) => {
  const dir = join(t.testdir(), 'p')
  const ticker = new FakeTicker()
  const f = new ShardedBloomFilter({
    capacity: 1000,
    errorRate: 0.01,
    dir,
    shardCount: 4,
    ticker,
    policy: { checkpointIntervalMs: 1000, checkpointInsertThreshold: 10, checkpointOnShutdown: true },
  })
  for (let i = 0; i < 9; i++) f.add(`t${i}`)
  await f.settled()
  t.equal(f.checkpointCount, 0)
  f.add('t9')
  await f.settled()
  t.equal(f.checkpointCount, 1)
  t.equal(f.dirtyCount, 0)
  ticker.tick()
  await f.settled()
  t.equal(f.checkpointCount, 1, 'idle tick writes nothing')
  f.add('late')
  await f.close()
  t.equal(f.checkpointCount, 2, 'flushed on close')
  t.equal(ticker.size, 0)
  t.throws(() => f.add('x'), { code: 'ERR_GRUDGE_BLOOM_CLOSED' })
  t.throws(() => new ShardedBloomFilter({ capacity: 10, errorRate: 0.1, dir, shardCount: 0 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /shardCount/,
  })
  t.throws(() => new ShardedBloomFilter({ capacity: 10, errorRate: 0.1, dir: '', shardCount: 2 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"dir"/,
  })
})

t.test('sharded accuracy at capacity and uniform shard choice', async (t) => {
  const dir = join(t.testdir(), 'acc')
  const n = 20_000
  const f = new ShardedBloomFilter({ capacity: n, errorRate: 0.01, dir, shardCount: 8, policy: manual, seed: 8 })
  for (let i = 0; i < n; i++) f.add(`member:${i}`)
  let fp = 0
  for (let i = 0; i < 100_000; i++) if (f.mightContain(`outsider:${i}`)) fp++
  const rate = fp / 100_000
  // per-shard load varies by ~±2% (binomial), so p at capacity stays near 0.01; band ±16σ as for one filter
  t.ok(rate >= 0.005 && rate <= 0.015, `measured FP ${rate}`)
  const est = f.estimatedFalsePositiveRate()
  t.ok(Math.abs(est - rate) / rate < 0.25, `estimated ${est} vs measured ${rate}`)
  // shardOf: 16 shards over 160 000 random hashes; χ² with 15 dof, 99.9th percentile = 37.7
  let s = 99
  const next = () => (s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) | 0)
  const counts = new Array<number>(16).fill(0)
  for (let i = 0; i < 160_000; i++) counts[shardOf(next(), next(), 16)]++
  const chi = counts.reduce((a, c) => a + (c - 10_000) ** 2 / 10_000, 0)
  t.ok(chi < 37.7, `χ² = ${chi.toFixed(1)}`)
  t.equal(shardOf(-1, 0, 1), 0)
  t.equal(shardOf(0x7fffffff, 0x12345678, 65536) < 65536, true)
})

t.test('a manifest with the same shard geometry but another hash count is refused', async (t) => {
  const dir = t.testdir()
  // 8 shards of 1000 items at 0.01: 9586 bits and 7 hashes each; this manifest says 6
  const params = new Uint8Array(24)
  const dv = new DataView(params.buffer)
  dv.setUint32(0, 8, true)
  dv.setUint32(4, 6, true)
  dv.setUint32(8, 9586, true)
  params[16] = 1 // murmur3
  const seed = new Uint8Array(16).fill(4)
  const bytes = writeFrame({
    family: FAMILY.shardedBloomManifest,
    version: 1,
    flags: 0,
    seed,
    params,
    payload: new Uint8Array(0),
  })
  writeFileSync(join(dir, MANIFEST_FILE), bytes)
  t.throws(() => new ShardedBloomFilter({ capacity: 8000, errorRate: 0.01, dir, shardCount: 8, policy: manual }), {
    code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH',
    message: /hashes expected 7, received 6/,
  })
  t.ok(readFileSync(join(dir, MANIFEST_FILE)).equals(bytes), 'manifest untouched')
  // the same manifest with 7 hashes opens, adopting its seed
  dv.setUint32(4, 7, true)
  writeFileSync(
    join(dir, MANIFEST_FILE),
    writeFrame({ family: FAMILY.shardedBloomManifest, version: 1, flags: 0, seed, params, payload: new Uint8Array(0) }),
  )
  const f = new ShardedBloomFilter({ capacity: 8000, errorRate: 0.01, dir, shardCount: 8, policy: manual })
  t.same([...f.shards[0].seed], [...seed])
  await f.close()
})

t.test('an unknown option throws naming it, before the directory is created; every option passes', async (t) => {
  const dir = join(t.testdir(), 'shards')
  t.throws(
    () =>
      new ShardedBloomFilter(
        typo<ShardedBloomFilterOptions>({ capacity: 100, errorRate: 0.01, dir, shardcount: 2, shardCount: 2 }),
      ),
    unknownOption('shardcount', 'shardCount'),
  )
  t.notOk(existsSync(dir), 'nothing created')
  const all: Required<ShardedBloomFilterOptions> = {
    capacity: 100,
    errorRate: 0.01,
    dir,
    shardCount: 2,
    hasher: sipHash(),
    seed: 4,
    policy: manual,
    ticker: new FakeTicker(),
    onError: () => {},
    onBadCheckpoint: 'throw',
    writeChunkBytes: 4096,
  }
  t.same(Object.keys(all).sort(), [...SHARDED_BLOOM_OPTION_KEYS].sort(), 'the test names every option')
  await new ShardedBloomFilter(all).close()
})
