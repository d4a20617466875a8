import t from 'tap'
import { Telemetry } from '../../src/limit/telemetry.js'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'
import { FakeClock } from '../../src/testing/index.js'
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
  t.ok(sketchFalsePositiveRate({ levels: 4, cellsPerLevel: m / 2 }, load) > 0.01, 'half of it does not')
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
  for (let i = 0; i < 5000; i++) {
    tel.request('k' + i)
    tel.policy('limit', true)
  }
  const s = tel.stats()
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
