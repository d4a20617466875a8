import t from 'tap'
import { fileURLToPath } from 'node:url'
import { runAllocChild } from '../fixtures/gc-count.js'

// Zero allocation per add of a Space-Saving summary (the telemetry counts every refused request
// in one, spec/sizing.md §7): 10^5 adds of a skewed stream (a quarter to 50 keys, the rest spread,
// so adds both find kept keys and evict the least counter) under a 1 MiB young generation, as
// test/sketch/alloc.test.ts: one heap number per add (12–16 B) would be 1.2–1.6 MB, at least one
// scavenge; we require none, and a heap growth below 1 MB.
t.test('SpaceSaving.add allocates nothing over 10^5 calls', async (t) => {
  const child = fileURLToPath(new URL('./fixtures/space-saving-alloc-child.ts', import.meta.url))
  const { status, stderr, rows } = runAllocChild<{
    op: string
    minorGcs: number
    otherGcs: number
    heapGrowthBytes: number
  }>(child, ['--min-semi-space-size=1', '--max-semi-space-size=1'])
  t.equal(status, 0, `child exited cleanly: ${stderr}`)
  t.same(
    rows.map((r) => r.op),
    ['SpaceSaving.add'],
  )
  for (const row of rows) {
    t.equal(row.minorGcs, 0, `${row.op}: no scavenge`)
    t.ok(row.heapGrowthBytes < 1_000_000, `${row.op}: heap grew ${row.heapGrowthBytes} B (< 10 B/op)`)
  }
})
