// The denial the way express-rate-limit users expect it (issue #19, feature 4), on Express
// 5 and 4. Read from its readme and dist: `message` is a string, an object or a function
// `(req, res)`, sync or async, called after the status is set and sent with `res.send`
// unless the response has already ended; `handler(req, res, next, …)` answers instead; the
// status is `statusCode` (429 by default). grudge adds `useErrorHandler` (next(err)).
import t, { type Test } from 'tap'
import type express from 'express'
import grudge from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'
import type { GrudgeExpressOptions } from '../../plugins/express/options.js'

const base = () => ({ clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 1 }, warn: () => {} })

for (const [label, make] of EXPRESS_VERSIONS) {
  /** An app limited by one middleware of these options, with an error middleware that names what it got. */
  async function app(t: Test, o: GrudgeExpressOptions): Promise<string> {
    const a = make()
    const m = grudge({ ...base(), ...o })
    t.teardown(() => m.close())
    a.get('/', m, (_req, res) => {
      res.send('ok')
    })
    a.use(
      (
        err: { status?: number; statusCode?: number; message?: string },
        _req: express.Request,
        res: express.Response,
        _next: express.NextFunction,
      ) => {
        res.status(err.status ?? 500).json({ fromErrorMiddleware: true, status: err.status, message: err.message })
      },
    )
    return serve(t, a)
  }
  async function denied(t: Test, o: GrudgeExpressOptions) {
    const url = await app(t, o)
    t.equal((await hit(url)).status, 200)
    return hit(url)
  }

  t.test(`${label}: message as a string, an object, a function and an async function`, async (t) => {
    const s = await denied(t, { message: 'Too many requests, please try again later.' })
    t.equal(s.status, 429)
    t.equal(s.body, 'Too many requests, please try again later.')
    t.match(String(s.headers['content-type']), /^text\/html/, 'res.send of a string')
    t.equal(s.headers['retry-after'], '1', 'the fields are still written')
    const o = await denied(t, { message: { error: 'slow down' } })
    t.same(JSON.parse(o.body), { error: 'slow down' })
    t.match(String(o.headers['content-type']), /^application\/json/)
    const f = await denied(t, { message: (_req, res) => `status ${res.statusCode}` })
    t.equal(f.body, 'status 429', 'called after the status is set')
    const a = await denied(t, { message: async (req) => ({ path: req.path }) })
    t.same(JSON.parse(a.body), { path: '/' })
  })

  t.test(`${label}: a message function that answers itself; one that rejects`, async (t) => {
    const own = await denied(t, {
      message: (_req, res) => {
        res.status(503).send('answered by the message function')
        return 'never sent'
      },
    })
    t.same([own.status, own.body], [503, 'answered by the message function'])
    const bad = await denied(t, {
      message: async () => {
        throw Object.assign(new Error('message failed'), { status: 502 })
      },
    })
    t.same(JSON.parse(bad.body), { fromErrorMiddleware: true, status: 502, message: 'message failed' })
  })

  t.test(`${label}: statusCode, an async handler's rejection, useErrorHandler`, async (t) => {
    const s = await denied(t, { statusCode: 420, message: 'calm down' })
    t.same([s.status, s.body], [420, 'calm down'])
    const j = await denied(t, { statusCode: 420 })
    t.same(JSON.parse(j.body), { statusCode: 420, error: 'Error', message: 'Rate limit exceeded, retry in 1 second' })
    const h = await denied(t, {
      handler: async (_req, _res, _next, c) => {
        throw Object.assign(new Error(`handler ${c.statusCode}`), { status: 500 })
      },
    })
    t.same(JSON.parse(h.body), { fromErrorMiddleware: true, status: 500, message: 'handler 429' })
    const e = await denied(t, { useErrorHandler: true })
    t.same(JSON.parse(e.body), {
      fromErrorMiddleware: true,
      status: 429,
      message: 'Rate limit exceeded, retry in 1 second',
    })
    t.equal(e.headers['retry-after'], '1')
    const b = await denied(t, { useErrorHandler: true, errorResponseBuilder: () => ({ status: 451, message: 'gone' }) })
    t.same(JSON.parse(b.body), { fromErrorMiddleware: true, status: 451, message: 'gone' })
  })
}

t.test('two answers to one denial are refused at construction, naming the second', async (t) => {
  const rows: [GrudgeExpressOptions, RegExp][] = [
    [{ handler: () => {}, message: 'x' }, /"message".*beside handler/],
    [{ message: 'x', errorResponseBuilder: () => ({}) }, /"errorResponseBuilder".*beside message/],
    [{ handler: () => {}, useErrorHandler: true }, /"useErrorHandler".*beside handler/],
    [{ errorResponseBuilder: () => ({}), handler: () => {} }, /"errorResponseBuilder".*beside handler/],
  ]
  for (const [o, message] of rows)
    t.throws(() => grudge({ ...base(), ...o }), { code: 'ERR_GRUDGE_OPTION_INVALID', message })
  t.throws(() => grudge({ ...base(), statusCode: 99 }), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /statusCode/ })
})
