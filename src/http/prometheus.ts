import type { GenerationStats, LimiterStats } from '../limit/telemetry.js'
import type * as PromClient from 'prom-client'
import { GrudgeError } from '../errors.js'

/**
 * Prometheus text exposition of limiter statistics, built with prom-client (an optional
 * peer dependency, loaded on first use).
 * @throws {GrudgeError} `ERR_GRUDGE_PEER_MISSING` when prom-client is not installed (the message says to install it)
 * @internal
 */
export async function prometheusText(stats: LimiterStats, prefix = 'grudge_'): Promise<string> {
  let prom: typeof PromClient
  try {
    prom = await import('prom-client')
  } catch (err) {
    throw new GrudgeError(
      'ERR_GRUDGE_PEER_MISSING',
      'grudge: prometheus() needs the optional peer dependency prom-client (npm install prom-client)',
      { cause: err },
    )
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
  g(
    'memory_bytes',
    'Memory in bytes of every store reporting to this telemetry and of the telemetry once: the sum of store_memory_bytes and telemetry_memory_bytes (spec/sizing.md §7)',
  ).set(stats.memoryBytes)
  g('telemetry_memory_bytes', "The telemetry's own HyperLogLog windows in bytes, counted once").set(
    stats.memory.telemetryBytes,
  )
  if (stats.memory.stores.length > 0) {
    const st = g('store_memory_bytes', 'Memory of each policy store of each limiter in bytes (all generations)', [
      'store',
      'policy',
    ])
    for (const s of stats.memory.stores) st.set({ store: s.store, policy: s.policy }, s.bytes)
  }
  g(
    'false_positive_rate',
    "The debt meter's predicted false-reject rate of a fresh key at the window's load (spec/sizing.md)",
  ).set(stats.falsePositiveRate)
  g(
    'load_factor',
    "The debt meter's load factor rho: offered cost per second of the latest check window (or its decayed mean, the larger) / (cells per level × rate) (spec/sizing.md §7)",
  ).set(stats.loadFactor)
  g(
    'requests_per_second',
    "The debt meter's offered requests per second, the load of its model: admitted plus refused ones, of the latest check window or its decayed mean (spec/sizing.md §7)",
  ).set(stats.requestsPerSecond)
  g(
    'requests_per_key',
    "B, the debt meter's admitted requests in the window per distinct key, at least 1: the model takes a key's requests as one jump of B × cost (spec/sizing.md §2.6)",
  ).set(stats.requestsPerKey)
  // the debt meter's suggested shape (stats().suggested, spec/sizing.md §7): present only when it
  // misses one of its two targets, so an alert can fire on the family's presence
  if (stats.suggested !== undefined)
    g(
      'suggested_cells_per_level',
      "The cells per level the debt meter's sizer suggests when its shape misses a target (reason: false-reject, or load-factor when only rho > 0.05 does); absent when none is needed",
      ['policy', 'levels', 'reason'],
    ).set(
      { policy: 'limit', levels: String(stats.suggested.levels), reason: stats.suggested.reason },
      stats.suggested.cellsPerLevel,
    )
  // per policy with a capacity model (stats().perPolicy, spec/sizing.md §2–4): the figures of
  // item 5 of issue 14, labelled by policy; shapes also for a fixed shape
  const models = Object.entries(stats.perPolicy)
  if (models.length > 0) {
    const rate = g(
      'policy_false_positive_rate',
      "Each policy's predicted rate for a fresh key at the window's load: limit false-reject, abuse false-block, fairness false-throttle (spec/sizing.md)",
      ['policy', 'predicts'],
    )
    const rho = g(
      'policy_load_factor',
      'Per policy: limit rho = offered cost per second / (cells per level × rate); abuse, fairness a = events per second / (cells per level × decay per second)',
      ['policy'],
    )
    const events = g(
      'policy_events_per_second',
      "Per policy, the model's load in the window: limit offered requests per second (latest check window), abuse and fairness scored events per second",
      ['policy'],
    )
    const background = g(
      'policy_background_score',
      "Abuse and fairness: a cell's mean background score, events per second × weight / (cells per level × decay per second)",
      ['policy'],
    )
    const bytes = g(
      'policy_memory_bytes',
      "Memory of each policy's store in bytes (all generations, a fleet's pending twin included)",
      ['policy'],
    )
    const levels = g('policy_levels', "Levels of each policy's sketch", ['policy'])
    for (const [policy, m] of models) {
      rate.set({ policy, predicts: m.predicts }, m.predictedRate)
      rho.set({ policy }, m.loadFactor)
      events.set({ policy }, m.eventsPerSecond)
      if (m.background !== undefined) background.set({ policy }, m.background)
      bytes.set({ policy }, m.sizeBytes)
      levels.set({ policy }, m.levels)
    }
  }
  const shapes = new Map<string, GenerationStats>(Object.entries(stats.perPolicy))
  for (const [policy, gen] of Object.entries(stats.generations ?? {})) shapes.set(policy, gen)
  if (shapes.size > 0) {
    const cells = g('generation_cells_per_level', 'Cells per level of each generation (0: the oldest, deciding)', [
      'policy',
      'generation',
    ])
    const resizes = g('resizes', 'Generations created with another size than the one before', ['policy'])
    const growths = g(
      'early_growths',
      'Early growths on a load jump (in process each folds the smaller live generations; in a fleet, a twin); also counted in resizes',
      ['policy'],
    )
    // the live early generations (spec/rotator.md §1 "Self-sizing"): in process a replaced
    // youngest (twin="false"), in a sync fleet a twin beside its base until it decides
    const early = [...shapes].flatMap(([policy, gen]) => gen.early.map((e) => ({ policy, e })))
    for (const [policy, gen] of shapes) {
      gen.cellsPerLevel.forEach((m, i) => cells.set({ policy, generation: String(i) }, m))
      resizes.set({ policy }, gen.resizes)
      growths.set({ policy }, gen.earlyGrowths)
    }
    if (early.length > 0) {
      const labelNames = ['policy', 'generation', 'twin']
      const earlyCells = g(
        'generation_early_cells_per_level',
        'Cells per level of a live generation grown early (twin: a fleet twin beside its base until it decides)',
        labelNames,
      )
      const earlyAt = g(
        'generation_early_decides_at_seconds',
        "When a generation grown early decides (or began to), in seconds on the store's clock (a fleet's: server time)",
        labelNames,
      )
      const earlyNow = g(
        'generation_early_deciding',
        'Whether a generation grown early decides now (1) or not yet (0)',
        labelNames,
      )
      for (const { policy, e } of early) {
        const labels = { policy, generation: String(e.generation), twin: String(e.twin) }
        earlyCells.set(labels, e.cellsPerLevel)
        earlyAt.set(labels, e.decidesAtMs / 1000)
        earlyNow.set(labels, e.deciding ? 1 : 0)
      }
    }
  }
  return registry.metrics()
}
