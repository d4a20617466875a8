// A cost function with a fractional burst (issue #19): `burst: 2.5` admits at most 2.5 units
// of debt, so a request costing 3 can never be admitted. A constant cost above the burst is
// refused at construction; a cost function's answer is known only per request, so it takes
// the error path with its own code, logged once per limiter (not once per request).
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { captureLog } from './helpers/log.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const base = () => ({ clock: new FakeClock(0), ticker: new FakeTicker() })

t.test('a constant cost above a fractional burst is refused at construction', async (t) => {
  t.throws(() => grudgeExpress({ ...base(), limit: { rate: 1, burst: 2.5, cost: 3 } }), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /limit\.cost.*2\.5/,
  })
  await t.rejects(
    async () => {
      await Fastify().register(grudge, { ...base(), limit: { rate: 1, burst: 2.5, cost: 3 } })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID' },
  )
})

t.test('fastify: a cost function answering 3 under burst 2.5 → 500, its code logged once', async (t) => {
  const { lines, logger } = captureLog()
  const f = Fastify({ logger })
  await f.register(grudge, {
    ...base(),
    limit: { rate: 1, burst: 2.5, cost: (req) => Number(req.headers['x-cost'] ?? 1) },
  })
  f.get('/', async () => 'ok')
  t.equal((await f.inject({ url: '/', headers: { 'x-cost': '2' } })).statusCode, 200, 'cost 2 fits 2.5')
  for (let i = 0; i < 3; i++) {
    const r = await f.inject({ url: '/', headers: { 'x-cost': '3' } })
    t.equal(r.statusCode, 500, 'never a 429: no wait would ever admit it')
    t.notMatch(r.body, /ERR_GRUDGE|burst/, 'no internal text to the client')
  }
  const ours = lines.filter(
    (l) => (l.err as { code?: string } | undefined)?.code === 'ERR_GRUDGE_ADAPTER_COST_OVER_BURST',
  )
  t.equal(ours.length, 1, 'logged once for three such requests')
  t.match(String((ours[0].err as { message: string }).message), /limit\.cost.*≤ burst = 2\.5.*received 3/)
  await f.close()
})

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: the same through warn, once`, async (t) => {
    const warned: string[] = []
    const m = grudgeExpress({ ...base(), limit: { rate: 1, burst: 2.5, cost: () => 3 }, warn: (s) => warned.push(s) })
    t.teardown(() => m.close())
    const a = make()
    a.get('/', m, (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, a)
    for (let i = 0; i < 3; i++) t.equal((await hit(url)).status, 500)
    t.equal(warned.filter((w) => w.includes('ERR_GRUDGE_ADAPTER_COST_OVER_BURST')).length, 1)
  })
}
