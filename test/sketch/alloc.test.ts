import t from 'tap'
import { fileURLToPath } from 'node:url'
import { runAllocChild } from '../fixtures/gc-count.js'

// Zero allocation on the hot path: 10^5 update / tryUpdate / updateWithFloor / estimate /
// updateAndEstimate calls with pre-built 16- and 40-byte ASCII string keys, murmur3 and SipHash,
// exponential decay with a moving clock; 10^5 updates with keys holding a char ≥ U+0080 (hashKey's UTF-8 encoding fallback);
// 10^5 updates under the default clock (systemClock); and 10^5 calls of the explicit-time
// forms updateAt and updateAndEstimateAt.
// The smallest object V8 allocates (a heap number, 12–16 B) once per operation would be 1.2–1.6
// MB per run, more than the 1 MiB young generation the child runs with, i.e. at least one
// scavenge; we require none, and a heap growth below 1 MB (10 B per operation: the
// measurement itself leaves 0.1–0.5 MB, measured at 10^5 calls with nothing allocated).
// Measured in a child process without coverage instrumentation (see fixtures/alloc-child.ts),
// optimizing on the main thread (--no-concurrent-recompilation) so that on a loaded machine
// the measured loop does not start in unoptimized code while a background compile waits.
t.test('the hot-path operations allocate nothing over 10^5 calls', async (t) => {
  const child = fileURLToPath(new URL('./fixtures/alloc-child.ts', import.meta.url))
  const { status, stderr, rows } = runAllocChild<{
    hasher: string
    keyBytes: number
    keyKind: string
    op: string
    minorGcs: number
    otherGcs: number
    heapGrowthBytes: number
  }>(child, ['--min-semi-space-size=1', '--max-semi-space-size=1'])
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
    t.ok(row.heapGrowthBytes < 1_000_000, `${name}: heap grew ${row.heapGrowthBytes} B (< 10 B/op)`)
  }
})
