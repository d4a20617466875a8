// Child process of managed-crash.test.ts (not a test itself): adds items and checkpoints
// back to back, printing "saved <n>" after each checkpoint resolves, until it is killed.
import { ManagedBloomFilter } from '../../src/bloom/managed.js'

const path = process.argv[2]
const f = new ManagedBloomFilter({
  capacity: 200_000,
  errorRate: 0.01,
  path,
  seed: 77,
  writeChunkBytes: 4096,
  policy: { checkpointIntervalMs: Infinity, checkpointInsertThreshold: Infinity, checkpointOnShutdown: false },
})
let next = f.addedCount
process.stdout.write(`ready ${next}\n`)
for (;;) {
  for (let i = 0; i < 500; i++) f.add(`item-${next++}`)
  await f.checkpoint()
  process.stdout.write(`saved ${next}\n`)
}
