import t from 'tap'
import { readFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { ManagedBloomFilter } from '../../src/bloom/managed.js'
import { BloomFilter } from '../../src/bloom/bloom-filter.js'

// A checkpoint must not stall the event loop: the payload is copied, checksummed and written
// `writeChunkBytes` at a time, each write awaited (src/bloom/checkpoint-file.ts), so other
// callbacks run between chunks. This asserts that structure, not a time: it records every
// FileHandle write with the number of event-loop turns (a setImmediate loop runs once per
// turn) seen so far. A payload written in one piece, or chunks issued without awaiting each,
// fails it. How long a 10^7 / 0.001 filter's checkpoint blocks is measured by the Bloom bench.
t.test('a checkpoint writes chunk by chunk, and the event loop turns between the writes', async (t) => {
  const dir = t.testdir()
  const path = join(dir, 'big.bloom')
  const chunkBytes = 65_536
  const f = new ManagedBloomFilter({
    capacity: 1_000_000,
    errorRate: 0.001,
    path,
    seed: 3,
    policy: { checkpointIntervalMs: Infinity, checkpointInsertThreshold: Infinity, checkpointOnShutdown: false },
    writeChunkBytes: chunkBytes,
  })
  const chunks = Math.ceil(f.bitCount / 8 / chunkBytes)
  t.ok(chunks >= 20, `${chunks} chunks of ${chunkBytes} B`)
  for (let i = 0; i < 50_000; i++) f.add(`user:${i}`)

  const probe = await open(join(dir, 'probe'), 'w')
  const proto = Object.getPrototypeOf(probe) as { write: (...a: unknown[]) => Promise<unknown> }
  await probe.close()
  const original = proto.write
  let turns = 0
  let spinning = true
  const spin = (): void => {
    turns++
    if (spinning) setImmediate(spin)
  }
  const writes: { bytes: number; turns: number }[] = []
  proto.write = function (this: unknown, ...a: unknown[]) {
    writes.push({ bytes: (a[0] as Uint8Array).byteLength, turns })
    return original.apply(this, a)
  }
  let written: number
  try {
    setImmediate(spin)
    written = await f.checkpoint()
  } finally {
    proto.write = original
    spinning = false
  }
  t.equal(written, 1)
  const payload = writes.filter((w) => w.bytes === chunkBytes)
  t.ok(payload.length >= chunks - 1, `${payload.length} full-chunk writes for ${chunks} chunks`)
  t.ok(
    writes.every((w) => w.bytes <= chunkBytes),
    `no write above one chunk (largest ${Math.max(...writes.map((w) => w.bytes))} B)`,
  )
  const stalls = writes.filter((w, i) => i > 0 && w.turns <= writes[i - 1].turns).length
  t.equal(stalls, 0, `the event loop turned between every two writes (${turns} turns, ${writes.length} writes)`)
  const g = BloomFilter.deserialize(readFileSync(path))
  t.equal(g.addedCount, 50_000)
  let lost = 0
  for (let i = 0; i < 50_000; i++) if (!g.mightContain(`user:${i}`)) lost++
  t.equal(lost, 0)
  await f.close()
})
