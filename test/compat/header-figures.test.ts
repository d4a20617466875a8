// Oversized header figures: a rate of 1e-16/s or a burst of 1e22 printed `w=20000000000000000`
// or `9.99e+24`. Every figure is an RFC 9651 sf-integer (at most 15 digits, §3.3.1) and
// Retry-After is 1*DIGIT (RFC 9110 §10.2.3): figures are clamped to 999999999999999.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

const SF_INTEGER = /^\d{1,15}$/

function figures(headers: Record<string, unknown>): string[] {
  const out: string[] = []
  for (const name of ['ratelimit-policy', 'ratelimit']) {
    for (const m of String(headers[name]).matchAll(/;[qwrt]=([^;,\s]+)/g)) out.push(m[1])
  }
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'])
    if (typeof headers[name] === 'string') out.push(headers[name])
  return out
}

t.test('a tiny rate and a huge burst give plain integers of at most 15 digits', async (t) => {
  for (const limit of [
    { rate: 1e-16, burst: 2 },
    { rate: 1, burst: 1e22 },
  ]) {
    const f = Fastify()
    await f.register(grudge, {
      clock: new FakeClock(0),
      ticker: new FakeTicker(),
      periodMs: 1e30,
      legacyHeaders: true,
      limit,
    })
    f.get('/', async () => 'ok')
    const all: string[] = []
    for (let i = 0; i < 3; i++) all.push(...figures((await f.inject('/')).headers))
    t.ok(all.length >= 9, `figures sent (${all.length})`)
    for (const v of all) t.match(v, SF_INTEGER, `${JSON.stringify(limit)}: ${v}`)
    await f.close()
  }
})
