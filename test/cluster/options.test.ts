// Option parsing of the Redis store factory; needs no Redis (nothing connects before a store is used).
import t from 'tap'
import { redisStore } from '../../src/index.js'
import { REDIS_STORE_OPTION_KEYS, type RedisStoreOptions } from '../../src/cluster/options.js'
import type { RedisLike } from '../../src/cluster/client.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { typo, unknownOption } from '../unknown-option.js'

const SEED = '0f0e0d0c0b0a09080706050403020100'
const URL = 'redis://127.0.0.1:6390'

t.test('an unknown option throws naming it and the closest option, before the seed check', async (t) => {
  t.throws(() => redisStore(typo<RedisStoreOptions>({ redis: URL, sed: SEED })), unknownOption('sed', 'seed'))
  t.throws(
    () => redisStore(typo<RedisStoreOptions>({ redis: URL, seed: SEED, timeoutms: 10 })),
    unknownOption('timeoutms', 'timeoutMs'),
  )
  t.throws(
    () => redisStore(typo<RedisStoreOptions>({ redis: URL, seed: SEED, onStoreErorr: undefined })),
    unknownOption('onStoreErorr', 'onStoreError'),
  )
})

t.test('every documented option passes; the client is a value, its own keys are not options', async (t) => {
  const client: RedisLike & { options: object } = {
    evalsha: async () => null,
    evalshaBuffer: async () => null,
    script: async () => null,
    options: { host: 'localhost', anything: true },
  }
  const all: Required<RedisStoreOptions> = {
    redis: client,
    slots: 1,
    mode: 'sync',
    seed: SEED,
    timeoutMs: 20,
    onStoreError: 'local',
    prefix: 'app',
    syncMs: 50,
    retryMs: 100,
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    onError: () => {},
    onEvent: () => {},
  }
  t.same(Object.keys(all).sort(), [...REDIS_STORE_OPTION_KEYS].sort(), 'the test names every option')
  t.equal(redisStore(all).mode, 'sync')
})
