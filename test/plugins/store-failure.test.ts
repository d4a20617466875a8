import t from 'tap'
import Fastify from 'fastify'
import express from 'express'
import type { AddressInfo } from 'node:net'
import { request } from 'undici'
import grudge from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { redisStore } from '../../src/index.js'
import { FakeTicker } from '../../src/testing/index.js'

// The Redis store of src/cluster/ pointed at a port where nothing listens: every call fails,
// and the configured onStoreError must decide within its timeout, through both adapters.
// (No timing assertion: the requests simply have to come back with the configured answer.)
const DEAD = 'redis://127.0.0.1:1'

for (const mode of ['open', 'closed'] as const) {
  t.test(`Fastify + redisStore on a dead Redis, onStoreError '${mode}'`, async (t) => {
    const f = Fastify()
    await f.register(grudge, {
      ticker: new FakeTicker(),
      store: redisStore({ redis: DEAD, seed: 7, timeoutMs: 100, retryMs: 0, onStoreError: mode }),
      limit: { rate: 1, burst: 1 },
    })
    f.get('/', async () => 'ok')
    t.teardown(() => f.close())
    for (let i = 0; i < 3; i++) {
      const r = await f.inject('/')
      if (mode === 'open') {
        t.equal(r.statusCode, 200, 'fail-open admits')
        t.notOk('ratelimit' in r.headers, 'and invents no remaining/reset')
      } else {
        t.equal(r.statusCode, 503, 'fail-closed answers 503')
        t.equal(r.headers['retry-after'], '1')
      }
    }
    t.equal(f.grudge.stats().policies.store[mode === 'open' ? 'admitted' : 'rejected'], 3)
  })
}

t.test("Express + redisStore on a dead Redis, onStoreError 'closed', real server and undici", async (t) => {
  const app = express()
  const mw = grudgeExpress({
    ticker: new FakeTicker(),
    store: redisStore({ redis: DEAD, seed: 7, timeoutMs: 100, retryMs: 0, onStoreError: 'closed' }),
    limit: { rate: 1, burst: 1 },
  })
  app.use(mw)
  app.get('/', (_req, res) => {
    res.send('ok')
  })
  const server = app.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await mw.close()
  })
  const { port } = server.address() as AddressInfo
  const r = await request(`http://127.0.0.1:${port}/`)
  t.equal(r.statusCode, 503)
  t.equal(r.headers['retry-after'], '1')
  await r.body.text()
})
