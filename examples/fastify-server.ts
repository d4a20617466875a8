// A small realistic API protected by grudge, on Fastify: `npm start` (PORT, default 3000;
// DATABASE_URL=postgres://… for PostgreSQL instead of the embedded SQLite).
//
//   GET  /api/items, /api/items/:id, POST /api/orders   debt meter per IP + a tighter one per tenant
//   POST /login {username, password}                    abuse score: failures raise it, successes lower it
//   GET  /users/available?username=                     Bloom pre-check in front of the database
//   GET  /grudge/stats                                  the limiters' telemetry
import Fastify, { type FastifyInstance } from 'fastify'
import { pathToFileURL } from 'node:url'
import grudge from '../plugins/fastify/index.js'
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

/** Options of {@link buildFastifyServer}. */
export interface ExampleServerOptions {
  /** `postgres://…` for PostgreSQL; default the embedded SQLite database. */
  databaseUrl?: string
  /** Users to seed (default 10,000). */
  users?: number
  /** Take the client address from X-Forwarded-For (the demo simulates many clients over loopback this way); default false. */
  trustProxy?: boolean
  /** Fastify's logger; default true when run as a script. */
  logger?: boolean
}

/** Build the example API (not listening yet). */
export async function buildFastifyServer(options: ExampleServerOptions = {}): Promise<{
  app: FastifyInstance
  users: UserDirectory
  config: Record<string, unknown>
}> {
  const users = await openUsers(options.databaseUrl, options.users)
  const app = Fastify({
    logger: options.logger ?? false,
    trustProxy: options.trustProxy ?? false,
  })
  const registry = {
    mightContain: (name: string, item: string) => name === 'users' && users.bloom.mightContain(item),
    get: (name: string) => (name === 'users' ? users.bloom : undefined),
  }
  // every route below is limited per IP unless its config says otherwise
  await app.register(grudge, {
    ...SKETCH,
    limit: DEFAULT_PER_IP,
    bloomRegistry: registry,
  })

  // /api/*: one per-IP limiter shared by every route of the scope (a registration in a scope
  // limits that scope's routes; the outer one steps aside)
  let apiStats: () => unknown = () => undefined
  await app.register(
    async (api) => {
      await api.register(grudge, { ...SKETCH, limit: API_PER_IP })
      apiStats = () => api.grudge.stats()
      // the tighter per-tenant limit: a second limiter from hook(), which stacks with the
      // scope's per-IP one (both enforced, both listed in RateLimit-Policy / RateLimit)
      const perTenant = api.grudge.hook({
        key: 'tenant',
        tenantHeader: TENANT_HEADER,
        limit: API_PER_TENANT,
        // a request without the header is limited per IP only
        skip: (req) => !req.headers[TENANT_HEADER],
      })
      const opts = { onRequest: perTenant }
      api.get('/items', opts, () => ({
        items: [
          { id: 1, name: 'anvil' },
          { id: 2, name: 'rocket skates' },
        ],
      }))
      api.get<{ Params: { id: string } }>('/items/:id', opts, (req) => ({
        id: Number(req.params.id),
        name: `item ${req.params.id}`,
      }))
      api.post('/orders', opts, async (_req, reply) => reply.code(201).send({ ok: true }))
    },
    { prefix: '/api' },
  )

  app.post<{ Body: { username?: string; password?: string } }>(
    '/login',
    { config: { grudge: { abuse: LOGIN_ABUSE } } },
    async (req, reply) => {
      const { username = '', password = '' } = req.body ?? {}
      if (await users.checkPassword(String(username), String(password))) return { ok: true, user: username }
      return reply.code(401).send({
        statusCode: 401,
        error: 'Unauthorized',
        message: 'wrong username or password',
      })
    },
  )

  app.get<{ Querystring: { username?: string } }>(
    '/users/available',
    {
      config: {
        grudge: {
          bloom: {
            filter: 'users',
            item: (req) => String((req.query as { username?: string }).username ?? ''),
            // surely not taken: answered here, the database is not consulted
            onAbsent: (req) => ({
              username: String((req.query as { username?: string }).username ?? ''),
              available: true,
              dbConsulted: false,
            }),
          },
        },
      },
    },
    async (req) => {
      const username = String(req.query.username ?? '')
      return {
        username,
        available: !(await users.exists(username)),
        dbConsulted: true,
      }
    },
  )

  app.get('/grudge/stats', { config: { grudge: false } }, () => ({
    perIp: app.grudge.stats(),
    // the scope's limiters: per IP and the per-tenant hook
    api: apiStats(),
    database: { kind: users.kind, users: users.size, queries: users.queries },
  }))
  app.addHook('onClose', () => users.close())
  const config = describeConfig({
    framework: 'fastify',
    database: users.kind,
    users: users.size,
    trustProxy: options.trustProxy ?? false,
  })
  return { app, users, config }
}

// Run as a script: listen on PORT (default 3000), print the routes, a curl line and the configuration.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.env.PORT ?? 3000)
  const { app, config } = await buildFastifyServer({
    databaseUrl: process.env.DATABASE_URL,
    logger: true,
    trustProxy: process.env.TRUST_PROXY === '1',
  })
  const origin = await app.listen({ port, host: process.env.HOST ?? '127.0.0.1' })
  process.stdout.write(startupBanner(origin, config))
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void app.close().then(() => process.exit(0)))
}
