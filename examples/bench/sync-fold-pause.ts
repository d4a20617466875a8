// `npm run bench -- sync-fold-pause [--quick]`: the event-loop
// pause of a Redis sync store's fold (spec/cluster.md "Early growth", _The fold_) at a folding
// twin's switch, before and after the bounded fold, in ONE process, alternating rounds, on a
// private redis-server (started on a free port, killed by its PID at the end).
//
// The review's case: a self-sized policy (L = 4, N = 2) whose two live generations of 1,024
// cells per level get folding twins of 65,536 (23.6 MB held), the records written by the bench
// as another instance would, 4,096 keys written before the switch. Per round, a fresh store:
// the calls (`tryConsume`) across the switch, each timed alone (hrtime), and the cells each
// copied (`foldCellsCopied`); then the sync after them, its longest event-loop turn (the gaps of
// a setImmediate chain running beside it). `before`: every fold at once in the call that
// crosses the switch (`foldSliceCells = Infinity`: `Sketch.foldFrom` and the sums' fold, the
// code as it was); `after`: the default, 8,192 cells per call plus its key's, the rest by the
// sync a slice per turn. Medians over the rounds, with the spread.
//
// On a shared machine timings are provisional: the ratio within one run is what counts; the
// load average is printed. The cells copied per call are exact (test/cluster/sync-fold-bounded.test.ts
// asserts the bound).
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import { redisStore } from '../../src/cluster/redis-store.js'
import type { RedisSyncStore } from '../../src/cluster/sync-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { linear } from '../../src/sketch/decay.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { privateRedisServer } from './redis-time.js'

const quick = process.argv.includes('--quick')
const ROUNDS = quick ? 2 : 5
const FROM = 1024
const TO = quick ? 16_384 : 65_536
const L = 4
const KEYS = 4096
/** Calls timed from the switch on (the lazy fold of 2 × 4 × 65,536 cells takes 64 at 8,192 a call). */
const CALLS = 400
const SEED = '5eed5eed5eed5eed5eed5eed5eed5eed'
const PERIOD = 3_600_000

const spec: StoreSpec = {
  name: 'fold-pause',
  sketch: { levels: L, cellsPerLevel: FROM, decay: linear(20), lo: 0, hi: 100 },
  generations: 2,
  periodMs: PERIOD,
  sizing: {
    sizeNextGeneration: () => FROM,
    minCellsPerLevel: 16,
    maxCellsPerLevel: TO,
    growEarlyWhen: () => false, // the twins are the bench's own records
    checkEveryMs: 1000,
  },
}
const keys = Array.from({ length: KEYS }, (_, i) => `k${i}`)
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const spread = (xs: number[], digits: number) => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`

interface Round {
  maxCallMs: number
  switchCallMs: number
  maxCopied: number
  callsCopying: number
  syncMs: number
  syncTurnMs: number
}

const server = await privateRedisServer()
if (server === undefined) throw new Error('redis-server not found on PATH')
const admin = new Redis(server.url)
let n = 0
try {
  const round = async (mode: 'before' | 'after'): Promise<Round> => {
    const prefix = `fold${n++}`
    const T0 = 10 * PERIOD + 1000
    const clock = new FakeClock(T0)
    const store = redisStore({
      redis: server.url,
      seed: SEED,
      prefix,
      mode: 'sync',
      clock,
      ticker: new FakeTicker(),
      timeoutMs: 2000,
      onStoreError: 'local',
    })(spec) as RedisSyncStore
    if (mode === 'before') store.foldSliceCells = Infinity
    await store.ready()
    for (const k of keys) store.tryConsume(k, 1, 10)
    const SWITCH = T0 + 2000
    const ids = store.liveShapes().map((g) => g.id)
    for (const id of ids)
      await admin.set(`${prefix}:{fold-pause}:s${id}+`, `${store.shape.fingerprint}:${SWITCH}:${TO}:fold`)
    await store.sync(true) // adopts the records
    if (store.liveShapes().some((g) => g.twin !== TO)) throw new Error('the store did not adopt the folding twins')
    for (const k of keys) store.tryConsume(k, 1, 10)
    await store.sync(true)
    ;(globalThis as { gc?: () => void }).gc?.()
    clock.set(SWITCH)
    let maxCallMs = 0
    let switchCallMs = 0
    let maxCopied = 0
    let callsCopying = 0
    for (let i = 0; i < CALLS; i++) {
      const before = store.foldCellsCopied
      const t0 = process.hrtime.bigint()
      store.tryConsume(keys[(i * 7) % KEYS], 1, 10)
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      const copied = store.foldCellsCopied - before
      if (i === 0) switchCallMs = ms
      if (ms > maxCallMs) maxCallMs = ms
      if (copied > maxCopied) maxCopied = copied
      if (copied > 0) callsCopying++
    }
    if (store.liveShapes().some((g) => g.cellsPerLevel !== TO)) throw new Error('the twins do not decide')
    // the sync after the calls (it finishes a fold still in progress), its longest turn beside it
    let last = performance.now()
    let longest = 0
    let probing = true
    const probe = () => {
      const now = performance.now()
      if (now - last > longest) longest = now - last
      last = now
      if (probing) setImmediate(probe)
    }
    setImmediate(probe)
    const s0 = performance.now()
    await store.sync(true)
    const syncMs = performance.now() - s0
    probing = false
    await new Promise((r) => setImmediate(r))
    await store.close()
    return { maxCallMs, switchCallMs, maxCopied, callsCopying, syncMs, syncTurnMs: longest }
  }
  const load0 = loadavg()
  const rows: Record<'before' | 'after', Round[]> = { before: [], after: [] }
  await round('after') // warm-up: compiled code for both
  for (let r = 0; r < ROUNDS; r++) {
    const order: ('before' | 'after')[] = r % 2 === 0 ? ['before', 'after'] : ['after', 'before']
    for (const mode of order) rows[mode].push(await round(mode))
  }
  const load1 = loadavg()
  const bytes = 2 * L * TO * 45
  console.log(
    `sync store fold, 2 generations × ${L} levels, ${FROM} → ${TO} cells per level (${(bytes / 1e6).toFixed(1)} MB held), ${ROUNDS} rounds:`,
  )
  for (const mode of ['before', 'after'] as const) {
    const rs = rows[mode]
    const m = (f: (r: Round) => number, d: number) => `${median(rs.map(f)).toFixed(d)} (${spread(rs.map(f), d)})`
    console.log(
      `  ${mode === 'before' ? 'before (all at once)' : 'after (bounded)     '}  longest call ${m((r) => r.maxCallMs, 2)} ms, the switch's call ${m((r) => r.switchCallMs, 2)} ms; at most ${median(rs.map((r) => r.maxCopied))} cells copied in a call, ${median(rs.map((r) => r.callsCopying))} calls copying; the sync after: ${m((r) => r.syncMs, 1)} ms, its longest turn ${m((r) => r.syncTurnMs, 2)} ms`,
    )
  }
  console.log(
    `load average ${load0.map((x) => x.toFixed(2)).join(' ')} before, ${load1.map((x) => x.toFixed(2)).join(' ')} after`,
  )
} finally {
  admin.disconnect()
  server.child.kill('SIGKILL')
}
