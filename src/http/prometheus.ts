import type { LimiterStats } from '../limit/telemetry.js'
import type * as PromClient from 'prom-client'

/**
 * Prometheus text exposition of limiter statistics, built with prom-client (an optional
 * peer dependency, loaded on first use).
 * @throws Error when prom-client is not installed (the message says to install it)
 * @internal
 */
export async function prometheusText(stats: LimiterStats, prefix = 'grudge_'): Promise<string> {
  let prom: typeof PromClient
  try {
    prom = await import('prom-client')
  } catch (err) {
    throw new Error('grudge: prometheus() needs the optional peer dependency prom-client (npm install prom-client)', {
      cause: err,
    })
  }
  const registry = new prom.Registry()
  const g = (name: string, help: string, labelNames: string[] = []) =>
    new prom.Gauge({ name: prefix + name, help, labelNames, registers: [registry] })
  g('requests', 'Requests in the statistics window').set(stats.requests)
  g('admitted', 'Requests admitted in the window').set(stats.admitted)
  g('rejected', 'Requests rejected in the window').set(stats.rejected)
  const per = g('policy_decisions', 'Per-policy decisions in the window', ['policy', 'result'])
  for (const [policy, c] of Object.entries(stats.policies)) {
    per.set({ policy, result: 'admitted' }, c.admitted)
    per.set({ policy, result: 'rejected' }, c.rejected)
  }
  g('distinct_keys', 'Estimated distinct keys in the window').set(stats.distinctKeys)
  g('memory_bytes', 'Memory of the sketches and counters in bytes').set(stats.memoryBytes)
  g(
    'false_positive_rate',
    "The debt meter's predicted false-reject rate of a fresh key at the window's load (spec/sizing.md)",
  ).set(stats.falsePositiveRate)
  g('load_factor', "The debt meter's load factor rho: admitted cost per second / (cells per level × rate)").set(
    stats.loadFactor,
  )
  g('requests_per_second', "The debt meter's admitted requests per second in the window").set(stats.requestsPerSecond)
  if (stats.generations !== undefined) {
    const cells = g('generation_cells_per_level', 'Cells per level of each generation (0: the oldest, deciding)', [
      'policy',
      'generation',
    ])
    const resizes = g('resizes', 'Generations created with another size than the one before', ['policy'])
    for (const [policy, gen] of Object.entries(stats.generations)) {
      gen.cellsPerLevel.forEach((m, i) => cells.set({ policy, generation: String(i) }, m))
      resizes.set({ policy }, gen.resizes)
    }
  }
  return registry.metrics()
}
