// A client that aborts a request used to escape the abuse and feedback scores: outcomes were
// recorded only on finish / onResponse. They are recorded on abort too, with `abortStatus`
// (default 499, nginx's "client closed request"), which abuse.weights can weigh.
import t from 'tap'
import Fastify from 'fastify'
import type { Socket } from 'node:net'
import { request } from 'undici'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

/**
 * A slow route's gate, driven by events rather than sleeps (they raced under load): `arrived`
 * resolves when the handler has the request; the handler then waits until the client's socket
 * has closed and returns late. `settled` resolves when both handlers have finished.
 */
function slowGate() {
  let arrive: () => void = () => {}
  let arrived = new Promise<void>((r) => (arrive = r))
  const finished: Promise<void>[] = []
  return {
    /** Called by the handler with the request's socket; resolves once the client is gone. */
    hold(socket: Socket): Promise<void> {
      const gone = new Promise<void>((r) => (socket.destroyed ? r() : socket.once('close', () => r())))
      finished.push(gone.then(() => new Promise<void>((r) => setImmediate(r))))
      arrive()
      return gone
    },
    /** Start a request, abort it once the handler has it, and wait for the server to see the close. */
    async abortOne(url: string): Promise<void> {
      const ac = new AbortController()
      const p = request(url, { signal: ac.signal }).catch(() => undefined)
      await arrived
      arrived = new Promise<void>((r) => (arrive = r))
      ac.abort()
      await p
      await finished[finished.length - 1]
    },
    settled: () => Promise.all(finished),
  }
}

const abuse = { weights: { '499': 5 }, threshold: 10, halfLifeMs: 3_600_000 }

t.test('fastify: two aborted requests reach the abuse threshold (onRequestAbort)', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), abuse })
  const gate = slowGate()
  f.get('/slow', async (req) => {
    await gate.hold(req.raw.socket)
    return 'late'
  })
  await f.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => f.close())
  const { port } = f.server.address() as { port: number }
  const url = `http://127.0.0.1:${port}/slow`
  await gate.abortOne(url)
  await gate.abortOne(url)
  await gate.settled() // the handlers finish after the aborts: each request is still recorded once
  const r = await request(url, { reset: true })
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
    const gate = slowGate()
    app.get('/slow', l, (req, res) => {
      void gate.hold(req.socket).then(() => res.send('late'))
    })
    const url = await serve(t, app)
    await gate.abortOne(url + '/slow')
    await gate.abortOne(url + '/slow')
    await gate.settled()
    t.equal((await hit(url + '/slow')).status, 403, 'blocked: 2 × 5 ≥ threshold 10')
  })
}
