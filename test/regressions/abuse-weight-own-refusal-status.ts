// `abuse.weights: { 429: 5 }` beside a debt meter never fired: outcomes are recorded for
// admitted requests only, so the limiter's own 429s never reach the weights, and a client
// hammering past its limit never escalated, without a word. It is now refused at
// construction, naming abuse.refusalWeight (which scores refused requests); a weight for a
// status the limiter does not answer itself (the app's 429 on a limiter without `limit`)
// still works.
import t from 'tap'
import Fastify from 'fastify'
import express from 'express'
import grudgeFastify from '../../plugins/fastify/index.js'
import { grudge as grudgeExpress } from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const base = { clock: new FakeClock(0), ticker: new FakeTicker() }

t.test('Express: a weight for the limiter’s own refusal status is refused, naming refusalWeight', async (t) => {
  for (const [options, option, status] of [
    [{ limit: { rate: 1, burst: 2 }, abuse: { weights: { 429: 5 } } }, 'abuse.weights.429', 429],
    [{ limit: { rate: 1, burst: 2 }, statusCode: 503, abuse: { weights: { 503: 1 } } }, 'abuse.weights.503', 503],
    [{ fairness: {}, abuse: { weights: { 503: 1 } } }, 'abuse.weights.503', 503],
    [{ fairness: { status: 429 }, abuse: { weights: { 429: 1 } } }, 'abuse.weights.429', 429],
  ] as const) {
    t.throws(
      () => grudgeExpress({ ...base, ...options }),
      {
        code: 'ERR_GRUDGE_OPTION_INVALID',
        message: new RegExp(`option "${option.replace(/\./g, '\\.')}".*abuse\\.refusalWeight`),
      },
      `${JSON.stringify(options)} → ${status}`,
    )
  }
})

t.test('Fastify: refused at registration and on a route override alike', async (t) => {
  const f = Fastify()
  await t.rejects(
    async () => {
      await f.register(grudgeFastify, { ...base, limit: { rate: 1, burst: 2 }, abuse: { weights: { 429: 5 } } })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /abuse\.weights\.429.*abuse\.refusalWeight/ },
  )
  const g = Fastify()
  await g.register(grudgeFastify, { ...base, abuse: { weights: { 429: 5 } } })
  t.throws(
    () => g.get('/', { config: { grudge: { limit: { rate: 1, burst: 2 } } } }, async () => 'ok'),
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /config\.grudge\.abuse\.weights\.429/ },
    'a route that adds a debt meter under plugin-wide weights { 429 }',
  )
  await g.close()
  await f.close().catch(() => {})
})

t.test('a weight for a status another layer sends still scores it (no debt meter on that limiter)', async (t) => {
  const app = express()
  // the outer middleware scores; the inner one (or the app) refuses with 429
  const scorer = grudgeExpress({ ...base, abuse: { weights: { 429: 5 }, threshold: 10 }, warn: () => {} })
  const limiter = grudgeExpress({ ...base, limit: { rate: 0.001, burst: 1 }, warn: () => {} })
  app.use(scorer, limiter)
  app.get('/', (_req, res) => res.send('ok'))
  const server = app.listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`
  const codes: number[] = []
  for (let i = 0; i < 5; i++) codes.push((await fetch(url)).status)
  // 1 admitted, then 429s from the inner limiter: 5 each, threshold 10 → blocked after two
  t.same(codes, [200, 429, 429, 403, 403])
  server.close()
  await scorer.close()
  await limiter.close()
})
