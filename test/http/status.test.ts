import t from 'tap'
import { denialStatus } from '../../src/http/status.js'
import { unlimitedDecision, type Decision, type PolicyName } from '../../src/limit/decision.js'

const denied = (policy: PolicyName): Decision => ({
  ...unlimitedDecision(),
  admitted: false,
  policy,
  retryAfterMs: 1000,
})

t.test('the core names the policy; src/http maps it to the status the adapters answer', async (t) => {
  const rows: [Decision, 503 | 429 | undefined, number][] = [
    [unlimitedDecision(), undefined, 200],
    [denied('limit'), undefined, 429],
    [denied('abuse'), undefined, 403],
    [denied('fairness'), undefined, 503],
    [denied('fairness'), 429, 429],
    [denied('fairness'), 503, 503],
    [denied('store'), undefined, 503],
    [denied('store'), 429, 503], // fairness.status says nothing about a failed store
  ]
  for (const [d, fairness, status] of rows)
    t.equal(denialStatus(d, fairness), status, `${d.policy ?? 'admitted'} (fairness.status ${fairness ?? 'default'})`)
})
