// The default 64-bit murmur3 changed from h1 of MurmurHash3_x64_128 (hasher id 1, now
// 'murmur3x64') to bytes 0..7 of MurmurHash3_x86_128 (id 3). A Bloom checkpoint written
// under the old default must not be refused, nor silently read under the new function
// (every member would then look absent): without an explicit hasher its hasher is adopted.
import t from 'tap'
import { join } from 'node:path'
import { ManagedBloomFilter } from '../../src/bloom/managed.js'
import { ShardedBloomFilter } from '../../src/bloom/sharded.js'
import { Murmur3Hasher, murmur3 } from '../../src/hash/hasher.js'

const manual = { checkpointIntervalMs: Infinity, checkpointInsertThreshold: Infinity, checkpointOnShutdown: false }
const members = Array.from({ length: 200 }, (_, i) => `member-${i}`)

t.test('ManagedBloomFilter adopts a murmur3x64 checkpoint when no hasher is asked for', async (t) => {
  const path = join(t.testdir(), 'old.bloom')
  const old = new ManagedBloomFilter({
    capacity: 1000,
    errorRate: 0.01,
    path,
    policy: manual,
    hasher: new Murmur3Hasher(9, 'x64_128'),
  })
  for (const m of members) old.add(m)
  await old.checkpoint()
  await old.close()

  const adopted = new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual })
  t.equal(adopted.filter.hasher.id, 1, 'the file’s hasher, not the new default')
  t.ok(
    members.every((m) => adopted.mightContain(m)),
    'every member is still found',
  )
  await adopted.close()

  t.throws(
    () => new ManagedBloomFilter({ capacity: 1000, errorRate: 0.01, path, policy: manual, hasher: murmur3(9) }),
    {
      code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH',
      message: /hasher id expected 3, received 1/,
    },
  )
})

t.test('ShardedBloomFilter adopts a murmur3x64 manifest and routes items as it did', async (t) => {
  const dir = join(t.testdir(), 'shards')
  const old = new ShardedBloomFilter({
    capacity: 4000,
    errorRate: 0.01,
    dir,
    shardCount: 4,
    policy: manual,
    hasher: new Murmur3Hasher(5, 'x64_128'),
  })
  for (const m of members) old.add(m)
  const shardOf = members.map((m) => old.shardIndexOf(m))
  await old.checkpoint()
  await old.close()

  const adopted = new ShardedBloomFilter({ capacity: 4000, errorRate: 0.01, dir, shardCount: 4, policy: manual })
  t.same(
    members.map((m) => adopted.shardIndexOf(m)),
    shardOf,
    'the same shard for every item',
  )
  t.ok(
    members.every((m) => adopted.mightContain(m)),
    'every member is still found',
  )
  t.ok(
    adopted.shards.every((s) => s.hasher.id === 1),
    'shards keep id 1',
  )
  // a new item lands in the shard the old hasher picks, and is found after a reload
  adopted.add('late')
  await adopted.checkpoint()
  await adopted.close()
  const again = new ShardedBloomFilter({ capacity: 4000, errorRate: 0.01, dir, shardCount: 4, policy: manual })
  t.ok(again.mightContain('late'))
  await again.close()

  t.throws(
    () =>
      new ShardedBloomFilter({
        capacity: 4000,
        errorRate: 0.01,
        dir,
        shardCount: 4,
        policy: manual,
        hasher: murmur3(5),
      }),
    { code: 'ERR_GRUDGE_BLOOM_PARAMS_MISMATCH', message: /hasher id expected 3, received 1/ },
  )
})
