import t from 'tap'
import { Telemetry } from '../../src/limit/telemetry.js'
import { abuseFalseBlockRate, fairnessFalseThrottleRate, sketchFalsePositiveRate } from '../../src/sketch/sizing.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { Limiter } from '../../src/limit/limiter.js'
import { prometheusText } from '../../src/http/prometheus.js'
import { murmur3 } from '../../src/hash/hasher.js'
import { mulberry32 } from '../fixtures/mulberry32.js'
import { agrees } from '../../scripts/sizing-sim.js'
import { TELEMETRY_OPTION_KEYS, type TelemetryOptions } from '../../src/limit/telemetry.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('distinct keys by a Window of HyperLogLog within 3 %; the window forgets old buckets', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 60_000, windowBuckets: 5 })
  for (let i = 0; i < 20_000; i++) tel.request('k' + (i % 10_000))
  const n = tel.distinctKeys()
  // HyperLogLog at p = 12 has a relative standard error of 1.04/√4096 ≈ 1.6 %; allow 3.7σ
  t.ok(Math.abs(n - 10_000) / 10_000 < 0.06, `estimate ${n} of 10000`)
  t.equal(tel.stats().requests, 20_000)
  clock.advance(5 * 60_000)
  tel.request('late')
  t.equal(tel.stats().requests, 1, 'buckets older than the window are dropped')
  t.equal(tel.distinctKeys(), 1, 'the HLL slots expired with the counters')
})

t.test('a run of one key is added to the windows once per bucket, and again in each new bucket', async (t) => {
  // the HyperLogLogs are seeded at random: two keys share a register with probability about
  // 1/4,096 (distinct) and 1/1,024 (refused), and then count as one. So the exact counts are
  // asserted over 100 instances, allowing a few such collisions and never more than 2 (a run
  // added twice would count 3 in every instance); one instance failed about 1 run in 800
  let distinctTwo = 0
  let refusedTwo = 0
  let over = 0
  for (let i = 0; i < 100; i++) {
    const tel = new Telemetry({ clock: new FakeClock(0), bucketMs: 1000, windowBuckets: 1 })
    for (const k of [`a${i}`, `a${i}`, `b${i}`, `a${i}`, `a${i}`]) {
      tel.request(k)
      tel.policy('limit', false)
    }
    if (tel.distinctKeys() === 2) distinctTwo++
    if (tel.stats().hotKeys === 2) refusedTwo++
    if (tel.distinctKeys() > 2 || tel.stats().hotKeys > 2) over++
    if (i === 0) t.equal(tel.stats().requests, 5, 'every request counted')
  }
  t.ok(distinctTwo >= 95, `a, a, b, a, a: two distinct keys in ${distinctTwo} of 100`)
  t.ok(refusedTwo >= 95, `two distinct refused keys in ${refusedTwo} of 100`)
  t.equal(over, 0, 'never more than two')
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 1000, windowBuckets: 1 })
  tel.request('a')
  tel.policy('limit', false)
  // the next bucket is a new window slot (windowBuckets 1: the old one expires): the same key
  // as the last request must be added there, or the window would count none
  clock.advance(1000)
  tel.request('a')
  tel.policy('limit', false)
  t.equal(tel.distinctKeys(), 1, 'the key is counted in the new bucket')
  t.equal(tel.stats().hotKeys, 1, 'and as refused there')
})

t.test('one warning when the predicted false-reject rate passes the target, with a size that meets it', async (t) => {
  const clock = new FakeClock(0)
  const warnings: string[] = []
  const tel = new Telemetry({ clock, bucketMs: 1000, targetFalsePositiveRate: 0.01, warn: (m) => warnings.push(m) })
  const debt = { rate: 1, burst: 10, cost: 1, maxDebt: 100 }
  tel.addSketch({ policy: 'limit', levels: 4, cellsPerLevel: 256, sizeBytes: () => 4 * 256 * 16 * 2, debt })
  // 1,000 admitted requests per second on 256 cells per level at rate 1: ρ ≈ 3.9
  for (let s = 0; s < 5; s++) {
    for (let i = 0; i < 1000; i++) {
      tel.request(`k${s}:${i}`)
      tel.policy('limit', true)
    }
    clock.advance(1000)
  }
  tel.checkHealth()
  tel.checkHealth()
  t.equal(warnings.length, 1)
  t.match(warnings[0], /suggested cellsPerLevel: \d+/)
  const s = tel.stats()
  t.ok(s.falsePositiveRate > 0.01, `${s.falsePositiveRate}`)
  t.ok(s.loadFactor > 3, `ρ ${s.loadFactor}`)
  t.ok(s.suggested !== undefined && s.suggested.cellsPerLevel > 256, 'a larger size')
  const rps = s.requestsPerSecond
  t.ok(Math.abs(rps - 1000) < 1, 'the window holds 4 full seconds of 1,000 requests')
  const m = s.suggested?.cellsPerLevel ?? 0
  const load = { ...debt, requestsPerSecond: rps }
  t.ok(sketchFalsePositiveRate({ levels: 4, cellsPerLevel: m }, load) <= 0.01, 'the suggested size meets the target')
  t.equal(s.suggested?.reason, 'false-reject')
  // and ρ ≤ 0.05 (the sizer's second target): 1,000 / M ≤ 0.05 needs M ≥ 20,000, so 32,768
  t.equal(m, 32768, 'the fewest power of two meeting both targets')
  t.ok(
    sketchFalsePositiveRate({ levels: 4, cellsPerLevel: m / 2 }, load) > 0.01 || rps / (m / 2) > 0.05,
    'half of it misses one',
  )
})

t.test("a suggestion when ρ passes the sizer's 0.05 though fresh keys pass (heavy hitters lose ≈ ρ)", async (t) => {
  const clock = new FakeClock(0)
  const warnings: string[] = []
  const tel = new Telemetry({ clock, warn: (m) => warnings.push(m) })
  tel.addSketch({
    policy: 'limit',
    levels: 4,
    cellsPerLevel: 16384,
    sizeBytes: () => 0,
    debt: { rate: 1, burst: 10, cost: 1, maxDebt: 100 },
  })
  // 2,000 admitted requests in the current second on 16,384 cells per level: ρ ≈ 0.12, a fresh
  // key's predicted rate far under the 0.01 target
  for (let i = 0; i < 2000; i++) {
    clock.set(i / 2)
    tel.request('k' + i)
    tel.policy('limit', true)
  }
  const s = tel.stats()
  t.ok(s.falsePositiveRate < 1e-6, `predicted ${s.falsePositiveRate}`)
  t.ok(Math.abs(s.loadFactor - 2000 / 16384) < 1e-9, `ρ ${s.loadFactor}`)
  // ρ ≤ 0.05 at 2,000 requests/s and rate 1 needs M ≥ 40,000: the power of two 65,536
  t.same(s.suggested, { levels: 4, cellsPerLevel: 65536, reason: 'load-factor' })
  tel.checkHealth()
  t.equal(warnings.length, 0, 'the false-reject warning stays for a false-reject rate over its target')
})

t.test('no suggestion when the sketch is large enough (it never reads as advice to shrink)', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock })
  tel.addSketch({
    policy: 'limit',
    levels: 4,
    cellsPerLevel: 16384,
    sizeBytes: () => 0,
    debt: { rate: 1, burst: 10, cost: 1, maxDebt: 100 },
  })
  // 800 requests/s: ρ = 800 / 16,384 ≈ 0.049, under the sizer's 0.05 as well
  for (let i = 0; i < 800; i++) {
    tel.request('k' + i)
    tel.policy('limit', true)
  }
  const s = tel.stats()
  t.ok(s.loadFactor < 0.05, `ρ ${s.loadFactor}`)
  t.equal(s.suggested, undefined)
  t.ok(s.falsePositiveRate < 1e-6)
})

t.test('refused keys count as hot keys', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock })
  tel.addSketch({ policy: 'abuse', levels: 2, cellsPerLevel: 64, sizeBytes: () => 0 })
  for (let i = 0; i < 100; i++) {
    tel.request('bad' + i)
    tel.policy('limit', false)
  }
  const s = tel.stats()
  t.ok(Math.abs(s.hotKeys - 100) <= 10, `${s.hotKeys}`)
  t.equal(s.falsePositiveRate, sketchFalsePositiveRate({ levels: 2, cellsPerLevel: 64 }, { hotKeys: s.hotKeys }))
})

t.test('the health check also runs when a new bucket starts, without anyone calling stats()', async (t) => {
  const clock = new FakeClock(0)
  const warnings: string[] = []
  const tel = new Telemetry({ clock, bucketMs: 1000, targetFalsePositiveRate: 0.01, warn: (m) => warnings.push(m) })
  tel.addSketch({
    policy: 'limit',
    levels: 2,
    cellsPerLevel: 64,
    sizeBytes: () => 2 * 64 * 16,
    debt: { rate: 1, burst: 10, cost: 1, maxDebt: 100 },
  })
  for (let i = 0; i < 1000; i++) {
    tel.request('k' + i)
    tel.policy('limit', true)
  }
  t.equal(warnings.length, 0, 'not yet checked')
  clock.advance(1000)
  tel.request('next')
  t.equal(warnings.length, 1)
})

t.test('an unknown option throws naming it and the closest option; every option passes', async (t) => {
  const clock = new FakeClock(0)
  t.throws(
    () => new Telemetry(typo<TelemetryOptions>({ clock, bucketMS: 1000 })),
    unknownOption('bucketMS', 'bucketMs'),
  )
  const all: Required<TelemetryOptions> = {
    clock,
    bucketMs: 1000,
    windowBuckets: 3,
    targetFalsePositiveRate: 0.05,
    warn: () => {},
  }
  t.same(Object.keys(all).sort(), [...TELEMETRY_OPTION_KEYS].sort(), 'the test names every option')
  t.doesNotThrow(() => new Telemetry(all))
})

// Per-policy figures (issue #14 item 5): each checked against the model function of
// src/sketch/sizing.ts called here with the load the test drove, by hand (not through the
// policies' load mappings), and against a real Limiter measured on a fake clock.

t.test('an abuse-only limiter: falsePositiveRate is the false-block rate at the measured load', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 1000 })
  const [levels, M, w, threshold, maxScore, halfLifeS] = [2, 1024, 2, 5, 20, 10]
  const lambda = Math.LN2 / halfLifeS
  tel.addSketch({
    policy: 'abuse',
    levels,
    cellsPerLevel: M,
    generations: 2,
    sizeBytes: () => 12_345,
    score: {
      load: (sps) => ({ eventsPerSecond: sps / w, weight: w, lambdaPerSecond: lambda, maxScore }),
      threshold,
    },
  })
  // 5 s of 100 events/s of weight 2, plus forgiving deltas the model leaves out; the window
  // of 5 buckets holds them all at t = 5 s
  for (let s = 0; s < 5; s++) {
    for (let i = 0; i < 100; i++) {
      tel.request(`k${s}:${i}`)
      tel.policy('abuse', true)
      tel.scored('abuse', w)
      tel.scored('abuse', -0.5)
    }
    clock.advance(1000)
  }
  const s = tel.stats()
  const m = s.perPolicy.abuse!
  const load = { eventsPerSecond: 100, weight: w, lambdaPerSecond: lambda, maxScore }
  const want = abuseFalseBlockRate({ levels, cellsPerLevel: M }, load, threshold)
  t.ok(want > 1e-4 && want < 0.5, `a load with a figure to read: ${want}`)
  t.equal(m.predicts, 'false-block')
  t.ok(Math.abs(m.eventsPerSecond - 100) < 1e-9, `ν ${m.eventsPerSecond}`)
  t.ok(Math.abs(m.predictedRate - want) <= 1e-12 * want, `${m.predictedRate} vs ${want}`)
  t.equal(s.falsePositiveRate, m.predictedRate, 'the top-level figure is the score model, not the hot-key formula')
  t.ok(Math.abs(m.loadFactor - 100 / (M * lambda)) < 1e-12, `a = ν/(Mλ) ${m.loadFactor}`)
  t.ok(Math.abs(m.background! - (100 * w) / (M * lambda)) < 1e-12, `background ${m.background}`)
  t.same(m.cellsPerLevel, [M, M], 'a fixed shape: each generation M')
  t.equal(m.resizes, 0)
  t.equal(m.sizeBytes, 12_345)
  t.equal(m.levels, levels)
  t.equal(s.perPolicy.limit, undefined, 'no debt meter, no limit figures')
  t.equal(s.loadFactor, 0, 'the top-level load factor keeps its meaning: the debt meter’s')
  // the health warning names the score's figures
  const warned: string[] = []
  const tel2 = new Telemetry({ clock, bucketMs: 1000, targetFalsePositiveRate: want / 2, warn: (x) => warned.push(x) })
  tel2.addSketch({
    policy: 'abuse',
    levels,
    cellsPerLevel: M,
    sizeBytes: () => 0,
    score: { load: (sps) => ({ ...load, eventsPerSecond: sps / w }), threshold },
  })
  for (let i = 0; i < 100; i++) tel2.scored('abuse', w)
  tel2.checkHealth()
  t.equal(warned.length, 1)
  t.match(warned[0], /abuse false-block .* 100 scored events\/s/)
})

t.test(
  'abuse and fairness together: 1 − (1 − p_block)(1 − p_throttle); a debt meter keeps the top level',
  async (t) => {
    const clock = new FakeClock(0)
    const tel = new Telemetry({ clock, bucketMs: 1000, windowBuckets: 3 })
    const fair = { weight: 0.1, lambdaPerSecond: 0.1, maxScore: 1 }
    const abuse = { weight: 1, lambdaPerSecond: Math.LN2 / 60, maxScore: 40 }
    tel.addSketch({
      policy: 'fairness',
      levels: 3,
      cellsPerLevel: 256,
      sizeBytes: () => 0,
      shape: () => ({ generationCellsPerLevel: [256, 512], resizes: 3 }),
      score: { load: (sps) => ({ ...fair, eventsPerSecond: sps / fair.weight }) },
    })
    tel.addSketch({
      policy: 'abuse',
      levels: 4,
      cellsPerLevel: 64,
      sizeBytes: () => 0,
      score: { load: (sps) => ({ ...abuse, eventsPerSecond: sps / abuse.weight }), threshold: 10 },
    })
    // 2.5 s in: the window spans 2.5 s; 40 failures and 10 abuse events per second
    for (let k = 0; k < 100; k++) tel.scored('fairness', 0.1)
    for (let k = 0; k < 25; k++) tel.scored('abuse', 1)
    clock.advance(2500)
    const s = tel.stats()
    // the deciding generation is the oldest: 256 cells, not the 512 of the youngest
    const pF = fairnessFalseThrottleRate({ levels: 3, cellsPerLevel: 256 }, { ...fair, eventsPerSecond: 40 })
    const pA = abuseFalseBlockRate({ levels: 4, cellsPerLevel: 64 }, { ...abuse, eventsPerSecond: 10 }, 10)
    t.ok(pF > 1e-3 && pA > 1e-6, `figures to read: ${pF}, ${pA}`)
    t.equal(s.perPolicy.fairness!.predicts, 'false-throttle')
    t.ok(
      Math.abs(s.perPolicy.fairness!.predictedRate - pF) <= 1e-12 * pF,
      `${s.perPolicy.fairness!.predictedRate} vs ${pF}`,
    )
    t.ok(Math.abs(s.perPolicy.abuse!.predictedRate - pA) <= 1e-12 * pA)
    t.ok(Math.abs(s.falsePositiveRate - (1 - (1 - pA) * (1 - pF))) < 1e-15, `${s.falsePositiveRate}`)
    t.same(s.perPolicy.fairness!.cellsPerLevel, [256, 512])
    t.equal(s.perPolicy.fairness!.resizes, 3)
    t.ok(Math.abs(s.perPolicy.fairness!.eventsPerSecond - 40) < 1e-9)
    // with a debt meter the top level is the debt meter's, as before; perPolicy.limit says the same
    const debt = { rate: 1, burst: 3, cost: 1, maxDebt: 30 }
    tel.addSketch({ policy: 'limit', levels: 4, cellsPerLevel: 128, sizeBytes: () => 0, debt })
    for (let i = 0; i < 250; i++) {
      tel.request(`x${i}`)
      tel.policy('limit', true)
    }
    const d = tel.stats()
    // the debt meter's load is the latest check window's (spec/sizing.md §7): 250 requests in the
    // current second so far, not the window's mean of 100 per second
    const pL = sketchFalsePositiveRate({ levels: 4, cellsPerLevel: 128 }, { ...debt, requestsPerSecond: 250 })
    t.ok(pL > 1e-4, `${pL}`)
    t.ok(Math.abs(d.falsePositiveRate - pL) <= 1e-12 * pL, `${d.falsePositiveRate} vs ${pL}`)
    t.equal(d.perPolicy.limit!.predictedRate, d.falsePositiveRate)
    t.equal(d.perPolicy.limit!.predicts, 'false-reject')
    t.equal(d.perPolicy.limit!.loadFactor, d.loadFactor)
    t.ok(Math.abs(d.loadFactor - 250 / 128) < 1e-12, `ρ ${d.loadFactor}`)
    t.equal(d.perPolicy.limit!.background, undefined)
  },
)

/** Poisson background events through `event` at ν per second and probes of fresh keys, on a fake clock (spec/sizing.md §6.2). */
function simulateLimiter(
  l: Limiter,
  clock: FakeClock,
  ticker: FakeTicker,
  o: { nu: number; probes: number; measureMs: number; warmMs: number; periodMs: number; seed: number },
  event: (key: string) => void,
  denied: (policy: string | undefined) => boolean,
) {
  const random = mulberry32(o.seed)
  const endMs = o.warmMs + o.measureMs
  const probePerMs = o.probes / o.measureMs
  let nextEvent = -Math.log(1 - random()) / (o.nu / 1000)
  let nextProbe = o.warmMs - Math.log(1 - random()) / probePerMs
  let nextTickMs = o.periodMs
  let keys = 0
  let probes = 0
  let hits = 0
  for (;;) {
    const at = Math.min(nextEvent, nextProbe)
    if (at >= endMs) break
    while (at >= nextTickMs) {
      clock.set(nextTickMs)
      ticker.tick()
      nextTickMs += o.periodMs
    }
    clock.set(at)
    if (nextEvent <= nextProbe) {
      event(`e${keys++}`)
      nextEvent += -Math.log(1 - random()) / (o.nu / 1000)
    } else {
      probes++
      const d = l.decide(`p${keys++}`) as { admitted: boolean; policy?: string }
      if (!d.admitted && denied(d.policy)) hits++
      nextProbe += -Math.log(1 - random()) / probePerMs
    }
  }
  return { probes, hits, measured: hits / Math.max(1, probes) }
}

t.test('a real Limiter: stats() predicts the false-block and false-throttle rates it measures', async (t) => {
  // §6.2's points at M = 128: abuse L 2, a = 0.5, w 1, T 1 and fairness L 2, a = 1, w 0.1.
  // 10,000 probes, about 240 and 600 hits: 1σ ≤ 7 %, far inside the 2× of §6
  const M = 128
  for (const p of [
    { policy: 'abuse', a: 0.5, seed: 3 },
    { policy: 'fairness', a: 1, seed: 4 },
  ] as const) {
    const clock = new FakeClock(0)
    const ticker = new FakeTicker()
    // one bucket holds the whole run: the window's rate is the run's
    const telemetry = new Telemetry({ clock, bucketMs: 2 ** 40, windowBuckets: 1 })
    const rnd = mulberry32(p.seed + 100)
    const base = { clock, ticker, telemetry, levels: 2, cellsPerLevel: M, hasher: murmur3(p.seed), random: rnd }
    const l =
      p.policy === 'abuse'
        ? new Limiter({ ...base, abuse: { weights: { 500: 1 }, threshold: 1, halfLifeMs: 10_000 } })
        : new Limiter({ ...base, fairness: { failureDelta: 0.1, lambdaPerSecond: 0.1 } })
    const lambda = p.policy === 'abuse' ? Math.LN2 / 10 : 0.1
    const periodMs = p.policy === 'abuse' ? l.abuse!.periodMs : l.fairness!.periodMs
    const nu = p.a * M * lambda
    const r = simulateLimiter(
      l,
      clock,
      ticker,
      { nu, probes: 10_000, measureMs: (200 / lambda) * 1000, warmMs: 2 * periodMs, periodMs, seed: p.seed },
      (key) =>
        void l.record(key, p.policy === 'abuse' ? { failed: false, abuseDelta: 1 } : { failed: true, abuseDelta: 0 }),
      (policy) => policy === p.policy,
    )
    const s = telemetry.stats()
    const m = s.perPolicy[p.policy]!
    // the measured load is the offered one, to Poisson noise (tens of thousands of events: < 2 %)
    t.ok(Math.abs(m.eventsPerSecond / nu - 1) < 0.02, `${p.policy}: ν measured ${m.eventsPerSecond}, offered ${nu}`)
    const shape = { levels: 2, cellsPerLevel: M }
    const at = (ev: number) =>
      p.policy === 'abuse'
        ? abuseFalseBlockRate(shape, { eventsPerSecond: ev, weight: 1, lambdaPerSecond: lambda, maxScore: 4 }, 1)
        : fairnessFalseThrottleRate(shape, { eventsPerSecond: ev, weight: 0.1, lambdaPerSecond: lambda, maxScore: 1 })
    t.ok(Math.abs(m.predictedRate - at(m.eventsPerSecond)) <= 1e-12, 'the model at the measured load')
    t.ok(r.hits >= 100, `enough hits (${r.hits})`)
    t.ok(
      agrees({ predicted: m.predictedRate, measured: r.measured }),
      `${p.policy}: measured ${r.measured} (${r.hits} of ${r.probes}), stats() predicts ${m.predictedRate}`,
    )
    t.equal(s.falsePositiveRate, m.predictedRate)
    const text = await prometheusText(s)
    const predicts = p.policy === 'abuse' ? 'false-block' : 'false-throttle'
    t.match(text, new RegExp(`grudge_policy_false_positive_rate\\{policy="${p.policy}",predicts="${predicts}"\\} `))
    await l.close()
  }
})

t.test('a refusal that escalates counts as an abuse event of the refusal weight', async (t) => {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const telemetry = new Telemetry({ clock, bucketMs: 1000 })
  const l = new Limiter({
    clock,
    ticker,
    telemetry,
    levels: 2,
    cellsPerLevel: 64,
    limit: { rate: 1, burst: 1 },
    abuse: { weights: { 401: 1 }, refusalWeight: 3, threshold: 100 },
  })
  // one admitted, three refused: 3 × 3 score; one response of weight 1, one forgiving
  for (let i = 0; i < 4; i++) l.decide('hammer')
  void l.record('hammer', { failed: false, abuseDelta: 1 })
  void l.record('hammer', { failed: false, abuseDelta: -0.1 })
  clock.advance(2000)
  const m = telemetry.stats().perPolicy.abuse!
  // w = 3 (the heaviest positive weight): (9 + 1) / 3 events over 2 s
  t.ok(Math.abs(m.eventsPerSecond - 10 / 3 / 2) < 1e-12, `ν ${m.eventsPerSecond}`)
  await l.close()
})
