// Regression: `skip` was tested for truthiness, so an async predicate (its Promise is
// truthy) silently disabled limiting for every request. Only `true` skips now; likewise an
// allowList predicate must give true (or a native Promise of true): a foreign thenable or
// another truthy value no longer lets every request through.
import t from 'tap'
import Fastify from 'fastify'
import express from 'express'
import { request } from 'undici'
import type { AddressInfo } from 'node:net'
import fastifyGrudge from '../../plugins/fastify/index.js'
import expressGrudge from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const asyncSkip = (async () => false) as unknown as () => boolean

t.test('Fastify: a skip predicate returning a Promise does not skip', async (t) => {
  const f = Fastify()
  await f.register(fastifyGrudge, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    skip: asyncSkip,
  })
  f.get('/', async () => 'ok')
  t.equal((await f.inject('/')).statusCode, 200)
  t.equal((await f.inject('/')).statusCode, 429)
  await f.close()
})

t.test('Express: a skip predicate returning a Promise does not skip', async (t) => {
  const app = express()
  const mw = expressGrudge({
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    skip: asyncSkip,
  })
  app.use(mw)
  app.get('/', (_req, res) => void res.send('ok'))
  const server = app.listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const codes: number[] = []
  for (let i = 0; i < 2; i++) {
    const res = await request(url)
    await res.body.dump()
    codes.push(res.statusCode)
  }
  t.same(codes, [200, 429])
  await new Promise((r) => server.close(r))
  await mw.close()
})

t.test('Fastify: an allowList predicate returning a foreign thenable does not allow', async (t) => {
  const thenable = { then: (ok: (v: boolean) => void) => ok(false) }
  const f = Fastify()
  await f.register(fastifyGrudge, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    allowList: (() => thenable) as unknown as () => boolean,
  })
  f.get('/', async () => 'ok')
  t.equal((await f.inject('/')).statusCode, 200)
  t.equal((await f.inject('/')).statusCode, 429)
  await f.close()
})
