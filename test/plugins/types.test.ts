import t from 'tap'
import Fastify from 'fastify'
import express from 'express'
import grudge, { type GrudgeRequestState } from '../../plugins/fastify/index.js'
import grudgeExpress, { type GrudgeExpressState } from '../../plugins/express/index.js'
import type { LimiterStats } from '../../plugins/fastify/index.js'

// Declaration merging, checked by the type checker (tsc --noEmit covers test/): each
// `@ts-expect-error` fails the type check if the merged types stop rejecting the misuse.
t.test('declaration merging for Fastify and Express', async (t) => {
  const app = Fastify()
  await app.register(grudge, { limit: { rate: 1, burst: 2 } })
  app.get('/', { config: { grudge: { limit: { rate: 2, burst: 4 }, key: 'route' } } }, async (req) => {
    const state: GrudgeRequestState | null = req.grudge
    const remaining: number | undefined = req.grudge?.remaining
    return { remaining, key: state?.key }
  })
  app.get('/off', { config: { grudge: false } }, async () => 'off')
  // a string passes TypeScript's weak-type check (all options are optional), so it is refused at run time
  t.throws(() => app.get('/bad', { config: { grudge: 'yes' as never } }, async () => 'bad'), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /config\.grudge/,
  })
  t.throws(
    () =>
      // @ts-expect-error limit.rate is a number (and refused at run time too)
      app.get('/bad2', { config: { grudge: { limit: { rate: 'fast', burst: 1 } } } }, async () => 'bad'),
    { code: 'ERR_GRUDGE_OPTION_INVALID' },
  )
  const stats: LimiterStats = app.grudge.stats()
  t.equal(stats.requests, 0)
  t.same((await app.inject('/')).json(), { remaining: 3, key: 'route:GET /' })
  await app.close()

  const e = express()
  e.use(grudgeExpress({ limit: { rate: 1, burst: 1 } }))
  e.get('/', (req, res) => {
    const state: GrudgeExpressState | undefined = req.grudge
    res.json({ policy: state?.policy ?? null })
  })
  t.pass('typed')
})
