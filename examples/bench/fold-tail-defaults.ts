// r1 (s30): the refusal tail after a fold at the debt meter's defaults (rate 1/s, burst 10,
// maxDebt 100, period 100 s), one self-sized exact store on a fake clock, 128 cells per level
// recorded by 10 fresh clients/s, then `JUMP` fresh clients/s (one request each: every refusal
// is an innocent one). Prints refusals per second after the jump, with folding twins and
// without early growth. Run: npx tsx examples/bench/fold-tail-defaults.ts [jump/s] [seconds]
import { FakeClock } from '../../src/testing/index.js'
import { redisStore } from '../../src/index.js'
import type { RedisExactStore } from '../../src/cluster/exact-store.js'
import { Redis } from 'ioredis'
import { driveFreshClients, scaledSpec } from '../../test/fixtures/fleet-fold.js'

const P = 100_000
const RATE = 1
const BURST = 10
const HI = 100
const JUMP = Number(process.argv[2] ?? 600)
const SECONDS = Number(process.argv[3] ?? 40)
const T0 = 2000 * P
const T_JUMP = T0 + 150_000 // 50 s into the youth of generation 2002

async function run(early: boolean): Promise<{ refused: number; sent: number; perSecond: number[]; twins: string }> {
  const admin = new Redis('redis://127.0.0.1:6379')
  const prefix = `s30r1:tail:${early ? 'e' : 'n'}:${process.pid}:${Date.now()}`
  const clock = new FakeClock(T0)
  const spec = scaledSpec({ name: 'd', periodMs: P, rate: RATE, hi: HI, early })
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
  const { refused, sent, perSecond } = await driveFreshClients(
    { t0: T0, jumpAt: T_JUMP, seconds: SECONDS, before: 10, after: JUMP },
    clock,
    (key) => store.tryConsume(key, 1, BURST),
    () => store.settled(),
  )
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
