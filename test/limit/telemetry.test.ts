import t from 'tap'
import { Telemetry, suggestSize } from '../../src/limit/telemetry.js'
import { sketchFalsePositiveRate } from '../../src/sketch/sizing.js'
import { FakeClock } from '../../src/testing/index.js'
import { TELEMETRY_OPTION_KEYS, type TelemetryOptions } from '../../src/limit/telemetry.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('distinct keys by a Window of HyperLogLog within 3 %; the window forgets old buckets', async (t) => {
  const clock = new FakeClock(0)
  const tel = new Telemetry({ clock, bucketMs: 60_000, windowBuckets: 5 })
  for (let i = 0; i < 20_000; i++) tel.request('k' + (i % 10_000))
  const n = tel.distinctKeys()
  // HyperLogLog at p = 14 has a relative standard error of 1.04/√16384 ≈ 0.81 %; allow 3.7σ
  t.ok(Math.abs(n - 10_000) / 10_000 < 0.03, `estimate ${n} of 10000`)
  t.equal(tel.stats().requests, 20_000)
  clock.advance(5 * 60_000)
  tel.request('late')
  t.equal(tel.stats().requests, 1, 'buckets older than the window are dropped')
  t.equal(tel.distinctKeys(), 1, 'the HLL slots expired with the counters')
})

t.test('one warning when the estimated false-positive rate passes the target, with a size that meets it', async (t) => {
  const clock = new FakeClock(0)
  const warnings: string[] = []
  const tel = new Telemetry({ clock, targetFalsePositiveRate: 0.01, warn: (m) => warnings.push(m) })
  tel.addSketch(4, 256, () => 4 * 256 * 16)
  for (let i = 0; i < 50_000; i++) tel.request('k' + i)
  tel.checkHealth()
  tel.checkHealth()
  t.equal(warnings.length, 1)
  t.match(warnings[0], /suggested cellsPerLevel: \d+/)
  const s = tel.stats()
  t.ok(s.falsePositiveRate > 0.01)
  t.ok(
    sketchFalsePositiveRate(s.suggested.levels, s.suggested.cellsPerLevel, s.distinctKeys) <= 0.01,
    'the suggested size meets the target',
  )
  t.ok(
    sketchFalsePositiveRate(s.suggested.levels, s.suggested.cellsPerLevel - 1, s.distinctKeys) > 0.01 * 0.999,
    'and is about the smallest that does',
  )
})

t.test('suggestSize edge cases', async (t) => {
  t.same(suggestSize(4, 0, 0.01), { levels: 4, cellsPerLevel: 16 })
  t.ok(suggestSize(2, 1000, 0.001).cellsPerLevel > suggestSize(2, 1000, 0.01).cellsPerLevel)
})

t.test('the health check also runs when a new bucket starts, without anyone calling stats()', async (t) => {
  const clock = new FakeClock(0)
  const warnings: string[] = []
  const tel = new Telemetry({ clock, bucketMs: 1000, targetFalsePositiveRate: 0.01, warn: (m) => warnings.push(m) })
  tel.addSketch(2, 64, () => 2 * 64 * 16)
  for (let i = 0; i < 1000; i++) tel.request('k' + i)
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
