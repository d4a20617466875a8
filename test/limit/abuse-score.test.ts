import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import { AbuseScore } from '../../src/limit/abuse-score.js'
import { resolveSketchOptions } from '../../src/limit/options.js'
import type { Decision } from '../../src/limit/decision.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { ABUSE_SCORE_OPTION_KEYS, type AbuseScoreOptions } from '../../src/limit/abuse-score.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('weights: exact status, then class, then success, then default', async (t) => {
  const a = new AbuseScore(
    { weights: { 401: 1, '4xx': 0.5, success: -0.1, default: 0.01 } },
    resolveSketchOptions({ ticker: new FakeTicker() }),
    'x',
  )
  t.equal(a.deltaForStatus(401), 1)
  t.equal(a.deltaForStatus(404), 0.5)
  t.equal(a.deltaForStatus(200), -0.1)
  t.equal(a.deltaForStatus(302), -0.1)
  t.equal(a.deltaForStatus(500), 0.01)
  t.throws(() => new AbuseScore({ weights: { teapot: 1 } }, resolveSketchOptions({ ticker: new FakeTicker() }), 'x'), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /abuse\.weights\.teapot/,
  })
  a.close()
})

t.test('blocked until decay brings it below the threshold: closed-form Retry-After h·log2(s/T)', async (t) => {
  const clock = new FakeClock(0)
  const limiter = new Limiter({
    clock,
    ticker: new FakeTicker(),
    abuse: { threshold: 2, halfLifeMs: 10_000, maxScore: 100 },
  })
  limiter.record('k', { failed: false, abuseDelta: 8 })
  const d = limiter.decide('k') as Decision
  t.equal(d.admitted, false)
  t.equal(d.policy, 'abuse', 'the abuse score denied (the adapters answer 403)')
  // 8 → 2 takes log2(4) = 2 half-lives = 20 s; at 20 s the score is exactly 2, still ≥ the
  // threshold, so the first ms strictly below it is 20,001, and a Decision's whole seconds say 21
  t.equal((await limiter.peek('k')).abuse?.retryAfterMs, 20_001)
  t.equal(d.retryAfterMs, 21_000)
  clock.advance(20_000)
  t.equal((limiter.decide('k') as Decision).policy, 'abuse', 'at exactly 2 half-lives the score is the threshold')
  clock.advance(1)
  t.ok((limiter.decide('k') as Decision).admitted, 'admitted 1 ms later')
})

t.test('an unknown option throws naming its path and the closest option; every option passes', async (t) => {
  const sketch = resolveSketchOptions({ ticker: new FakeTicker() })
  t.throws(
    () => new AbuseScore(typo<AbuseScoreOptions>({ halflifeMs: 1000 }), sketch, 'x'),
    unknownOption('abuse.halflifeMs', 'halfLifeMs'),
  )
  t.throws(
    () => new AbuseScore(typo<AbuseScoreOptions>({ weight: { '404': 1 } }), sketch, 'x'),
    unknownOption('abuse.weight', 'weights'),
  )
  const all: Required<AbuseScoreOptions> = {
    weights: { '4xx': 1 },
    threshold: 3,
    halfLifeMs: 1000,
    maxScore: 6,
    refusalWeight: 0,
  }
  t.same(Object.keys(all).sort(), [...ABUSE_SCORE_OPTION_KEYS].sort(), 'the test names every option')
  await new AbuseScore(all, sketch, 'x').close()
})
