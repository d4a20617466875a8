import t from 'tap'
import { fileURLToPath } from 'node:url'
import { runAllocChild } from '../fixtures/gc-count.js'

// The Redis sync store's decision allocates nothing per request on the adapters' path
// (Limiter.decideFigures → DebtMeter.charge), as the in-process store's: the debt meter
// passes its one reused result to the store's consumeInto (src/limit/store.ts,
// resultFillerOf) instead of taking a new object from tryConsume. Counted in garbage
// collections (fixtures/sync-alloc-child.ts): 10^5 decisions under a 1 MiB young generation,
// where a 32-byte result object per decision (3.2 MB) would be at least 3 scavenges. Before
// (tryConsume building its object inside the whole decision, too large to inline into the
// meter's charge, so V8's escape analysis could not drop it): 5 scavenges in each of 2 runs.
// Also while a folding twin's lazy fold is in progress (the child's 'sync-folding').
t.test('a sync store decision allocates nothing on the adapters path, as the local store', async (t) => {
  const child = fileURLToPath(new URL('./fixtures/sync-alloc-child.ts', import.meta.url))
  const { status, stderr, rows } = runAllocChild<{
    store: string
    minorGcs: number
    otherGcs: number
    heapGrowthBytes: number
    admitted: number
    foldCopied?: number
    folding?: boolean
  }>(child, ['--min-semi-space-size=1', '--max-semi-space-size=1'])
  t.equal(status, 0, `child exited cleanly: ${stderr}`)
  t.same(
    rows.map((r) => r.store),
    ['local', 'sync', 'sync-folding'],
  )
  const folding = rows.find((r) => r.store === 'sync-folding')!
  // each decision sweeps one cell (copied unless its key's fold took it before) and folds its
  // key's 4 (1024 keys in turn: folded by their first decision), so about one copy per decision
  t.ok((folding.foldCopied ?? 0) >= 90_000, `sync-folding: ${folding.foldCopied} twin cells folded while measured`)
  t.equal(folding.folding, true, 'sync-folding: the fold still in progress at the end')
  for (const r of rows) {
    t.equal(r.admitted, 100_000, `${r.store}: every decision admitted (the write path ran)`)
    t.equal(r.minorGcs, 0, `${r.store}: no scavenge over 10^5 decisions`)
    t.ok(r.heapGrowthBytes < 1_000_000, `${r.store}: heap grew ${r.heapGrowthBytes} B (< 10 B per decision)`)
  }
})
