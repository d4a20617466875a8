import t from 'tap'
import { checkKnownOptions, closestName, editDistance, optionKeys } from '../src/options.js'
import { unknownOption } from './unknown-option.js'

// src/options.ts: the unknown-option check every constructor and factory runs once, and
// the lists of names it checks against, which must stay the keys of the options interfaces.

t.test('editDistance: insertions, deletions, substitutions and adjacent swaps cost 1 each', async (t) => {
  const rows: [string, string, number][] = [
    ['', '', 0],
    ['', 'abc', 3],
    ['abc', '', 3],
    ['levels', 'levels', 0],
    ['level', 'levels', 1], // insertion
    ['levelss', 'levels', 1], // deletion
    ['lovels', 'levels', 1], // substitution
    ['burts', 'burst', 1], // swap of adjacent characters
    ['limt', 'limit', 1],
    ['keyGeneratr', 'key', 8],
    ['ca', 'abc', 3], // optimal string alignment: no edit of a swapped pair
    ['abcdef', 'badcfe', 3],
  ]
  for (const [a, b, d] of rows) {
    t.equal(editDistance(a, b), d, `${JSON.stringify(a)} → ${JSON.stringify(b)}`)
    t.equal(editDistance(b, a), d, `${JSON.stringify(b)} → ${JSON.stringify(a)} (symmetric)`)
  }
})

t.test('closestName: within 2 edits, case-insensitive, the first listed on a tie', async (t) => {
  const known = ['levels', 'cellsPerLevel', 'lo', 'hi']
  t.equal(closestName('level', known), 'levels')
  t.equal(closestName('CellsPerLevel', known), 'cellsPerLevel', 'case alone is distance 0')
  t.equal(closestName('cellsperlevell', known), 'cellsPerLevel')
  t.equal(closestName('lvls', known), 'levels', '2 deletions')
  t.equal(closestName('leve', known), 'levels', '2 insertions')
  t.equal(closestName('lev', ['levels']), undefined, '3 edits away: no suggestion')
  t.equal(closestName('ho', known), 'lo', 'lo and hi are both 1 away: the first listed wins')
  t.equal(closestName('zzzzzz', known), undefined)
  t.equal(closestName('x', []), undefined)
})

t.test('checkKnownOptions', async (t) => {
  const known = ['rate', 'burst', 'cost']
  t.doesNotThrow(() => checkKnownOptions({}, known))
  t.doesNotThrow(() => checkKnownOptions({ rate: 1, burst: 2, cost: undefined }, known), 'every known name')
  t.throws(() => checkKnownOptions({ burts: 10 }, known, 'limit.'), unknownOption('limit.burts', 'burst'))
  t.throws(
    () => checkKnownOptions({ burts: undefined }, known, 'limit.'),
    unknownOption('limit.burts', 'burst'),
    'an unknown key whose value is undefined is still a typo',
  )
  t.throws(
    () => checkKnownOptions({ keyGenerator: () => 'k' }, known),
    unknownOption('keyGenerator', undefined, known),
    'nothing close: the message lists the known names',
  )
  t.throws(
    () => checkKnownOptions({ rate: 1, Rate: 1 }, known),
    unknownOption('Rate', 'rate'),
    'names are case-sensitive; the suggestion is not',
  )
  t.throws(
    () => checkKnownOptions({ rate: 1, zz: 1, burts: 1 }, known),
    unknownOption('zz', undefined, known),
    'the first unknown key in order',
  )
  t.doesNotThrow(() => checkKnownOptions({ rate: { burts: 1, anything: 2 } }, known), 'values are not walked into')
  t.doesNotThrow(() => checkKnownOptions({ [Symbol('internal')]: 1 }, known), 'symbol keys are not options')
  t.doesNotThrow(
    () => checkKnownOptions(Object.create({ inherited: 1 }) as object, known),
    'only own keys (a prototype is not an options bag)',
  )
  for (const v of [undefined, null, 1, 'rate', true]) {
    t.doesNotThrow(() => checkKnownOptions(v, known), `${String(v)}: left to the caller's own type checks`)
  }
  t.doesNotThrow(() => checkKnownOptions(['rate'], ['0']), 'an array is read by its own keys')
})

t.test('optionKeys returns the names, frozen, in the order written', async (t) => {
  interface Opts {
    a?: number
    b: string
  }
  const keys = optionKeys<Opts>({ b: true, a: true })
  t.same(keys, ['b', 'a'])
  t.ok(Object.isFrozen(keys))
})
