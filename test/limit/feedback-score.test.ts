import t from 'tap'
import { Limiter } from '../../src/limit/limiter.js'
import type { Decision } from '../../src/limit/decision.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { sipHash } from '../../src/index.js'
import { FEEDBACK_SCORE_OPTION_KEYS, FeedbackScore, type FeedbackScoreOptions } from '../../src/limit/feedback-score.js'
import { resolveSketchOptions } from '../../src/limit/options.js'
import { typo, unknownOption } from '../unknown-option.js'
import { mulberry32 } from '../fixtures/mulberry32.js'

t.test('overloaded backend: the heavy key is shed first, the light keys are spared', async (t) => {
  const clock = new FakeClock(0)
  const rng = mulberry32(12345)
  const backendRng = mulberry32(999)
  const limiter = new Limiter({
    clock,
    ticker: new FakeTicker(),
    hasher: sipHash(3),
    random: rng,
    fairness: { failureDelta: 0.05, successDelta: 0.01, lambdaPerSecond: 0.5 },
  })
  // backend capacity 50 req/s; offered: one heavy key at 100 req/s and 20 light keys at 1 req/s each
  const capacity = 50
  let loadLastSecond = 0
  let loadThisSecond = 0
  const sent = { heavy: 0, light: 0 }
  const shed = { heavy: 0, light: 0 }
  let admittedMeasured = 0
  const serve = (key: string, kind: 'heavy' | 'light', measure: boolean) => {
    const d = limiter.decide(key) as Decision
    if (measure) sent[kind]++
    if (!d.admitted) {
      if (measure) shed[kind]++
      return
    }
    loadThisSecond++
    if (measure) admittedMeasured++
    const pFail = Math.max(0, 1 - capacity / Math.max(1, loadLastSecond))
    limiter.record(key, { failed: backendRng() < pFail, abuseDelta: 0 })
  }
  for (let s = 0; s < 120; s++) {
    for (let tick = 0; tick < 100; tick++) {
      clock.set(s * 1000 + tick * 10)
      const measure = s >= 20
      serve('heavy', 'heavy', measure)
      if (tick % 5 === 0) serve(`light-${tick / 5}`, 'light', measure)
    }
    loadLastSecond = loadThisSecond
    loadThisSecond = 0
  }
  const heavyShed = shed.heavy / sent.heavy
  const lightShed = shed.light / sent.light
  t.ok(heavyShed > 0.3, `heavy key shed ${(heavyShed * 100).toFixed(1)}% > 30%`)
  t.ok(lightShed < 0.05, `light keys shed ${(lightShed * 100).toFixed(1)}% < 5%`)
  const load = admittedMeasured / 100
  // a feedback loop needs some failures to hold the heavy key's score up, so the admitted
  // load settles above the capacity, but well below what was offered
  t.ok(load < 0.7 * 120, `mean admitted load ${load}/s < 70% of the 120/s offered (capacity ${capacity}/s)`)
})

t.test('throttle probability equals the score; Retry-After is when the same draw would admit', async (t) => {
  const clock = new FakeClock(0)
  let u = 0
  const limiter = new Limiter({
    clock,
    ticker: new FakeTicker(),
    random: () => u,
    fairness: { failureDelta: 0.4, lambdaPerSecond: Math.LN2 },
  })
  limiter.record('k', { failed: true, abuseDelta: 0 })
  limiter.record('k', { failed: true, abuseDelta: 0 }) // 0.8
  u = 0.79
  const d = limiter.decide('k') as Decision
  t.equal(d.admitted, false)
  t.equal(d.policy, 'fairness')
  t.ok(Math.abs(d.score - 0.8) < 1e-9)
  t.equal(d.retryAfterMs, 1000) // ln(0.8/0.79)/ln2 s ≈ 0.018 s → 1 s
  u = 0.2
  const e = limiter.decide('k') as Decision
  t.equal(e.retryAfterMs, 2000) // ln(0.8/0.2)/ln 2 = 2 half-lives = 2 s
  clock.advance(2000)
  t.ok((limiter.decide('k') as Decision).admitted, 'after 2 s the score is 0.2: the draw 0.2 is no longer below it')
  u = 0.81
  t.ok((limiter.decide('k') as Decision).admitted)
})

t.test('an unknown option throws naming its path and the closest option; every option passes', async (t) => {
  const sketch = resolveSketchOptions({ ticker: new FakeTicker() })
  t.throws(
    () => new FeedbackScore(typo<FeedbackScoreOptions>({ lambdaPerSec: 1 }), sketch, 'x'),
    unknownOption('fairness.lambdaPerSec', undefined, FEEDBACK_SCORE_OPTION_KEYS),
  )
  t.throws(
    () => new FeedbackScore(typo<FeedbackScoreOptions>({ slowms: 429 }), sketch, 'x'),
    unknownOption('fairness.slowms', 'slowMs'),
  )
  t.throws(
    () => new FeedbackScore(typo<FeedbackScoreOptions>({ status: 429 }), sketch, 'x'),
    unknownOption('fairness.status', undefined, FEEDBACK_SCORE_OPTION_KEYS),
    "a status is the adapters' option (fairness.status there), not the core policy's",
  )
  const all: Required<FeedbackScoreOptions> = {
    failureDelta: 0.2,
    successDelta: 0.05,
    lambdaPerSecond: 0.5,
    slowMs: 100,
  }
  t.same(Object.keys(all).sort(), [...FEEDBACK_SCORE_OPTION_KEYS].sort(), 'the test names every option')
  await new FeedbackScore(all, sketch, 'x').close()
})
