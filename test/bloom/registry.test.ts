import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { BloomFilterRegistry, bloomRegistry, checkBloomName } from '../../src/bloom/registry.js'
import { ManagedBloomFilter } from '../../src/bloom/managed.js'
import { ShardedBloomFilter } from '../../src/bloom/sharded.js'
import { FakeTicker } from '../../src/testing/index.js'
import {
  BLOOM_REGISTRY_OPTION_KEYS,
  REGISTER_BLOOM_KEYS,
  type BloomFilterRegistryOptions,
  type RegisterBloomOptions,
} from '../../src/bloom/registry.js'
import { murmur3 } from '../../src/hash/hasher.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('life cycle: before init, register, use, close, reopen', async (t) => {
  const dir = join(t.testdir(), 'blooms')
  const ticker = new FakeTicker()
  const r = new BloomFilterRegistry({ ticker })
  for (const call of [
    () => r.register('users', { capacity: 10, errorRate: 0.1 }),
    () => r.get('users'),
    () => r.add('users', 'a'),
    () => r.mightContain('users', 'a'),
  ]) {
    t.throws(call, { code: 'ERR_GRUDGE_BLOOM_REGISTRY_STATE', message: /before init/ })
  }
  r.init(dir)
  t.ok(existsSync(dir), 'init creates the directory')
  t.throws(() => r.init(dir), { code: 'ERR_GRUDGE_BLOOM_REGISTRY_STATE' })
  const users = r.register('users', { capacity: 1000, errorRate: 0.01 })
  const ips = r.register('ips', {
    capacity: 1000,
    errorRate: 0.01,
    shardCount: 4,
    policy: { checkpointOnShutdown: true },
  })
  const quiet = r.register('quiet', { capacity: 10, errorRate: 0.1, policy: { checkpointOnShutdown: false } })
  t.ok(users instanceof ManagedBloomFilter)
  t.ok(ips instanceof ShardedBloomFilter)
  t.equal(r.get('users'), users)
  t.same(r.names(), ['users', 'ips', 'quiet'])
  t.throws(() => r.register('users', { capacity: 10, errorRate: 0.1 }), { code: 'ERR_GRUDGE_BLOOM_NAME_TAKEN' })
  t.throws(() => r.get('nobody'), { code: 'ERR_GRUDGE_BLOOM_NAME_UNKNOWN' })
  t.throws(() => r.add('nobody', 'x'), { code: 'ERR_GRUDGE_BLOOM_NAME_UNKNOWN' })
  t.equal(r.mightContain('users', 'alice'), false)
  t.equal(r.add('users', 'alice'), true)
  t.equal(r.mightContain('users', 'alice'), true)
  r.add('ips', '203.0.113.7')
  quiet.add('q')
  const closing = r.close()
  t.ok(closing instanceof Promise, 'close returns a Promise')
  t.equal(r.close(), closing, 'idempotent')
  await closing
  t.ok(existsSync(join(dir, 'users.bloom')), 'flushed on close (default policy)')
  t.ok(existsSync(join(dir, 'ips.shards')), 'sharded filter in <name>.shards/')
  t.notOk(existsSync(join(dir, 'quiet.bloom')), 'checkpointOnShutdown: false is respected')
  t.equal(ticker.size, 0, 'every timer cancelled')
  t.throws(() => r.add('users', 'bob'), { code: 'ERR_GRUDGE_BLOOM_REGISTRY_STATE', message: /after close/ })

  r.init(dir)
  r.register('users', { capacity: 1000, errorRate: 0.01 })
  r.register('ips', { capacity: 1000, errorRate: 0.01, shardCount: 4 })
  t.ok(r.mightContain('users', 'alice'), 'reloaded after reopen')
  t.ok(r.mightContain('ips', '203.0.113.7'))
  t.throws(() => r.register('ips2', { capacity: 1000, errorRate: 0.01, shardCount: 0 }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
  })
  t.equal(await r.checkpoint(), 0)
  await r.close()
})

t.test('names must be safe file names', async (t) => {
  for (const bad of ['', '..', '../x', 'a/b', 'a\\b', '.hidden', 'a..b', 'x'.repeat(129), 'nul\0', 'sp ace', 42]) {
    t.throws(() => checkBloomName(bad), { code: 'ERR_GRUDGE_BLOOM_NAME_INVALID' }, String(bad))
  }
  for (const good of ['users', 'ip-v4', 'a.b', 'A_1', 'x'.repeat(128)]) t.doesNotThrow(() => checkBloomName(good), good)
  const r = new BloomFilterRegistry()
  r.init(t.testdir())
  t.throws(() => r.register('../escape', { capacity: 10, errorRate: 0.1 }), { code: 'ERR_GRUDGE_BLOOM_NAME_INVALID' })
  await r.close()
})

t.test('the module-level default registry', async (t) => {
  t.ok(bloomRegistry instanceof BloomFilterRegistry)
  t.throws(() => bloomRegistry.add('x', 'y'), { code: 'ERR_GRUDGE_BLOOM_REGISTRY_STATE' })
  await bloomRegistry.close() // a never-initialized registry closes at once
  bloomRegistry.init(t.testdir())
  bloomRegistry.register('seen', { capacity: 100, errorRate: 0.01, policy: { checkpointIntervalMs: Infinity } })
  bloomRegistry.add('seen', 'k')
  t.ok(bloomRegistry.mightContain('seen', 'k'))
  await bloomRegistry.close()
})

t.test('names that share a file elsewhere are refused: case variants and Windows device names', async (t) => {
  for (const bad of ['nul', 'NUL', 'con.log', 'Aux', 'prn', 'com1', 'LPT9.x']) {
    t.throws(() => checkBloomName(bad), { code: 'ERR_GRUDGE_BLOOM_NAME_INVALID' }, bad)
  }
  for (const good of ['null', 'console', 'com', 'lpt10', 'auxiliary', 'my-nul'])
    t.doesNotThrow(() => checkBloomName(good), good)
  const r = new BloomFilterRegistry()
  r.init(t.testdir())
  const opts = { capacity: 10, errorRate: 0.1, policy: { checkpointIntervalMs: Infinity } }
  r.register('users', opts)
  // on macOS and Windows users.bloom and Users.bloom are one file: two writers, lost members
  t.throws(() => r.register('Users', opts), { code: 'ERR_GRUDGE_BLOOM_NAME_TAKEN', message: /"users"/ })
  t.throws(() => r.register('USERS', { ...opts, shardCount: 2 }), { code: 'ERR_GRUDGE_BLOOM_NAME_TAKEN' })
  t.same(r.names(), ['users'])
  await r.close()
})

t.test('the registry and register refuse an unknown option naming it; every option passes', async (t) => {
  const ticker = new FakeTicker()
  t.throws(
    () => new BloomFilterRegistry(typo<BloomFilterRegistryOptions>({ tickr: ticker })),
    unknownOption('tickr', 'ticker'),
  )
  const options: Required<BloomFilterRegistryOptions> = { ticker, onError: () => {}, writeChunkBytes: 4096 }
  t.same(Object.keys(options).sort(), [...BLOOM_REGISTRY_OPTION_KEYS].sort(), 'the test names every option')
  const r = new BloomFilterRegistry(options)
  const dir = t.testdir()
  r.init(dir)
  t.throws(
    () => r.register('users', typo<RegisterBloomOptions>({ capacity: 10, errorRate: 0.01, shards: 2 })),
    unknownOption('shards', undefined, REGISTER_BLOOM_KEYS),
  )
  t.throws(
    () => r.register('users', { capacity: 10, errorRate: 0.01, policy: typo({ checkpointOnShutdwn: false }) }),
    unknownOption('policy.checkpointOnShutdwn', 'checkpointOnShutdown'),
  )
  t.notOk(r.has('users'), 'nothing registered')
  const all: Required<RegisterBloomOptions> = {
    capacity: 10,
    errorRate: 0.01,
    policy: { checkpointOnShutdown: false },
    shardCount: 2,
    onBadCheckpoint: 'throw',
    hasher: murmur3(),
    seed: 1,
  }
  t.same(Object.keys(all).sort(), [...REGISTER_BLOOM_KEYS].sort(), 'the test names every option')
  t.ok(r.register('users', all) instanceof ShardedBloomFilter)
  await r.close()
})
