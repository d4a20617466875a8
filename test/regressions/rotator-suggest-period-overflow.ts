// suggestPeriodMs documents "the period in ms (an integer)" but returned Infinity when
// hi / rate × 1000 overflows (e.g. hi = Number.MAX_VALUE, the Sketch's default hi): a
// value every Rotator then refuses as periodMs. It now throws a coded error naming hi.
import t from 'tap'
import { suggestPeriodMs } from '../../src/index.js'

t.test('an overflowing period is refused with a coded error', async (t) => {
  t.throws(() => suggestPeriodMs(Number.MAX_VALUE, 1, 2), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /hi/ })
  t.throws(() => suggestPeriodMs(1e300, 1e-10, 2), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /hi/ })
})

t.test('finite cases unchanged', async (t) => {
  t.equal(suggestPeriodMs(10, 1, 2), 10_000)
  t.equal(suggestPeriodMs(10, 1, 4), 3334)
  t.equal(suggestPeriodMs(1e300, 1, 2), 1e303)
})
