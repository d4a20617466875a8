// A Fastify server limited by grudge: 10 requests per second per client address with bursts
// of 20, abusive clients (many 401/404) blocked with 403, and a per-route override.
//   node --import tsx examples/fastify-basic.ts   then   curl -i http://127.0.0.1:3000/
import Fastify from 'fastify'
import grudge from '../plugins/fastify/index.js'

const app = Fastify({ logger: true, trustProxy: false })
await app.register(grudge, {
  limit: { rate: 10, burst: 20 },
  abuse: { weights: { 401: 1, 404: 0.2, success: -0.1 }, threshold: 10, halfLifeMs: 10 * 60_000 },
})

app.get('/', (req, reply) => reply.send({ hello: 'world', remaining: req.grudge?.remaining }))
// a costly route: its own meter, keyed by tenant (falls back to the IP) and route
app.get(
  '/reports/:id',
  { config: { grudge: { key: ['tenant', 'route'], limit: { rate: 1, burst: 5 } } } },
  (_req, reply) => reply.send({ report: 'ok' }),
)
app.get('/health', { config: { grudge: false } }, (_req, reply) => reply.send('ok'))
app.get('/stats', { config: { grudge: false } }, (_req, reply) => reply.send(app.grudge.stats()))

await app.listen({ port: 3000, host: '127.0.0.1' })
