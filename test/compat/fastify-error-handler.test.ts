// The denial the way @fastify/rate-limit users expect it (issue #19, feature 4). Read from
// its README ("You can change the response by providing a callback to errorResponseBuilder
// or setting a custom error handler") and index.js: the builder's answer is thrown, so
// `setErrorHandler` sees it with `statusCode`, the reply's status still unset (its issue
// #284: the handler may redirect), the rate-limit fields already on the reply; a plain
// object thrown is answered as JSON with its own statusCode by Fastify's default handler.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { captureLog } from './helpers/log.js'

const base = () => ({ clock: new FakeClock(0), ticker: new FakeTicker(), legacyHeaders: true })

t.test('useErrorHandler: setErrorHandler sees the error (statusCode 429), the reply status unset', async (t) => {
  const f = Fastify()
  await f.register(grudge, { ...base(), limit: { rate: 1, burst: 1 }, useErrorHandler: true })
  const seen: { errorStatus: unknown; replyStatus: number; message: string }[] = []
  f.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    seen.push({ errorStatus: err.statusCode, replyStatus: reply.statusCode, message: err.message })
    return reply.redirect('/slow-down')
  })
  f.get('/', async () => 'ok')
  t.equal((await f.inject('/')).statusCode, 200)
  const r = await f.inject('/')
  t.equal(r.statusCode, 302, 'the error handler answered (a redirect, as in FRL issue #284)')
  t.same(seen, [{ errorStatus: 429, replyStatus: 200, message: 'Rate limit exceeded, retry in 1 second' }])
  t.equal(r.headers['retry-after'], '1', 'Retry-After set before the throw')
  t.equal(r.headers['x-ratelimit-remaining'], '0', 'and the legacy fields')
  t.equal(r.headers['ratelimit'], '"default";r=0;t=1', 'and the IETF fields')
  await f.close()
})

t.test("useErrorHandler with Fastify's default handler: the default body's bytes, 429", async (t) => {
  const thrown = Fastify()
  await thrown.register(grudge, { ...base(), limit: { rate: 1, burst: 1 }, useErrorHandler: true })
  thrown.get('/', async () => 'ok')
  const sent = Fastify()
  await sent.register(grudge, { ...base(), limit: { rate: 1, burst: 1 } })
  sent.get('/', async () => 'ok')
  await thrown.inject('/')
  await sent.inject('/')
  const a = await thrown.inject('/')
  const b = await sent.inject('/')
  t.equal(a.statusCode, 429)
  t.same(a.json(), { statusCode: 429, error: 'Too Many Requests', message: 'Rate limit exceeded, retry in 1 second' })
  t.same(a.json(), b.json(), 'thrown or sent, the client reads the same body')
  t.equal(a.headers['content-type'], 'application/json; charset=utf-8')
  await thrown.close()
  await sent.close()
})

t.test('a custom builder: a plain object thrown is answered as JSON with its statusCode', async (t) => {
  const f = Fastify()
  const contexts: unknown[] = []
  await f.register(grudge, {
    ...base(),
    limit: { rate: 1, burst: 2 },
    useErrorHandler: true,
    errorResponseBuilder: (_req, c) => {
      contexts.push({ statusCode: c.statusCode, limit: c.limit, retry: c.retryAfterSeconds, policy: c.policy })
      return {
        statusCode: c.statusCode,
        error: 'Too Many Requests',
        message: `max ${c.limit}`,
        ttlS: c.retryAfterSeconds,
      }
    },
  })
  f.get('/', async () => 'ok')
  await f.inject('/')
  await f.inject('/')
  const r = await f.inject('/')
  t.equal(r.statusCode, 429)
  t.same(r.json(), { statusCode: 429, error: 'Too Many Requests', message: 'max 2', ttlS: 1 })
  t.same(contexts, [{ statusCode: 429, limit: 2, retry: 1, policy: 'limit' }])
  await f.close()
})

t.test('statusCode: the debt meter answers with it (sent or thrown); the abuse block stays 403', async (t) => {
  for (const useErrorHandler of [false, true]) {
    const f = Fastify()
    await f.register(grudge, {
      ...base(),
      limit: { rate: 1, burst: 1 },
      statusCode: 420,
      useErrorHandler,
      abuse: { weights: { '404': 10 }, threshold: 10 },
      notFound: true,
    })
    f.get('/', async () => 'ok')
    await f.inject('/')
    const r = await f.inject('/')
    t.equal(r.statusCode, 420, `useErrorHandler ${useErrorHandler}: 420`)
    t.equal(r.json<{ statusCode: number }>().statusCode, 420)
    const g = Fastify()
    await g.register(grudge, {
      ...base(),
      statusCode: 420,
      abuse: { weights: { '404': 10 }, threshold: 10 },
      notFound: true,
    })
    await g.inject('/missing')
    t.equal((await g.inject('/missing')).statusCode, 403, 'abuse: 403 whatever statusCode says')
    await g.close()
    await f.close()
  }
  const bad = Fastify()
  await t.rejects(
    async () => {
      await bad.register(grudge, { limit: { rate: 1, burst: 1 }, statusCode: 200 })
    },
    {
      code: 'ERR_GRUDGE_OPTION_INVALID',
      message: /statusCode/,
    },
  )
  const route = Fastify()
  await route.register(grudge, { ...base(), limit: { rate: 1, burst: 1 } })
  route.get('/teapot', { config: { grudge: { statusCode: 418, limit: { rate: 1, burst: 1 } } } }, async () => 'ok')
  await route.inject('/teapot')
  const tea = await route.inject('/teapot')
  t.equal(tea.statusCode, 418, 'per-route config.grudge.statusCode')
  await route.close()
})

t.test('onExceeded runs once per denial, before the answer, in both paths', async (t) => {
  for (const useErrorHandler of [false, true]) {
    const calls: string[] = []
    const f = Fastify()
    await f.register(grudge, {
      ...base(),
      limit: { rate: 1, burst: 1 },
      useErrorHandler,
      key: (req) => String(req.headers['x-user'] ?? 'anon'),
      onExceeded: (_req, key, d) => calls.push(`${key} ${d.policy}`),
    })
    f.setErrorHandler((err, _req, reply) => {
      calls.push('handler')
      return reply.send(err)
    })
    f.get('/', async () => 'ok')
    await f.inject({ url: '/', headers: { 'x-user': 'al' } })
    await f.inject({ url: '/', headers: { 'x-user': 'al' } })
    t.same(calls, useErrorHandler ? ['fn:al limit', 'handler'] : ['fn:al limit'], `useErrorHandler ${useErrorHandler}`)
    await f.close()
  }
})

t.test('a builder answering nothing to throw takes the error path (500), coded and logged', async (t) => {
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudge, {
    ...base(),
    limit: { rate: 1, burst: 1 },
    useErrorHandler: true,
    errorResponseBuilder: () => undefined,
  })
  f.get('/', async () => 'ok')
  await f.inject('/')
  const r = await f.inject('/')
  t.equal(r.statusCode, 500, 'never admitted by a missing error')
  t.ok(
    lines.some((l) => (l.err as { code?: string } | undefined)?.code === 'ERR_GRUDGE_OPTION_INVALID'),
    'the cause is logged with its code',
  )
  await t.rejects(
    async () => {
      await Fastify().register(grudge, { useErrorHandler: 'yes' as never })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /useErrorHandler/ },
  )
  await f.close()
})

t.test('encapsulated scopes: a child registration with useErrorHandler meets its own error handler', async (t) => {
  const f = Fastify()
  const outer: number[] = []
  const inner: number[] = []
  f.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    outer.push(err.statusCode ?? 0)
    return reply.code(err.statusCode ?? 500).send({ outer: true })
  })
  await f.register(async (child) => {
    child.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
      inner.push(err.statusCode ?? 0)
      return reply.code(err.statusCode ?? 500).send({ inner: true })
    })
    await child.register(grudge, { ...base(), limit: { rate: 1, burst: 1 }, useErrorHandler: true })
    child.get('/in', async () => 'ok')
  })
  f.get('/out', async () => 'ok')
  await f.inject('/in')
  const r = await f.inject('/in')
  t.same(r.json(), { inner: true }, "the child scope's handler answers")
  t.same([outer, inner], [[], [429]])
  await f.inject('/out')
  t.equal((await f.inject('/out')).statusCode, 200, 'the parent scope is not limited by the child registration')
  await f.close()
})
