// An Express server limited by grudge: 10 requests per second per client address with
// bursts of 20 on everything, and a stricter limiter on the login route.
//   node --import tsx examples/express-basic.ts   then   curl -i http://127.0.0.1:3000/
import express from 'express'
import grudge from '../plugins/express/index.js'

const app = express()
app.set('trust proxy', false) // set to your proxy's address to key by X-Forwarded-For
// stacked middleware list one policy each in the RateLimit fields: name them, or the second
// unnamed one is listed as `express:<n>` (its creation order)
const limiter = grudge({ name: 'per-ip', limit: { rate: 10, burst: 20 } })
const login = grudge({
  name: 'login',
  limit: { rate: 0.1, burst: 5 },
  abuse: { weights: { 401: 1 }, threshold: 5, halfLifeMs: 15 * 60_000 },
})

app.use(limiter)
app.get('/', (req, res) => {
  res.json({ hello: 'world', remaining: req.grudge?.remaining })
})
app.post('/login', login, (_req, res) => {
  res.status(401).json({ error: 'bad credentials' })
})
app.get('/stats', (_req, res) => {
  res.json(limiter.stats())
})

const server = app.listen(3000, '127.0.0.1', () => console.log('listening on http://127.0.0.1:3000'))
server.on('close', () => void Promise.all([limiter.close(), login.close()]))
