// A ManagedBloomFilter built for an error rate below ~2^-1024 got k capped at 1024 by
// `BloomFilter.byAccuracy`, but the checkpoint check expected the uncapped k: it refused its own
// checkpoint (ERR_GRUDGE_BLOOM_PARAMS_MISMATCH), and a ShardedBloomFilter could not be built.
import t from 'tap'
import { join } from 'node:path'
import { ManagedBloomFilter } from '../../src/bloom/managed.js'
import { ShardedBloomFilter } from '../../src/bloom/sharded.js'
import { bloomOptimalHashes, bloomOptimalBits } from '../../src/bloom/sizing.js'

const policy = { checkpointIntervalMs: Infinity, checkpointInsertThreshold: Infinity, checkpointOnShutdown: true }
const errorRate = 1e-320 // subnormal, in (0, 1): −log2 p ≈ 1063 hashes before the cap

t.test('a filter whose optimal k exceeds 1024 reloads its own checkpoint', async (t) => {
  t.ok(bloomOptimalHashes(bloomOptimalBits(3, errorRate), 3) > 1024, 'the case needs the cap')
  const path = join(t.testdir(), 'tiny-p.bloom')
  const f = new ManagedBloomFilter({ capacity: 3, errorRate, path, policy })
  t.equal(f.hashCount, 1024)
  f.add('a')
  await f.close()
  const g = new ManagedBloomFilter({ capacity: 3, errorRate, path, policy })
  t.equal(g.hashCount, 1024)
  t.ok(g.mightContain('a'))
  await g.close()
})

t.test('a sharded filter whose optimal k exceeds 1024 is built with k = 1024 and reopens', async (t) => {
  const dir = join(t.testdir(), 'tiny-p.shards')
  const f = new ShardedBloomFilter({ capacity: 6, errorRate, dir, shardCount: 2, policy })
  t.equal(f.hashCount, 1024)
  f.add('a')
  await f.close()
  const g = new ShardedBloomFilter({ capacity: 6, errorRate, dir, shardCount: 2, policy })
  t.ok(g.mightContain('a'))
  await g.close()
})

t.test('a capacity needing more than 2^36 bits names the capacity, with or without a checkpoint', async (t) => {
  const dir = t.testdir()
  t.throws(() => new ManagedBloomFilter({ capacity: 2 ** 40, errorRate: 0.01, path: join(dir, 'big.bloom'), policy }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /"capacity"/,
  })
  t.throws(
    () => new ShardedBloomFilter({ capacity: 2 ** 40, errorRate: 0.01, dir: join(dir, 'big'), shardCount: 1, policy }),
    {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /"capacity"/,
    },
  )
})
