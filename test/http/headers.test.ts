import t from 'tap'
import { rateLimitHeaders, delaySeconds, retryAfterSeconds, nonNegativeInt, sfString } from '../../src/http/headers.js'

t.test(
  'draft-ietf-httpapi-ratelimit-headers-10 field syntax (examples of the draft: "default";q=100;w=10 / "default";r=50;t=30)',
  async (t) => {
    const h = rateLimitHeaders(
      {},
      { name: 'default', limit: 100, remaining: 50, windowMs: 10_000, resetMs: 30_000 },
      undefined,
    )
    t.same(h, { 'ratelimit-policy': '"default";q=100;w=10', ratelimit: '"default";r=50;t=30' })
  },
)

t.test('legacy family, Retry-After, headers never negative, NaN or omitted at 0', async (t) => {
  const h = rateLimitHeaders({}, { name: 'p', limit: 5, remaining: -3, windowMs: 0, resetMs: NaN }, 0, { legacy: true })
  t.same(h, {
    'ratelimit-policy': '"p";q=5;w=1',
    ratelimit: '"p";r=0;t=0',
    'x-ratelimit-limit': '5',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': '0',
    'retry-after': '1',
  })
  t.same(
    rateLimitHeaders({}, undefined, 2500, {}),
    { 'retry-after': '3' },
    'no figures (store failed open/closed): only Retry-After',
  )
  t.same(
    rateLimitHeaders({}, { name: 'p', limit: 1, remaining: 0, windowMs: 1, resetMs: 1 }, 1, {
      ietf: false,
      retryAfter: false,
    }),
    {},
  )
})

t.test('rounding', async (t) => {
  t.equal(delaySeconds(0), 0)
  t.equal(delaySeconds(1), 1)
  t.equal(delaySeconds(1000), 1)
  t.equal(delaySeconds(1001), 2)
  t.equal(delaySeconds(86_400_000.000003), 86_400, 'sub-microsecond float noise ignored')
  t.equal(delaySeconds(-5), 0)
  t.equal(delaySeconds(NaN), 0)
  t.equal(retryAfterSeconds(0), 1)
  t.equal(retryAfterSeconds(2001), 3)
  t.equal(nonNegativeInt(2.9), 2)
  t.equal(nonNegativeInt(NaN), 0)
  t.equal(sfString('a"b\\c\n'), '"a\\"b\\\\c?"')
})
