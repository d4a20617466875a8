// The example API of examples/fastify-server.ts on Express 5: `npm run start:express`
// (PORT, default 3000; DATABASE_URL=postgres://… for PostgreSQL).
//
//   GET  /api/items, /api/items/:id, POST /api/orders   debt meter per IP + a tighter one per tenant
//   POST /login {username, password}                    abuse score: failures raise it, successes lower it
//   GET  /users/available?username=                     Bloom pre-check in front of the database
//   GET  /grudge/stats                                  the limiters' telemetry
import express, { type Express, type Request } from 'express'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import grudge from '../plugins/express/index.js'
import {
  API_PER_IP,
  API_PER_TENANT,
  DEFAULT_PER_IP,
  LOGIN_ABUSE,
  SKETCH,
  TENANT_HEADER,
  describeConfig,
} from './app/config.js'
import { startupBanner } from './app/banner.js'
import { openUsers, type UserDirectory } from './app/users.js'
import type { ExampleServerOptions } from './fastify-server.js'

/** Build the example API on Express (not listening yet); `close()` releases the limiters and the database. */
export async function buildExpressServer(options: ExampleServerOptions = {}): Promise<{
  app: Express
  users: UserDirectory
  config: Record<string, unknown>
  close: () => Promise<void>
}> {
  const users = await openUsers(options.databaseUrl, options.users)
  const app = express()
  app.set('trust proxy', options.trustProxy ?? false)
  const registry = {
    mightContain: (name: string, item: string) => name === 'users' && users.bloom.mightContain(item),
  }
  const usernameOf = (req: Request) => (typeof req.query.username === 'string' ? req.query.username : '')

  // each grudge() is its own limiter: /api/* stacks a per-IP and a per-tenant one
  const apiPerIp = grudge({ ...SKETCH, name: 'api-ip', limit: API_PER_IP })
  const apiPerTenant = grudge({
    ...SKETCH,
    name: 'api-tenant',
    key: 'tenant',
    tenantHeader: TENANT_HEADER,
    limit: API_PER_TENANT,
    skip: (req) => !req.headers[TENANT_HEADER],
  })
  const login = grudge({
    ...SKETCH,
    name: 'login',
    limit: DEFAULT_PER_IP,
    abuse: LOGIN_ABUSE,
  })
  const available = grudge({
    ...SKETCH,
    name: 'available',
    limit: DEFAULT_PER_IP,
    // surely not taken: answered here, the database is not consulted
    bloom: {
      registry,
      filter: 'users',
      item: usernameOf,
      onAbsent: (req, res) =>
        void res.json({
          username: usernameOf(req),
          available: true,
          dbConsulted: false,
        }),
    },
  })

  const api = express.Router()
  api.use(apiPerIp, apiPerTenant)
  api.get(
    '/items',
    (_req, res) =>
      void res.json({
        items: [
          { id: 1, name: 'anvil' },
          { id: 2, name: 'rocket skates' },
        ],
      }),
  )
  api.get(
    '/items/:id',
    (req, res) =>
      void res.json({
        id: Number(req.params.id),
        name: `item ${req.params.id}`,
      }),
  )
  api.post('/orders', (_req, res) => void res.status(201).json({ ok: true }))
  app.use('/api', api)

  app.post('/login', express.json(), login, async (req, res, next) => {
    try {
      const { username = '', password = '' } = (req.body ?? {}) as {
        username?: string
        password?: string
      }
      if (await users.checkPassword(String(username), String(password)))
        return void res.json({ ok: true, user: username })
      res.status(401).json({
        statusCode: 401,
        error: 'Unauthorized',
        message: 'wrong username or password',
      })
    } catch (err) {
      next(err)
    }
  })

  app.get('/users/available', available, async (req, res, next) => {
    try {
      const username = usernameOf(req)
      res.json({
        username,
        available: !(await users.exists(username)),
        dbConsulted: true,
      })
    } catch (err) {
      next(err)
    }
  })

  app.get('/grudge/stats', (_req, res) => {
    res.json({
      api: apiPerIp.stats(),
      tenants: apiPerTenant.stats(),
      login: login.stats(),
      available: available.stats(),
      database: { kind: users.kind, users: users.size, queries: users.queries },
    })
  })

  const close = async (): Promise<void> => {
    await Promise.all([apiPerIp.close(), apiPerTenant.close(), login.close(), available.close()])
    await users.close()
  }
  const config = describeConfig({
    framework: 'express',
    database: users.kind,
    users: users.size,
    trustProxy: options.trustProxy ?? false,
  })
  return { app, users, config, close }
}

// Run as a script: listen on PORT (default 3000), print the routes, a curl line and the configuration.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 3000)
  const { app, config, close } = await buildExpressServer({
    databaseUrl: process.env.DATABASE_URL,
    trustProxy: process.env.TRUST_PROXY === '1',
  })
  const host = process.env.HOST ?? '127.0.0.1'
  const server: Server = app.listen(port, host, () => {
    const { port: bound } = server.address() as AddressInfo
    process.stdout.write(startupBanner(`http://${host}:${bound}`, config))
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => server.close(() => void close().then(() => process.exit(0))))
  }
}
