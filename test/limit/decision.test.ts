import t from 'tap'
import fc from 'fast-check'
import { Limiter } from '../../src/limit/limiter.js'
import type { Decision } from '../../src/limit/decision.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { fieldSource, rateLimitHeaders, type FieldSource } from '../../src/http/headers.js'

const INT = /^\d+$/

function checkHeaders(source: FieldSource, d: Decision): boolean {
  const h = rateLimitHeaders(source, d)
  if (h['ratelimit'] !== undefined && !/^"[^"]*";r=\d+;t=\d+$/.test(h['ratelimit'])) return false
  if (h['ratelimit-policy'] !== undefined && !/^"[^"]*";q=\d+;w=[1-9]\d*$/.test(h['ratelimit-policy'])) return false
  for (const k of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after']) {
    if (h[k] !== undefined && !INT.test(h[k])) return false
  }
  if (!d.admitted && !(Number(h['retry-after']) >= 1)) return false
  if (d.admitted && h['retry-after'] !== undefined) return false
  // the reset field of a denial is Retry-After
  if (!d.admitted && h['ratelimit'] !== undefined && h['ratelimit'].split(';t=')[1] !== h['retry-after']) return false
  if (h['ratelimit'] === undefined || h['ratelimit-policy'] === undefined) return false
  return true
}

t.test(
  'every header is a non-negative integer, never NaN or omitted; a denial always has Retry-After equal to t (property)',
  async (t) => {
    fc.assert(
      fc.property(
        fc.double({ min: 1e-6, max: 1e6, noNaN: true }),
        fc.double({ min: 1, max: 1e4, noNaN: true }), // burst ≥ the default cost 1
        fc.array(fc.tuple(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })), {
          minLength: 1,
          maxLength: 30,
        }),
        (rate, burst, steps) => {
          const clock = new FakeClock(0)
          const l = new Limiter({
            clock,
            ticker: new FakeTicker(),
            levels: 2,
            cellsPerLevel: 16,
            limit: { rate, burst },
          })
          const source = fieldSource(l, { legacy: true })
          for (const [dt, frac] of steps) {
            clock.advance(dt)
            const d = l.decide('k', frac * burst) as Decision
            if (!checkHeaders(source, d)) return false
            if (!(d.remaining! >= 0 && d.remaining! <= burst)) return false
          }
          return true
        },
      ),
      { seed: 42, numRuns: 200 },
    )
    t.pass()
  },
)
