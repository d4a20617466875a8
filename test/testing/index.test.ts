import t from 'tap'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'
import { GrudgeError } from '../../src/errors.js'

t.test('FakeClock moves only when told, backwards too', async (t) => {
  const c = new FakeClock()
  t.equal(c.now(), 0, 'starts at 0 by default')
  const steps: { action: (c: FakeClock) => void; expected: number }[] = [
    { action: (c) => c.advance(1500), expected: 1500 },
    { action: (c) => c.advance(0.25), expected: 1500.25 },
    { action: (c) => c.advance(-500.25), expected: 1000 },
    { action: (c) => c.set(42), expected: 42 },
    { action: (c) => c.set(-7), expected: -7 },
  ]
  for (const { action, expected } of steps) {
    action(c)
    t.equal(c.now(), expected)
    t.equal(c.now(), expected, 'reading does not move time')
  }
  t.equal(new FakeClock(1e12).now(), 1e12, 'starts at startMs')
})

t.test('FakeClock rejects non-finite times naming the option', async (t) => {
  for (const bad of [NaN, Infinity, -Infinity]) {
    t.throws(() => new FakeClock(bad), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"startMs"/ })
    const c = new FakeClock(5)
    t.throws(() => c.advance(bad), { code: 'ERR_GRUDGE_OPTION_INVALID', message: /"ms"/ })
    t.throws(() => c.set(bad), GrudgeError)
    t.equal(c.now(), 5, 'a rejected call changes nothing')
  }
})

t.test('FakeTicker runs live tasks on tick, in registration order, until cancelled', async (t) => {
  const ticker = new FakeTicker()
  const log: string[] = []
  const a = ticker.every(1000, () => log.push('a'))
  ticker.every(250, () => log.push('b'))
  t.equal(ticker.size, 2)
  t.same(ticker.periods(), [1000, 250])
  t.same(log, [], 'nothing runs before tick()')
  ticker.tick()
  t.same(log, ['a', 'b'])
  a.cancel()
  a.cancel()
  t.equal(ticker.size, 1, 'cancel is idempotent')
  t.same(ticker.periods(), [250])
  ticker.tick()
  t.same(log, ['a', 'b', 'b'])
})

t.test('a task that cancels another during tick does not break the round', async (t) => {
  const ticker = new FakeTicker()
  const log: string[] = []
  const h = { cancel: () => {} }
  ticker.every(1, () => {
    log.push('first')
    h.cancel()
  })
  Object.assign(
    h,
    ticker.every(1, () => log.push('second')),
  )
  ticker.tick()
  t.same(log, ['first', 'second'], 'the round runs over the tasks live when it started')
  ticker.tick()
  t.same(log, ['first', 'second', 'first'], 'the cancelled task is gone afterwards')
})
