// Issue #19's Numbers: "stacked limits cost at most one extra sketch operation per extra
// policy". Every per-key operation on a policy's Rotator (the unit that holds a policy's
// generations) is counted, outermost calls only (consume calls consumeAt inside), over one
// Fastify request and one Express request with 1, 2 and 3 stacked debt meters.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { Rotator } from '../../src/sketch/rotator.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

const PER_KEY = [
  'update',
  'updateAt',
  'estimate',
  'estimateAt',
  'updateAndEstimate',
  'updateAndEstimateAt',
  'tryUpdate',
  'tryUpdateAt',
  'consume',
  'consumeAt',
  'estimateDetailed',
  'estimateDetailedAt',
] as const

let calls = 0
let depth = 0
const proto = Rotator.prototype as unknown as Record<string, (...a: unknown[]) => unknown>
for (const name of PER_KEY) {
  const original = proto[name]
  proto[name] = function (this: unknown, ...args: unknown[]) {
    if (depth === 0) calls++
    depth++
    try {
      return original.apply(this, args)
    } finally {
      depth--
    }
  }
}

const policies = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `p${i}`, rate: 1, burst: 100 }))

t.test('Fastify: n stacked debt meters cost n Rotator operations per request', async (t) => {
  for (const n of [1, 2, 3]) {
    const f = Fastify()
    const [first, ...rest] = policies(n)
    await f.register(grudgeFastify, { clock: new FakeClock(0), ticker: new FakeTicker(), limit: first })
    f.get('/', { preHandler: rest.map((limit) => f.grudge.hook({ limit })) }, async () => 'ok')
    await f.inject('/') // warm: nothing lazily built is counted
    calls = 0
    const r = await f.inject('/')
    t.equal(r.statusCode, 200)
    t.equal(calls, n, `${n} stacked: ${calls} Rotator operation(s)`)
    await f.close()
  }
})

for (const [label, express] of EXPRESS_VERSIONS)
  t.test(`${label}: n stacked debt meters cost n Rotator operations per request`, async (t) => {
    for (const n of [1, 2, 3]) {
      const mws = policies(n).map((limit) =>
        grudgeExpress({ clock: new FakeClock(0), ticker: new FakeTicker(), limit }),
      )
      t.teardown(() => {
        for (const mw of mws) mw.close()
      })
      const app = express()
      for (const mw of mws) app.use(mw)
      app.get('/', (_req, res) => res.send('ok'))
      const url = await serve(t, app)
      await hit(url + '/') // warm
      calls = 0
      const r = await hit(url + '/')
      t.equal(r.status, 200)
      t.equal(calls, n, `${n} stacked: ${calls} Rotator operation(s)`)
    }
  })
