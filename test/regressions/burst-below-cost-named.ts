// `limit: { burst: 0.5 }` was reported as `option "limit.cost": expected … [0, burst = 0.5] …,
// received 1`, blaming an option the user never wrote. The burst is what was set: it comes
// first, named, with the bound a user can act on (the issue's "errors that blame the wrong
// option"). Checked through both adapters, as a user meets it.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import { grudge as grudgeExpress } from '../../plugins/express/index.js'

const firstLine = (message: string) => message.split('\n')[0]

t.test('Fastify: limit.burst below the default cost names limit.burst', async (t) => {
  const app = Fastify()
  await t.rejects(
    async () => {
      await app.register(grudgeFastify, { limit: { rate: 1, burst: 0.5 } })
      await app.ready()
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /^option "limit\.burst": expected a number ≥ 1 .*received 0\.5$/ },
  )
  await app.close()
})

t.test('Express: the same, and an explicit cost above the burst names limit.cost', async (t) => {
  let message = ''
  try {
    grudgeExpress({ limit: { rate: 1, burst: 0.5 } })
  } catch (e) {
    message = firstLine((e as Error).message)
  }
  t.match(message, /^option "limit\.burst": /)
  t.notMatch(message, /limit\.cost"/, 'cost was not written: not blamed')
  // a cost the user did write, above the burst: now cost is the one to name
  t.throws(() => grudgeExpress({ limit: { rate: 1, burst: 2, cost: 3 } }), { message: /^option "limit\.cost": / })
})
