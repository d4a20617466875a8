// Child process of alloc.test.ts: runs 10^6 hot-path operations per case and prints, as
// one JSON line, the garbage collections observed and the heap growth during each run.
// Run in its own process (without coverage instrumentation) so that nothing but the
// measured loop runs while it is measured.
import { PerformanceObserver, constants } from 'node:perf_hooks'
import { Sketch } from '../../src/sketch/sketch.js'
import { exponential } from '../../src/sketch/decay.js'
import { murmur3, sipHash } from '../../src/hash/hasher.js'
import type { Hasher } from '../../src/hash/hasher.js'

const OPS = 1_000_000
const DISTINCT = 1 << 17
let minor = 0
let other = 0
const obs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++
    else other++
  }
})
obs.observe({ entryTypes: ['gc'] })

// Keys are built before the measured loop, as flat one-byte strings (like header values).
function buildKeys(bytes: number): string[] {
  const keys: string[] = []
  for (let i = 0; i < DISTINCT; i++) {
    const s = `client-${i.toString(36)}-`.padEnd(bytes, 'abcdefghijklmnopqrstuvwxyz0123456789')
    keys.push(Buffer.from(s.slice(0, bytes), 'latin1').toString('latin1'))
  }
  return keys
}

// A clock whose time lives in a Float64Array, so moving it allocates nothing (a number
// field holding a fraction would box on every store, charging the clock to the sketch).
const T = new Float64Array(1)
const clock = { now: () => T[0] }

function runUpdate(s: Sketch, keys: string[], n: number): void {
  const mask = DISTINCT - 1
  for (let i = 0; i < n; i++) {
    T[0] += 0.37
    s.update(keys[i & mask], 1.5)
  }
}
function runTryUpdate(s: Sketch, keys: string[], n: number): number {
  const mask = DISTINCT - 1
  let admitted = 0
  for (let i = 0; i < n; i++) {
    T[0] += 0.37
    if (s.tryUpdate(keys[i & mask], 1.5, 20)) admitted++
  }
  return admitted
}

const wait = () => new Promise((r) => setTimeout(r, 30))
const results: Array<{ hasher: string; keyBytes: number; op: string; minorGcs: number; otherGcs: number; heapGrowthBytes: number }> = []
for (const keyLen of [16, 40]) {
  const keys = buildKeys(keyLen)
  for (const make of [murmur3, sipHash] as Array<(seed: number) => Hasher>) {
    for (const op of ['update', 'tryUpdate'] as const) {
      const s = new Sketch({ levels: 4, cellsPerLevel: 100_000, decay: exponential(0.5), hasher: make(7), clock, lo: -5, hi: 50 })
      const run = op === 'update' ? (n: number) => runUpdate(s, keys, n) : (n: number) => runTryUpdate(s, keys, n)
      // warm up with several calls, so that the loop function itself (not only an
      // on-stack-replacement copy) is optimized when the measured call enters it
      for (let w = 0; w < 8; w++) run(OPS / 8)
      ;(globalThis as { gc?: () => void }).gc?.()
      await wait()
      minor = 0
      other = 0
      const before = process.memoryUsage().heapUsed
      run(OPS)
      const after = process.memoryUsage().heapUsed
      await wait()
      results.push({ hasher: s.hasher.name, keyBytes: keyLen, op, minorGcs: minor, otherGcs: other, heapGrowthBytes: after - before })
    }
  }
}
obs.disconnect()
process.stdout.write(JSON.stringify(results) + '\n')
