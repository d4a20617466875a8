// A Limiter's telemetry (its HyperLogLog windows: distinct keys and refused keys, a template
// and one slot per bucket) sat outside the `memory` budget: with `memory: '64KB'` and one
// policy, `stats().memoryBytes` read 69,632 bytes after two buckets and would have grown to
// about 118 KiB over the five-minute window. Each policy's budget now holds the telemetry's
// largest size, (windowBuckets + 1) × (2^12 + 2^10) bytes and the 6 KiB of its two refused-key
// summaries (spec/sizing.md §7), besides its cells and load meter.
import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import { DEFAULT_POLICY_MEMORY_BYTES } from '../../src/limit/options.js'
import { Telemetry, telemetryMaxBytes } from '../../src/limit/telemetry.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

function fill(memory: number | undefined, telemetry?: (clock: FakeClock) => Telemetry) {
  const clock = new FakeClock(0)
  const ticker = new FakeTicker()
  const l = new Limiter({
    limit: { rate: 1, burst: 10 },
    ...(memory === undefined ? {} : { memory }),
    clock,
    ticker,
    telemetry: telemetry?.(clock) ?? new Telemetry({ clock, warn: () => {} }),
  })
  // every bucket of the window holds a full slot: 7 minutes of traffic, one bucket per minute
  for (let m = 0; m < 7; m++) {
    for (let i = 0; i < 2000; i++) l.decide(`k${m}:${i}`)
    // a heavy hitter refused every minute fills the refused-key window too
    for (let i = 0; i < 30; i++) l.decide('heavy')
    clock.advance(60_000)
    ticker.tick()
  }
  l.decide('last')
  return l
}

t.test('the telemetry at its largest and the policy fit the budget together', async (t) => {
  t.equal(
    telemetryMaxBytes(),
    6 * (4096 + 1024) + 2 * 3072,
    '36 KiB at 5 buckets: the HyperLogLogs and two 3 KiB refused-key summaries',
  )
  for (const memory of [64 * 1024, 1_000_000, undefined]) {
    const l = fill(memory)
    const budget = memory ?? DEFAULT_POLICY_MEMORY_BYTES
    t.equal(l.telemetry.sizeBytes(), telemetryMaxBytes(), 'the window is full')
    const st = l.telemetry.stats()
    t.ok(st.memoryBytes <= budget, `${st.memoryBytes} ≤ ${budget}`)
    t.equal(st.memoryBytes, l.telemetry.sizeBytes() + l.limit!.store.sizeBytes())
    await l.close()
  }
})

t.test('the default still builds 4 × 65,536 cells, and a larger telemetry takes a larger share', async (t) => {
  const d = fill(undefined)
  t.equal(d.sketch.cellsPerLevel, 65_536)
  await d.close()
  // 700,000 B: (700,000 − 2,048 − 36,864) / (4 × 16 × 2.5) = 4,131.8 → 4,096 cells per level with the
  // default telemetry; with 60 buckets, 61 × 5,120 + 6,144 = 318,464 B of it: 2,371.8 → 2,048
  // (2.5: two generations and the half of one a growth holds while it folds)
  const small = fill(700_000)
  t.equal(small.sketch.cellsPerLevel, 4096)
  await small.close()
  const big = (clock: FakeClock) => new Telemetry({ clock, windowBuckets: 60, warn: () => {} })
  const l = fill(700_000, big)
  t.equal(l.sketch.cellsPerLevel, 2048)
  t.ok(l.telemetry.stats().memoryBytes <= 700_000)
  await l.close()
  t.throws(() => new Limiter({ memory: 8192, limit: { rate: 1, burst: 1 }, ticker: new FakeTicker() }), {
    code: 'ERR_GRUDGE_SIZING_BUDGET',
    message: /36864 for the limiter's telemetry/,
  })
})
