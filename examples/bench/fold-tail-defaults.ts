// r1 (s30): the refusal tail after a fold at the debt meter's defaults (rate 1/s, burst 10,
// maxDebt 100, period 100 s), one self-sized exact store on a fake clock, 128 cells per level
// recorded by 10 fresh clients/s, then `JUMP` fresh clients/s (one request each: every refusal
// is an innocent one). Prints refusals per second after the jump, with folding twins and
// without early growth. Run: npx tsx examples/bench/fold-tail-defaults.ts [jump/s] [seconds]
import { FakeClock } from '../../src/testing/index.js'
import { linear } from '../../src/sketch/decay.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import type { StoreSpec } from '../../src/limit/store.js'
import { Redis } from 'ioredis'

const P = 100_000
const RATE = 1
const BURST = 10
const HI = 100
const JUMP = Number(process.argv[2] ?? 600)
const SECONDS = Number(process.argv[3] ?? 40)
const T0 = 2000 * P
const T_JUMP = T0 + 150_000 // 50 s into the youth of generation 2002
const STEP = 50

async function run(early: boolean): Promise<{ refused: number; sent: number; perSecond: number[]; twins: string }> {
  const admin = new Redis('redis://127.0.0.1:6379')
  const prefix = `s30r1:tail:${early ? 'e' : 'n'}:${process.pid}:${Date.now()}`
  const clock = new FakeClock(T0)
  const spec: StoreSpec = {
    name: 'd',
    sketch: { levels: 4, cellsPerLevel: 128, decay: linear(RATE), lo: 0, hi: HI, aggregator: 'min' },
    generations: 2,
    periodMs: P,
    sizing: {
      sizeNextGeneration: (l) => (4 * l.costPerSecond) / RATE,
      minCellsPerLevel: 128,
      maxCellsPerLevel: 4096,
      ...(early ? {} : { growEarlyWhen: () => false }),
    },
  }
  const store = redisStore({
    redis: admin,
    seed: '5555555555555555eeeeeeeeeeeeeeee',
    prefix,
    mode: 'exact',
    slots: 1,
    clock,
    timeoutMs: 500,
  })(spec) as RedisExactStore
  await store.ready()
  const perSecond = new Array<number>(SECONDS).fill(0)
  let sent = 0
  let refused = 0
  let fresh = 0
  for (let now = T0; now < T_JUMP + SECONDS * 1000; now += STEP) {
    clock.set(now)
    const perStep = now >= T_JUMP ? (JUMP * STEP) / 1000 : (10 * STEP) / 1000
    const n = Math.floor(((now - T0) / STEP + 1) * perStep) - Math.floor(((now - T0) / STEP) * perStep)
    const calls: Promise<void>[] = []
    for (let i = 0; i < n; i++)
      calls.push(
        store.tryConsume(`fresh-${fresh++}`, 1, BURST).then((r) => {
          if (r.failure !== undefined) throw new Error(`a call failed: ${r.failure}`)
          if (now < T_JUMP) return
          sent++
          if (!r.admitted) {
            refused++
            perSecond[Math.floor((now - T_JUMP) / 1000)]++
          }
        }),
      )
    await Promise.all(calls)
    await store.settled()
  }
  const twins = JSON.stringify(store.generationShapes().early)
  await store.close()
  const keys = await admin.keys(`${prefix}*`)
  if (keys.length > 0) await admin.del(...keys)
  await admin.quit()
  return { refused, sent, perSecond, twins }
}

for (const early of [true, false]) {
  const r = await run(early)
  console.log(
    `${early ? 'folding twins' : 'no early growth'}: refused ${r.refused} of ${r.sent}; per second ${JSON.stringify(r.perSecond)}; ${r.twins}`,
  )
}
