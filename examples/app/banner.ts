// What the example servers print at startup: the routes to try, a curl line, and the
// configuration laid out for a person (not one 600-character JSON line).
import { API_PER_IP, TENANT_HEADER } from './config.js'

/**
 * Requests of the banner's curl loop on `/api/items`: past the per-IP burst plus what the rate
 * restores while sequential curls run (40 + 20/s × about 2 s even at 20 ms a curl), so the
 * loop shows 429s; 50 did not (a fast loop drained 20/s and stayed under 40 + 20).
 * `test/examples/servers.test.ts` runs the loop.
 */
export const DEMO_LOOP_REQUESTS = 120

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
    `  for i in $(seq ${DEMO_LOOP_REQUESTS}); do curl -s -o /dev/null -w '%{http_code} ' ${origin}/api/items; done; echo`,
    `  (per IP: bursts of ${API_PER_IP.burst}, ${API_PER_IP.rate}/s: 429s from about request ${API_PER_IP.burst + 1})`,
    'configuration:',
    prettyConfig(config),
    '',
  ].join('\n')
}
