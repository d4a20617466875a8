// One server of the HTTP benchmark, run in its own process by examples/bench/http.ts:
//   node --import tsx examples/bench/http-server.ts <fastify|express> <bare|grudge|other> <open|reject>
// It prints the URL it listens on (loopback only) and serves GET / → "ok".
import Fastify from 'fastify'
import rateLimit from '@fastify/rate-limit'
import express from 'express'
import { rateLimit as expressRateLimit } from 'express-rate-limit'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'

// http.ts compiles grudge with tsc into GRUDGE_DIST so the servers run the shipped JS, not tsx's transpilation
import type * as FastifyPlugin from '../../plugins/fastify/index.js'
import type * as ExpressPlugin from '../../plugins/express/index.js'

const dist = process.env.GRUDGE_DIST
const fastifyModule = (await import(
  dist ? pathToFileURL(`${dist}/plugins/fastify/index.js`).href : '../../plugins/fastify/index.js'
)) as typeof FastifyPlugin
const expressModule = (await import(
  dist ? pathToFileURL(`${dist}/plugins/express/index.js`).href : '../../plugins/express/index.js'
)) as typeof ExpressPlugin
const grudgeFastify = fastifyModule.default
const grudgeExpress = expressModule.default

const [framework, variant, phase] = process.argv.slice(2)
// open: nothing is rejected; reject: one key (127.0.0.1) with 1 request per second
const open = phase === 'open'
const grudgeLimit = open ? { rate: 1e9, burst: 1e9 } : { rate: 1, burst: 1 }
const max = open ? 1e9 : 1

if (framework === 'fastify') {
  const app = Fastify()
  if (variant === 'grudge') await app.register(grudgeFastify, { limit: grudgeLimit })
  // the floor of any limiter: one synchronous onRequest hook that does nothing
  if (variant === 'noop') app.addHook('onRequest', (_req, _reply, done) => done())
  if (variant === 'other') await app.register(rateLimit, { max, timeWindow: 1000 })
  app.get('/', (_req, reply) => reply.send('ok'))
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  console.log(url)
} else {
  const app = express()
  if (variant === 'grudge') app.use(grudgeExpress({ limit: grudgeLimit }))
  if (variant === 'noop') app.use((_req, _res, next) => next())
  if (variant === 'other')
    app.use(expressRateLimit({ windowMs: 1000, limit: max, standardHeaders: 'draft-8', legacyHeaders: false }))
  app.get('/', (_req, res) => {
    res.send('ok')
  })
  const server = app.listen(0, '127.0.0.1', () => {
    console.log(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
  })
}
