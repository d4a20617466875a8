// Request-time failures of key and cost functions (issues #16, #19): a key function answering
// undefined sent our config-error code and option text to the client; a throwing one a bare
// 500; a cost function answering undefined was charged 1. Now each takes the error path,
// the cause is logged under grudge's name, and the client gets a generic 500 body.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { captureLog } from './helpers/log.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

t.test('fastify: undefined key, throwing key and undefined cost → generic 500, cause logged', async (t) => {
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: {
      rate: 1,
      burst: 5,
      cost: (req) => (req.headers['x-cost'] === 'none' ? (undefined as unknown as number) : 1),
    },
    key: (req) => {
      if (req.headers['x-key'] === 'none') return undefined as unknown as string
      if (req.headers['x-key'] === 'throw') throw new Error('db lookup failed')
      return 'user'
    },
  })
  f.get('/', async () => 'ok')
  for (const headers of [{ 'x-key': 'none' }, { 'x-key': 'throw' }, { 'x-cost': 'none' }]) {
    const r = await f.inject({ url: '/', headers })
    t.equal(r.statusCode, 500, JSON.stringify(headers))
    t.notMatch(r.body, /ERR_GRUDGE|option "/, 'no internal code or option text reaches the client')
    t.match(r.json(), { statusCode: 500, message: 'Internal Server Error' })
  }
  const ours = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('grudge:'))
  t.equal(ours.length, 3, 'each cause logged under grudge’s name')
  t.match(ours[0], { err: { code: 'ERR_GRUDGE_OPTION_INVALID', message: /key/ } })
  t.match(ours[1], { err: { message: 'db lookup failed' } })
  t.match(ours[2], { err: { message: /limit\.cost/ } })
  t.equal((await f.inject('/')).statusCode, 200, 'a normal request is charged cost 1')
  await f.close()
})

t.test('fastify: an error with its own status (http-errors style) passes as it is', async (t) => {
  const f = Fastify()
  await f.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 5 },
    key: () => {
      throw Object.assign(new Error('sign in first'), { statusCode: 401 })
    },
  })
  f.get('/', async () => 'ok')
  const r = await f.inject('/')
  t.equal(r.statusCode, 401)
  t.match(r.json(), { message: 'sign in first' })
  await f.close()
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: undefined key → next(err) with a generic 500, cause through warn`, async (t) => {
    const warned: string[] = []
    const app = make()
    const l = grudgeExpress({
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      warn: (m) => warned.push(m),
      limit: { rate: 1, burst: 5, cost: () => undefined as unknown as number },
      key: (req) => (req.headers['x-key'] === 'none' ? (undefined as unknown as string) : 'k'),
    })
    t.teardown(() => l.close())
    app.use(l)
    app.get('/', (_req, res) => {
      res.send('ok')
    })
    app.use(
      (
        err: Error & { statusCode?: number },
        _req: unknown,
        res: { status(n: number): { send(b: string): void } },
        _next: unknown,
      ) => {
        res.status(err.statusCode ?? 500).send(err.message)
      },
    )
    const url = await serve(t, app)
    const a = await hit(url + '/', { 'x-key': 'none' })
    t.equal(a.status, 500)
    t.equal(a.body, 'Internal Server Error')
    const b = await hit(url + '/')
    t.equal(b.status, 500, 'a cost function answering undefined is an error, not cost 1')
    t.equal(warned.length, 2)
    t.match(warned[0], /^grudge: .*ERR_GRUDGE_OPTION_INVALID.*key/)
    t.match(warned[1], /limit\.cost/)
  })
}
