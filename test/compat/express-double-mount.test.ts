// One middleware instance mounted twice (app.use(l) and again on the route) charged a request
// twice. express-rate-limit refuses it (ERR_ERL_DOUBLE_COUNT); grudge charges once.
import t from 'tap'
import grudge from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { EXPRESS_VERSIONS, hit, serve } from './helpers/express-server.js'

for (const [label, make] of EXPRESS_VERSIONS) {
  t.test(`${label}: mounted with app.use and on the route, charged once`, async (t) => {
    const app = make()
    const l = grudge({ clock: new FakeClock(0), ticker: new FakeTicker(), limit: { rate: 1, burst: 3 } })
    t.teardown(() => l.close())
    app.use(l)
    app.get('/', l, (_req, res) => {
      res.send('ok')
    })
    const url = await serve(t, app)
    const codes: number[] = []
    const remaining: unknown[] = []
    for (let i = 0; i < 4; i++) {
      const r = await hit(url + '/')
      codes.push(r.status)
      remaining.push(r.headers['ratelimit'])
    }
    t.same(codes, [200, 200, 200, 429], 'burst 3 means three requests, not one and a half')
    t.same(remaining.slice(0, 3), ['"default";r=2;t=1', '"default";r=1;t=2', '"default";r=0;t=3'])
    t.equal(l.stats().requests, 4, 'one decision per request')
  })
}
