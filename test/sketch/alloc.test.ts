import t from 'tap'
import { fileURLToPath } from 'node:url'
import { runAllocChild } from '../fixtures/gc-count.js'

// Zero allocation on the hot path: 10^6 update / tryUpdate / updateWithFloor / estimate /
// updateAndEstimate calls with pre-built 16- and 40-byte ASCII string keys, murmur3 and SipHash,
// exponential decay with a moving clock; 10^6 updates with keys holding a char ≥ U+0080 (hashKey's UTF-8 encoding fallback);
// 10^6 updates under the default clock (systemClock); and 10^6 calls of the explicit-time
// forms updateAt and updateAndEstimateAt.
// One heap number per operation would be 16 MB per run, i.e. at least one scavenge of
// the young generation; we require none, and a heap growth below 1 byte per operation.
// Measured in a child process without coverage instrumentation (see fixtures/alloc-child.ts),
// optimizing on the main thread (--no-concurrent-recompilation) so that on a loaded machine
// the measured loop does not start in unoptimized code while a background compile waits.
t.test('the hot-path operations allocate nothing over 10^6 calls', async (t) => {
  const child = fileURLToPath(new URL('./fixtures/alloc-child.ts', import.meta.url))
  const { status, stderr, rows } = runAllocChild<{
    hasher: string
    keyBytes: number
    keyKind: string
    op: string
    minorGcs: number
    otherGcs: number
    heapGrowthBytes: number
  }>(child)
  t.equal(status, 0, `child exited cleanly: ${stderr}`)
  t.equal(
    rows.length,
    30,
    'murmur3 and siphash × (16 and 40 ASCII bytes × update, tryUpdate, updateWithFloor, estimate and updateAndEstimate + 17 and 41 non-ASCII bytes × update + 16 ASCII bytes × update with the default clock + 16 ASCII bytes × updateAt and updateAndEstimateAt)',
  )
  t.same(
    [...new Set(rows.map((r) => `${r.hasher} ${r.keyKind}`))],
    ['murmur3 ascii', 'siphash ascii', 'murmur3 latin1', 'siphash latin1'],
    'both hashers, both string paths',
  )
  for (const row of rows) {
    const name = `${row.op} ${row.hasher} ${row.keyBytes}-byte ${row.keyKind} keys`
    t.equal(row.minorGcs, 0, `${name}: no scavenge`)
    t.ok(row.heapGrowthBytes < 1_000_000, `${name}: heap grew ${row.heapGrowthBytes} B (< 1 B/op)`)
  }
})
