import t from 'tap'
import { fieldSource, rateLimitHeaders, retryAfterSeconds, sfString, type FieldOwner } from '../../src/http/headers.js'
import { ceilSeconds, nonNegativeInt, unlimitedDecision, type Decision } from '../../src/limit/decision.js'

/** A decision with the figures given (the core's numbers, before formatting). */
function decision(p: Partial<Decision>): Decision {
  return { ...unlimitedDecision(), ...p }
}

const meter = (name: string, burst: number, windowMs: number): FieldOwner => ({
  name: 'limiter',
  limit: { name, burst, windowMs },
})

t.test(
  'draft-ietf-httpapi-ratelimit-headers-10 field syntax (examples of the draft: "default";q=100;w=10 / "default";r=50;t=30)',
  async (t) => {
    const h = rateLimitHeaders(
      fieldSource(meter('default', 100, 10_000)),
      decision({ limit: 100, remaining: 50, resetMs: 30_000 }),
    )
    t.same(h, { 'ratelimit-policy': '"default";q=100;w=10', ratelimit: '"default";r=50;t=30' })
  },
)

t.test('legacy family, Retry-After, headers never negative, NaN or omitted at 0', async (t) => {
  const h = rateLimitHeaders(
    fieldSource(meter('p', 5, 0), { legacy: true }),
    decision({ admitted: false, policy: 'limit', limit: 5, remaining: -3, resetMs: NaN, retryAfterMs: 0 }),
  )
  t.same(h, {
    'ratelimit-policy': '"p";q=5;w=1',
    ratelimit: '"p";r=0;t=0',
    'x-ratelimit-limit': '5',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': '0',
    'retry-after': '1',
  })
  t.same(
    rateLimitHeaders(
      fieldSource({ name: 'limiter', limit: undefined }),
      decision({ admitted: false, policy: 'store', retryAfterMs: 2500 }),
    ),
    { 'retry-after': '3' },
    'no figures (store failed open/closed): only Retry-After',
  )
  t.same(
    rateLimitHeaders(
      fieldSource(meter('p', 1, 1), { ietf: false, retryAfter: false }),
      decision({ admitted: false, policy: 'limit', limit: 1, remaining: 0, resetMs: 1, retryAfterMs: 1 }),
    ),
    {},
  )
  t.same(
    rateLimitHeaders(
      fieldSource(meter('p', 1, 1), false),
      decision({ admitted: false, policy: 'limit', limit: 1, remaining: 0, resetMs: 1, retryAfterMs: 1 }),
    ),
    {},
    'headers: false writes nothing',
  )
})

t.test('a source formats its constant parts once: the policy field and the quoted name', async (t) => {
  const s = fieldSource(meter('a"b', 3, 2500), {}, true)
  t.equal(s.policyField, '"a\\"b";q=3;w=3')
  t.equal(s.quotedName, '"a\\"b"')
  t.equal(s.altQuotedName, '"limiter"')
  t.equal(s.altPolicyField, '"limiter";q=3;w=3')
  t.equal(s.implicit, true)
  t.same([s.ietf, s.legacy, s.retryAfter], [true, false, true], 'defaults: IETF fields and Retry-After')
  t.ok(Object.isFrozen(s))
})

t.test('rounding', async (t) => {
  t.equal(ceilSeconds(0), 0)
  t.equal(ceilSeconds(1), 1)
  t.equal(ceilSeconds(1000), 1)
  t.equal(ceilSeconds(1001), 2)
  t.equal(ceilSeconds(86_400_000.000003), 86_400, 'sub-microsecond float noise ignored')
  t.equal(ceilSeconds(-5), 0)
  t.equal(ceilSeconds(NaN), 0)
  t.equal(retryAfterSeconds(0), 1)
  t.equal(retryAfterSeconds(2001), 3)
  t.equal(nonNegativeInt(2.9), 2)
  t.equal(nonNegativeInt(NaN), 0)
  // RFC 9651 §3.3.3: only printable ASCII; the rest as percent-encoded UTF-8 (distinct names stay distinct)
  t.equal(sfString('a"b\\c\n'), '"a\\"b\\\\c%0A"')
  t.equal(sfString('100%'), '"100%25"')
  t.equal(sfString('zoë'), '"zo%C3%AB"')
  t.equal(sfString('zoé'), '"zo%C3%A9"')
  t.equal(sfString('a😀'), '"a%F0%9F%98%80"')
})
