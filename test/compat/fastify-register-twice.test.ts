// Registering the Fastify plugin twice in one scope (issue #16): the second registration used to
// replace fastify.grudge silently. It is refused with a coded error; a child scope may still
// register its own (the innermost registration then limits its routes).
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('a second registration in one scope is refused with ERR_GRUDGE_ADAPTER_REGISTERED', async (t) => {
  const opts = { clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 5 } }
  const f = Fastify()
  await f.register(grudge, opts)
  await t.rejects(
    async () => {
      await f.register(grudge, { ...opts, limit: { rate: 1, burst: 50 } })
    },
    { code: 'ERR_GRUDGE_ADAPTER_REGISTERED' },
  )
  await f.close()
})

t.test('a child scope may register its own', async (t) => {
  const opts = { clock: new FakeClock(0), ticker: new FakeTicker() }
  const f = Fastify()
  await f.register(grudge, { ...opts, limit: { rate: 1, burst: 5 } })
  await f.register(async (child) => {
    await child.register(grudge, { ...opts, limit: { name: 'child', rate: 1, burst: 2 } })
    child.get('/c', async () => 'ok')
  })
  await f.ready()
  t.equal((await f.inject('/c')).headers['ratelimit-policy'], '"child";q=2;w=2', 'the innermost registration')
  await f.close()
})
