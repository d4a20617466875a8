// A Redis store's transitions (issue #16): when its local fallback takes over, or Redis answers
// again, the adapters say so through the framework's logger, and stop listening on close.
import t from 'tap'
import Fastify from 'fastify'
import grudgeFastify from '../../plugins/fastify/index.js'
import grudgeExpress from '../../plugins/express/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { localStore, type StoreFactory } from '../../src/limit/store.js'
import { captureLog } from './helpers/log.js'

interface Event {
  type: 'down' | 'up' | 'schedule'
  policy: string
  message: string
  error?: unknown
}

/** An in-process store with the Redis stores' onEvent(listener) surface, driven by the test. */
function eventStore(): { store: StoreFactory; emit: (e: Event) => void; listeners: () => number } {
  const listeners = new Set<(e: Event) => void>()
  const base = localStore()
  const store = Object.assign((spec: Parameters<StoreFactory>[0]) => base(spec), {
    onEvent(l: (e: Event) => void) {
      listeners.add(l)
      return () => listeners.delete(l)
    },
  })
  return { store, emit: (e) => listeners.forEach((l) => l(e)), listeners: () => listeners.size }
}

const down: Event = {
  type: 'down',
  policy: 'limit:default',
  message: 'redis at 127.0.0.1:6390: connection refused (ECONNREFUSED); onStoreError local decides in process',
  error: new Error('connect ECONNREFUSED'),
}
const up: Event = { type: 'up', policy: 'limit:default', message: 'redis at 127.0.0.1:6390 answers again' }

t.test('fastify: down is a warn line, up an info line, each once; closing unsubscribes', async (t) => {
  const { lines, logger } = captureLog()
  const f = Fastify({ logger: { ...logger, level: 'info' } })
  const s = eventStore()
  await f.register(grudgeFastify, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    store: s.store,
    limit: { rate: 1, burst: 5 },
  })
  await f.ready()
  s.emit(down)
  s.emit(up)
  const ours = lines.filter((l) => typeof l.msg === 'string' && /redis at 127\.0\.0\.1:6390/.test(l.msg))
  // pino levels: 40 warn, 30 info
  t.match(ours, [
    { level: 40, msg: /^grudge: .*connection refused/, policy: 'limit:default' },
    { level: 30, msg: /^grudge: .*answers again/ },
  ])
  t.equal(ours.length, 2)
  await f.close()
  t.equal(s.listeners(), 0, 'no listener is left behind')
})

t.test('express: the events reach the warn option; close unsubscribes', async (t) => {
  const warned: string[] = []
  const s = eventStore()
  const l = grudgeExpress({
    warn: (m) => warned.push(m),
    store: s.store,
    limit: { rate: 1, burst: 5 },
    ticker: new FakeTicker(),
  })
  s.emit(down)
  t.match(warned, [/^grudge: redis at .*connection refused/])
  // a message the store already prefixed (the Redis stores write `grudge: <policy>: …`) is not
  // prefixed twice (seen as `grudge: grudge: limit:default: …` against a closed port)
  s.emit({ ...down, message: 'grudge: limit:default: redis at 127.0.0.1:6390: connection refused' })
  t.match(warned[1], /^grudge: limit:default: /)
  await l.close()
  t.equal(s.listeners(), 0)
})
