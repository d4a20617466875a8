// A client that aborts a request used to escape the abuse and feedback scores: outcomes were
// recorded only on finish / onResponse. They are recorded on abort too, with `abortStatus`
// (default 499, nginx's "client closed request"), which abuse.weights can weigh.
import t from 'tap'
import Fastify from 'fastify'
import { request } from 'undici'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Start a request and abort it once the server has it (the handler is slow). */
async function abortOne(url: string): Promise<void> {
  const ac = new AbortController()
  const p = request(url, { signal: ac.signal }).catch(() => undefined)
  await sleep(30)
  ac.abort()
  await p
  await sleep(30) // the server sees the close
}

const abuse = { weights: { '499': 5 }, threshold: 10, halfLifeMs: 3_600_000 }

t.test('fastify: two aborted requests reach the abuse threshold (onRequestAbort)', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), abuse })
  f.get('/slow', async () => {
    await sleep(150)
    return 'late'
  })
  await f.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => f.close())
  const { port } = f.server.address() as { port: number }
  const url = `http://127.0.0.1:${port}/slow`
  await abortOne(url)
  await abortOne(url)
  await sleep(200) // the handlers finish after the aborts: each request is still recorded once
  const r = await request(url)
  await r.body.text()
  t.equal(r.statusCode, 403, 'blocked: 2 × 5 ≥ threshold 10')
})

t.test('fastify: abortStatus is checked at registration', async (t) => {
  const f = Fastify()
  await t.rejects(
    async () => {
      await f.register(grudgeFastify, { abuse, abortStatus: 42 })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /abortStatus/ },
  )
  await f.close()
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: an aborted request is scored (close before finish)`, async (t) => {
    const app = make()
    const l = grudgeExpress({ clock: new FakeClock(0), ticker: new FakeTicker(), abuse, abortStatus: 499 })
    t.teardown(() => l.close())
    app.get('/slow', l, (_req, res) => {
      setTimeout(() => res.send('late'), 150)
    })
    const url = await serve(t, app)
    await abortOne(url + '/slow')
    await abortOne(url + '/slow')
    await sleep(200)
    t.equal((await hit(url + '/slow')).status, 403, 'blocked: 2 × 5 ≥ threshold 10')
  })
}
