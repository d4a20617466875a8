// What the example servers print at startup: the routes to try, a curl line, and the
// configuration laid out for a person (not one 600-character JSON line).
import { TENANT_HEADER } from './config.js'

/** The example API's routes, the same on Fastify and Express; `test/examples/servers.test.ts` requests each one. */
export const EXAMPLE_ROUTES: readonly { method: 'GET' | 'POST'; path: string; what: string }[] = [
  { method: 'GET', path: '/api/items', what: `per-IP limit, plus a per-tenant limit with header ${TENANT_HEADER}` },
  { method: 'GET', path: '/api/items/1', what: 'the same limits' },
  { method: 'POST', path: '/api/orders', what: 'the same limits' },
  { method: 'POST', path: '/login', what: 'JSON {"username","password"}; failures raise an abuse score → 403' },
  {
    method: 'GET',
    path: '/users/available?username=alice',
    what: 'a Bloom filter answers unknown names without the database',
  },
  { method: 'GET', path: '/grudge/stats', what: "the limiters' statistics (not limited)" },
]

/** Render a configuration object as indented `key: value` lines (YAML-like). */
export function prettyConfig(value: unknown, indent = '  '): string {
  const lines: string[] = []
  const walk = (v: unknown, pad: string): void => {
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (x !== null && typeof x === 'object' && !Array.isArray(x)) {
        lines.push(`${pad}${k}:`)
        walk(x, pad + '  ')
      } else lines.push(`${pad}${k}: ${typeof x === 'string' ? x : JSON.stringify(x)}`)
    }
  }
  walk(value, indent)
  return lines.join('\n')
}

/**
 * The startup text: where the server listens, its routes, two curl lines and the configuration.
 * @param origin e.g. `http://127.0.0.1:3000`
 * @param config what `describeConfig` returned
 */
export function startupBanner(origin: string, config: Record<string, unknown>): string {
  const w = Math.max(...EXAMPLE_ROUTES.map((r) => r.method.length + 1 + r.path.length))
  return [
    `grudge example API listening on ${origin}`,
    'routes:',
    ...EXAMPLE_ROUTES.map((r) => `  ${`${r.method} ${r.path}`.padEnd(w)}  ${r.what}`),
    'try:',
    `  curl -i ${origin}/api/items -H '${TENANT_HEADER}: acme'`,
    `  for i in $(seq 50); do curl -s -o /dev/null -w '%{http_code} ' ${origin}/api/items; done; echo`,
    'configuration:',
    prettyConfig(config),
    '',
  ].join('\n')
}
