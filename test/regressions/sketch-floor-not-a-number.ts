// updateWithFloor compared its floor with `floor < Infinity`, which coerces: '5' acted as
// the number 5, true as 1 and null as 0, and a BigInt passed the check and then threw an
// uncoded TypeError when stored in the Float64Array (issue 14, item 6).
import t from 'tap'
import { Sketch } from '../../src/index.js'
import { FakeClock } from '../../src/testing/index.js'

for (const [name, floor] of [
  ['a string', '5'],
  ['a boolean', true],
  ['null', null],
  ['undefined', undefined],
  ['a BigInt', 5n],
  ['an object', {}],
] as const) {
  t.test(`${name} floor is a coded TypeError and changes nothing`, async (t) => {
    const s = new Sketch({ levels: 3, cellsPerLevel: 64, seed: 1, clock: new FakeClock() })
    s.update('k', 2)
    const bad = floor as unknown as number
    for (const call of [() => s.updateWithFloor('k', 1, bad), () => s.updateWithFloorAt(0, 'k', 1, bad)]) {
      t.throws(call, { name: 'GrudgeTypeError', code: 'ERR_GRUDGE_OPTION_INVALID' })
    }
    t.equal(s.estimate('k'), 2, 'the cells are untouched')
  })
}

t.test('NaN and +Infinity floors are still range errors; −Infinity and numbers work', async (t) => {
  const s = new Sketch({ levels: 3, cellsPerLevel: 64, seed: 1, clock: new FakeClock() })
  t.throws(() => s.updateWithFloor('k', 1, NaN), { name: 'GrudgeRangeError', code: 'ERR_GRUDGE_VALUE_NOT_FINITE' })
  t.throws(() => s.updateWithFloor('k', 1, Infinity), { code: 'ERR_GRUDGE_VALUE_NOT_FINITE' })
  s.updateWithFloor('k', 1, -Infinity)
  t.equal(s.estimate('k'), 1)
  s.updateWithFloor('k', 0, 4)
  t.equal(s.estimate('k'), 4)
})
