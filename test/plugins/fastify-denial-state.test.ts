// request.grudge of a refused request (its Decision is kept in a request slot, not a
// WeakMap entry): what hooks read before, during and after the denial
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'

async function app(seen: unknown[], opts: { setEarly?: boolean; setLate?: unknown } = {}) {
  const f = Fastify()
  await f.register(grudge, { limit: { rate: 1, burst: 1 } })
  if (opts.setEarly)
    f.addHook('onRequest', (req, _reply, done) => {
      ;(req as { grudge: unknown }).grudge = { early: true }
      done()
    })
  f.addHook('onSend', (req, _reply, payload, done) => {
    seen.push(req.grudge)
    if ('setLate' in opts) (req as { grudge: unknown }).grudge = opts.setLate
    done(null, payload)
  })
  f.addHook('onResponse', (req, _reply, done) => {
    seen.push(req.grudge)
    done()
  })
  f.get('/', () => 'ok')
  return f
}

t.test('a refused request reads its denial in onSend and onResponse, the same object', async (t) => {
  const seen: unknown[] = []
  const f = await app(seen)
  t.teardown(() => f.close())
  t.equal((await f.inject('/')).statusCode, 200)
  const r = await f.inject('/')
  t.equal(r.statusCode, 429)
  const [, , during, after] = seen as Array<{ admitted: boolean; policy: string; key: string }>
  t.equal(during.admitted, false)
  t.equal(during.policy, 'limit')
  t.equal(during.key, 'ip:127.0.0.1')
  t.equal(after, during, 'read twice, one Decision')
})

t.test('a value set before grudge decided yields to the denial; one set after wins', async (t) => {
  const seen: unknown[] = []
  const f = await app(seen, { setEarly: true, setLate: { late: true } })
  t.teardown(() => f.close())
  await f.inject('/')
  t.equal((await f.inject('/')).statusCode, 429)
  t.equal((seen[2] as { admitted: boolean }).admitted, false)
  t.same(seen[3], { late: true })
})

t.test('request.grudge set to null after a denial reads the denial again (not figures of an admission)', async (t) => {
  const seen: unknown[] = []
  const f = await app(seen, { setLate: null })
  t.teardown(() => f.close())
  await f.inject('/')
  t.equal((await f.inject('/')).statusCode, 429)
  t.equal((seen[3] as { admitted: boolean }).admitted, false)
  t.equal(seen[3], seen[2])
})

t.test('concurrent requests each keep their own decision', async (t) => {
  const seen: unknown[] = []
  const f = await app(seen)
  t.teardown(() => f.close())
  const rs = await Promise.all([f.inject('/'), f.inject('/'), f.inject('/')])
  t.same(rs.map((r) => r.statusCode).sort(), [200, 429, 429])
  const onResponse = seen.filter((_, i) => i % 2 === 1) as Array<{ admitted: boolean }>
  t.same(onResponse.map((d) => d.admitted).sort(), [false, false, true])
})
