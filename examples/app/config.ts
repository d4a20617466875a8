// The policies of the example API, shared by the Fastify and the Express servers.
import type { AbuseScoreOptions } from '../../src/limit/abuse-score.js'
import type { DebtMeterOptions } from '../../src/limit/debt-meter.js'

/** `/api/*`, per client IP: 20 requests per second, bursts of 40. */
export const API_PER_IP: DebtMeterOptions = {
  rate: 20,
  burst: 40,
  name: 'api-ip',
}

/** `/api/*`, per tenant (`x-tenant-id`), tighter than a tenant's IPs together: 10 per second, bursts of 20. */
export const API_PER_TENANT: DebtMeterOptions = {
  rate: 10,
  burst: 20,
  name: 'api-tenant',
}

/** Header naming the tenant. */
export const TENANT_HEADER = 'x-tenant-id'

/** Every route, per client IP (login, availability): 5 requests per second, bursts of 20. */
export const DEFAULT_PER_IP: DebtMeterOptions = {
  rate: 5,
  burst: 20,
  name: 'default',
}

/**
 * `/login`: a failed login (401) adds 1 to the client's abuse score, a success takes 2 off;
 * at 5 the client is blocked (403) until the score, halving every 10 minutes, is below 5
 * again.
 */
export const LOGIN_ABUSE: AbuseScoreOptions = {
  weights: { '401': 1, success: -2 },
  threshold: 5,
  halfLifeMs: 600_000,
}

/** Sketch size of every policy: 4 × 16,384 cells (1 MiB per generation). */
export const SKETCH = { levels: 4, cellsPerLevel: 16_384 }

/** What the servers log at start. */
export function describeConfig(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    ...extra,
    policies: {
      '/api/*': {
        perIp: API_PER_IP,
        perTenant: { ...API_PER_TENANT, header: TENANT_HEADER },
      },
      '/login': { perIp: DEFAULT_PER_IP, abuse: LOGIN_ABUSE },
      '/users/available': {
        perIp: DEFAULT_PER_IP,
        bloom: 'users (1% false positives)',
      },
    },
    sketch: SKETCH,
  }
}
