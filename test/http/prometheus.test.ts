import t from 'tap'
import { prometheusText } from '../../src/http/prometheus.js'
import { Telemetry } from '../../src/limit/telemetry.js'
import { abuseFalseBlockRate, fairnessFalseThrottleRate, sketchFalsePositiveRate } from '../../src/sketch/sizing.js'
import { FakeClock } from '../../src/testing/index.js'
import { parsePrometheusText } from '../fixtures/prometheus-text.js'

/** The value of one sample of the text exposition, by metric name and exact label set (NaN when absent). */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `))
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1))
}

t.test('per-policy figures with a policy label: rate, load, background, bytes, levels, shapes', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 1000 })
  const debt = { rate: 1, burst: 3, cost: 1, maxDebt: 30 }
  const abuse = { weight: 1, lambdaPerSecond: Math.LN2 / 10, maxScore: 20 }
  const fair = { weight: 0.1, lambdaPerSecond: 0.1, maxScore: 1 }
  tel.addSketch({ policy: 'limit', levels: 4, cellsPerLevel: 128, generations: 2, sizeBytes: () => 111, debt })
  tel.addSketch({
    policy: 'abuse',
    levels: 2,
    cellsPerLevel: 1024,
    sizeBytes: () => 222,
    shape: () => ({ generationCellsPerLevel: [1024, 2048], resizes: 1 }),
    score: { load: (sps) => ({ ...abuse, eventsPerSecond: sps / abuse.weight }), threshold: 2 },
  })
  tel.addSketch({
    policy: 'fairness',
    levels: 3,
    cellsPerLevel: 256,
    generations: 2,
    sizeBytes: () => 333,
    score: { load: (sps) => ({ ...fair, eventsPerSecond: sps / fair.weight }) },
  })
  // 2 s: 100 admitted requests/s (the limit's load is the latest check window's, the last
  // finished second: spec/sizing.md §7), 30 abuse events/s, 20 failures/s (the window's means)
  for (let sec = 0; sec < 2; sec++) {
    for (let i = 0; i < 100; i++) {
      tel.request(`k${sec}:${i}`)
      tel.policy('limit', true)
    }
    clock.advance(1000)
  }
  for (let i = 0; i < 60; i++) tel.scored('abuse', 1)
  for (let i = 0; i < 40; i++) tel.scored('fairness', 0.1)
  const text = await prometheusText(tel.stats())
  const near = (got: number, want: number, what: string) =>
    t.ok(Math.abs(got - want) <= 1e-9 * Math.max(1e-300, Math.abs(want)), `${what}: ${got} vs ${want}`)
  const pL = sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 128 }, { ...debt, requestsPerSecond: 100 })
  const pA = abuseFalseBlockRate({ levels: 2, cellsPerLevel: 1024 }, { ...abuse, eventsPerSecond: 30 }, 2)
  const pF = fairnessFalseThrottleRate({ levels: 3, cellsPerLevel: 256 }, { ...fair, eventsPerSecond: 20 })
  t.ok(pL > 1e-4 && pA > 1e-6 && pF > 1e-4, `every rate has a figure: ${pL}, ${pA}, ${pF}`)
  const rate = 'grudge_policy_false_positive_rate'
  near(sample(text, rate, 'policy="limit",predicts="false-reject"'), pL, 'limit')
  near(sample(text, rate, 'policy="abuse",predicts="false-block"'), pA, 'abuse')
  near(sample(text, rate, 'policy="fairness",predicts="false-throttle"'), pF, 'fairness')
  near(sample(text, 'grudge_policy_load_factor', 'policy="limit"'), 100 / 128, 'ρ')
  near(sample(text, 'grudge_policy_load_factor', 'policy="abuse"'), 30 / (1024 * abuse.lambdaPerSecond), 'a')
  near(sample(text, 'grudge_policy_events_per_second', 'policy="fairness"'), 20, 'ν')
  near(sample(text, 'grudge_policy_background_score', 'policy="fairness"'), (20 * 0.1) / (256 * 0.1), 'background')
  t.ok(
    Number.isNaN(sample(text, 'grudge_policy_background_score', 'policy="limit"')),
    'no background for the debt meter',
  )
  t.equal(sample(text, 'grudge_policy_memory_bytes', 'policy="abuse"'), 222)
  t.equal(sample(text, 'grudge_policy_levels', 'policy="fairness"'), 3)
  t.equal(sample(text, 'grudge_generation_cells_per_level', 'policy="abuse",generation="1"'), 2048)
  t.equal(sample(text, 'grudge_generation_cells_per_level', 'policy="limit",generation="1"'), 128, 'a fixed shape too')
  t.equal(sample(text, 'grudge_resizes', 'policy="abuse"'), 1)
  t.equal(sample(text, 'grudge_resizes', 'policy="fairness"'), 0)
  // the suggested shape: ρ = 100 / 128 misses the 0.05 cap, and the fewest power-of-two cells
  // under it is 2,048 (100 / 0.05 = 2,000), same L
  const suggested = tel.stats().suggested
  t.ok(suggested !== undefined, 'stats() suggests a shape')
  t.equal(
    sample(text, 'grudge_suggested_cells_per_level', `policy="limit",levels="4",reason="${suggested?.reason}"`),
    2048,
    'suggested cells per level, with its reason',
  )
  // the top-level figures keep the debt meter's meaning
  near(Number(/^grudge_false_positive_rate (\S+)$/m.exec(text)?.[1]), pL, 'top level')
  // a valid exposition: metric and label names, one HELP and one TYPE per family, each label set once
  const families = parsePrometheusText(text)
  for (const [name, f] of families) t.ok(f.help !== undefined && f.type === 'gauge', `${name}: HELP and TYPE gauge`)
  t.equal(families.get('grudge_early_growths')?.samples.length, 3, 'early growths per policy (0 when not counted)')
  t.notOk(families.has('grudge_generation_early_cells_per_level'), 'no early-generation family without one')
})

t.test('early generations: one family each, a sample per live one, across policies', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 1000 })
  const debt = { rate: 1, burst: 3, cost: 1, maxDebt: 30 }
  const early = (generation: number, cellsPerLevel: number, twin: boolean, decidesAtMs: number, deciding: boolean) => ({
    generation,
    cellsPerLevel,
    twin,
    decidesAtMs,
    deciding,
  })
  tel.addSketch({
    policy: 'limit',
    levels: 4,
    cellsPerLevel: 128,
    sizeBytes: () => 111,
    debt,
    shape: () => ({
      generationCellsPerLevel: [1024, 128],
      resizes: 3,
      earlyGrowths: 2,
      early: [early(0, 1024, true, 12_500, true), early(1, 2048, true, 31_250, false)],
    }),
  })
  tel.addSketch({
    policy: 'abuse',
    levels: 2,
    cellsPerLevel: 64,
    sizeBytes: () => 222,
    shape: () => ({
      generationCellsPerLevel: [64, 256],
      resizes: 1,
      earlyGrowths: 1,
      early: [early(1, 256, false, 9000, false)],
    }),
    score: { load: (sps) => ({ weight: 1, lambdaPerSecond: 0.1, maxScore: 20, eventsPerSecond: sps }), threshold: 2 },
  })
  const text = await prometheusText(tel.stats())
  const families = parsePrometheusText(text) // throws on a second HELP/TYPE or a label set twice
  const cells = families.get('grudge_generation_early_cells_per_level')!
  t.equal(cells.type, 'gauge')
  t.same(
    cells.samples.map((s) => [s.labels, s.value]),
    [
      [{ policy: 'limit', generation: '0', twin: 'true' }, 1024],
      [{ policy: 'limit', generation: '1', twin: 'true' }, 2048],
      [{ policy: 'abuse', generation: '1', twin: 'false' }, 256],
    ],
  )
  t.same(
    families.get('grudge_generation_early_decides_at_seconds')!.samples.map((s) => s.value),
    [12.5, 31.25, 9],
    'in seconds',
  )
  t.same(
    families.get('grudge_generation_early_deciding')!.samples.map((s) => s.value),
    [1, 0, 0],
  )
  t.same(
    families.get('grudge_early_growths')!.samples.map((s) => [s.labels.policy, s.value]),
    [
      ['limit', 2],
      ['abuse', 1],
    ],
  )
  t.equal(text.split('\n').filter((l) => l === '# TYPE grudge_generation_early_deciding gauge').length, 1)
})

t.test('no policy model: no per-policy metrics', async (t) => {
  const tel = new Telemetry({ clock: new FakeClock(0) })
  const text = await prometheusText(tel.stats())
  t.notMatch(text, /grudge_policy_false_positive_rate/)
  t.notMatch(text, /grudge_generation_cells_per_level/)
  t.match(text, /grudge_false_positive_rate 0/)
  parsePrometheusText(text)
})

t.test('a debt meter that meets both targets: no suggested shape', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 1000 })
  tel.addSketch({
    policy: 'limit',
    levels: 4,
    cellsPerLevel: 128,
    generations: 2,
    sizeBytes: () => 1,
    debt: { rate: 1, burst: 3, cost: 1, maxDebt: 30 },
  })
  // 2 requests/s: ρ = 2 / 128 ≈ 0.016, under the 0.05 cap
  for (let sec = 0; sec < 2; sec++) {
    for (let i = 0; i < 2; i++) {
      tel.request(`k${sec}:${i}`)
      tel.policy('limit', true)
    }
    clock.advance(1000)
  }
  const stats = tel.stats()
  t.equal(stats.suggested, undefined)
  t.notMatch(await prometheusText(stats), /grudge_suggested_cells_per_level/)
})

t.test('without prom-client installed, prometheus() rejects with ERR_GRUDGE_PEER_MISSING naming it', async (t) => {
  const { execFileSync } = await import('node:child_process')
  const { fileURLToPath } = await import('node:url')
  const { uncoveredChildEnv } = await import('../fixtures/child-env.js')
  const register = fileURLToPath(new URL('../fixtures/no-prom-client-register.mjs', import.meta.url))
  const src = fileURLToPath(new URL('../../src/http/prometheus.ts', import.meta.url))
  // the child loads prometheus.ts through tsx with 'prom-client' unresolvable, calls it, prints the error
  const script = `
    const { prometheusText } = await import(${JSON.stringify(src)})
    try { await prometheusText({}); console.log(JSON.stringify({ ok: true })) }
    catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message, cause: e.cause?.code })) }
  `
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', '--import', register, '--input-type=module', '-e', script],
    {
      env: uncoveredChildEnv(),
      encoding: 'utf8',
    },
  )
  const r = JSON.parse(out.trim().split('\n').pop() as string) as Record<string, unknown>
  t.equal(r.code, 'ERR_GRUDGE_PEER_MISSING')
  t.equal(r.name, 'GrudgeError')
  t.match(r.message, /npm install prom-client/)
  t.equal(r.cause, 'ERR_MODULE_NOT_FOUND', 'the import failure is its cause')
})
