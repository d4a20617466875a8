import t from 'tap'
import { cliErrorLine, parseCommand } from '../../src/cli/args.js'
import { replayConfig } from '../../src/cli/replay-config.js'

const fails = (argv: string[]) => {
  try {
    const cmd = parseCommand(argv)
    if (cmd.command === 'replay') replayConfig(cmd.options, 'access')
  } catch (e) {
    return cliErrorLine(e as Error & { code?: string })
  }
  return 'no error'
}

t.test('a value may start with a dash: --rate -1 is -1, refused as a rate', async (t) => {
  t.equal(fails(['replay', '--rate', '-1']), '--rate: expected requests per second > 0, or off, received "-1"')
  const cmd = parseCommand(['replay', '--abuse', '401=3,2xx=-0.5', '--rate', 'off', 'x.log'])
  t.same(cmd.command === 'replay' && cmd.options, { abuse: { 401: 3, '2xx': -0.5 }, ratePerSecond: null })
  t.equal(cmd.command === 'replay' && cmd.file, 'x.log')
})

t.test('unknown flags get the options did-you-mean', async (t) => {
  t.equal(fails(['replay', '--rat', '5']), '--rat: unknown option; did you mean --rate?')
  t.equal(fails(['replay', '--burts', '5']), '--burts: unknown option; did you mean --burst?', 'a swap is one edit')
  t.equal(fails(['suggest', '--hotkeys', '5']), '--hotkeys: unknown option; did you mean --hot-keys?')
  t.equal(fails(['replay', '--json=yes']), '--json: takes no value, received "yes"')
  t.equal(fails(['replay', '--top']), '--top: expected a value after it')
})

t.test('library option names read as their flags', async (t) => {
  t.equal(fails(['replay', '--half-life', '0']), '--half-life: expected a finite number > 0, received 0')
  t.equal(fails(['replay', '--burst', '0.5']), '--burst: expected a number ≥ 1 (a request costs 1), received 0.5')
  t.equal(fails(['replay', '--burst', '1']), 'no error', 'burst 1 is the least')
  t.equal(
    cliErrorLine({ message: 'option "abuse.4x": expected a status, received "4x"' }),
    '--abuse 4x: expected a status, received "4x"',
  )
  t.equal(cliErrorLine({ message: 'ENOENT: no such file' }), 'ENOENT: no such file')
})

t.test('--key lists each kind once, with the closest', async (t) => {
  let message = ''
  try {
    replayConfig({ key: 'ipp' as never }) // format not yet known: access and auth keys
  } catch (e) {
    message = (e as Error).message
  }
  t.equal(
    message,
    'option "key": expected ip | ip24 | route | ip+route | ip+method | user | ip+user, received "ipp"; did you mean ip?',
  )
})

t.test('suggest: a bad value is named before a missing flag, by its flag', async (t) => {
  // the four mistakes, on suggest as on replay: the flag that is wrong comes first
  t.equal(fails(['suggest', '--rate', '-1']), '--rate: expected requests per second per key > 0, received "-1"')
  t.equal(
    fails(['suggest', '--burst', '0']),
    '--burst: expected a number ≥ 1 (a request costs 1; --cost sets it), received "0"',
  )
  t.equal(fails(['suggest', '--rat', '5']), '--rat: unknown option; did you mean --rate?')
  t.match(fails(['suggest', '--key', 'ipp']), /^--key: unknown option; known: --hot-keys --rps --rate --burst /)
  // the library's burst-vs-cost rule, said as flags (not as `cost: expected a number ≤ burst`)
  t.equal(
    fails(['suggest', '--rps', '10', '--rate', '1', '--burst', '0.5', '--cost', '0.6', '--fp', '0.1']),
    '--burst: expected a number ≥ --cost (0.6), received "0.5"',
  )
  t.equal(fails(['suggest', '--fp', '1', '--rate', 'x']), '--rate: expected a number, received "x"')
  // decimal only: Number('0x10') is 16, Number('0b11') 3, Number('') 0
  for (const text of ['0x10', '0b11', '0o7', '1_000', ' '])
    t.equal(fails(['suggest', '--rps', text]), `--rps: expected a number, received ${JSON.stringify(text)}`)
  // a flag given twice was the last one's silently (parseArgs keeps the last)
  t.equal(
    fails(['suggest', '--rps', '100', '--rate', '1', '--rps', '200']),
    '--rps: expected the flag once, received "it twice or more"',
  )
  t.equal(
    fails(['replay', '--top', '3', '--top', '4', 'x.log']),
    '--top: expected the flag once, received "it twice or more"',
  )
  t.equal(fails(['suggest', '--hot-keys', '-1']), '--hot-keys: expected a number of hot keys ≥ 0, received "-1"')
  t.equal(
    fails(['suggest', '--hot-keys', '5', '--fp', '0']),
    '--fp: expected a probability in (0, 1), e.g. 0.001, received "0"',
  )
  t.equal(
    fails(['suggest', '--generations', '1']),
    '--generations: expected an integer in [2, 16] (a Limiter\'s generations), received "1"',
  )
  t.equal(fails(['suggest', '--max-levels', '65']), '--max-levels: expected an integer in [1, 64], received "65"')
})

t.test(
  'suggest: --max-levels N asks for a search over 1..N; without it the levels are left to the default',
  async (t) => {
    const base = ['suggest', '--hot-keys', '10', '--fp', '0.01']
    const none = parseCommand(base)
    t.same(none.command === 'suggest' && [none.levels, none.maxLevels], [undefined, undefined])
    const six = parseCommand([...base, '--max-levels', '6'])
    t.equal(six.command === 'suggest' && six.maxLevels, 6)
    for (const bad of ['0', '2.5', 'x'])
      t.match(
        fails([...base, '--max-levels', bad]),
        new RegExp(`^--max-levels: expected (an integer in \\[1, 64\\]|a number), received "${bad}"`),
      )
  },
)

t.test('suggest: flags that go together, then what is missing', async (t) => {
  // rate, burst and cost size a request load; alone they would be ignored, so they are refused
  t.equal(
    fails(['suggest', '--hot-keys', '100', '--fp', '0.01', '--burst', '5']),
    '--burst: sizes a request load: add --rps R (requests per second, all keys)',
  )
  t.equal(
    fails(['suggest', '--rps', '100', '--burst', '5', '--fp', '0.01']),
    '--rate: missing: a load needs --rate r (requests per second per key)',
  )
  t.equal(
    fails(['suggest', '--rps', '100', '--rate', '1', '--fp', '0.01']),
    '--burst: missing: a load needs --burst b (requests)',
  )
  t.match(fails(['suggest']), /^--hot-keys: missing: give a number of hot keys/)
  t.equal(fails(['suggest', '--hot-keys', '100']), '--fp: missing: the false-reject rate to reach, e.g. --fp 0.001')
  const ok = parseCommand(['suggest', '--rps', '100', '--rate', '1', '--burst', '5', '--fp', '0.01'])
  t.same(ok.command === 'suggest' && [ok.requestsPerSecond, ok.rate, ok.burst, ok.cost, ok.fp], [
    100,
    1,
    5,
    undefined,
    0.01,
  ])
})

t.test('suggest: the policies, their loads and the period', async (t) => {
  t.equal(
    fails(['suggest', '--policy', 'abus', '--events', '5', '--fp', '0.01']),
    '--policy: expected limit, abuse or fairness, received "abus"; did you mean abuse?',
  )
  // a flag of another policy's load would be ignored: refused, naming what this policy reads
  t.equal(
    fails(['suggest', '--policy', 'abuse', '--rps', '5', '--fp', '0.01']),
    '--rps: belongs to --policy limit; --policy abuse reads --events --weight --threshold --half-life --max-score',
  )
  t.equal(
    fails(['suggest', '--events', '5', '--fp', '0.01']),
    '--events: belongs to --policy abuse; --policy limit reads --rps --rate --burst --cost --period --requests-per-key --request-spacing',
  )
  t.match(fails(['suggest', '--policy', 'fairness', '--fp', '0.01']), /^--events: missing: give the scored events/)
  t.equal(
    fails(['suggest', '--policy', 'abuse', '--events', '5', '--threshold', '8', '--max-score', '4', '--fp', '0.01']),
    '--max-score: expected a number ≥ --threshold (8), received "4"',
  )
  t.equal(
    fails(['suggest', '--policy', 'fairness', '--events', '5', '--failure-delta', '2', '--fp', '0.01']),
    '--failure-delta: expected a number in (0, 1], received "2"',
  )
  t.equal(
    fails(['suggest', '--hot-keys', '10', '--period', '10m', '--fp', '0.01']),
    '--period: sizes a request load: add --rps R (requests per second, all keys)',
  )
  t.equal(fails(['suggest', '--hot-keys', '10', '--period', 'soon', '--fp', '0.01']).split(':')[0], '--period')
  t.equal(
    fails(['suggest', '--hot-keys', '10', '--levels', '4', '--max-levels', '4', '--fp', '0.01']),
    '--max-levels: give --levels L (one L) or --max-levels (the most L weighed), not both',
  )
  t.equal(
    fails(['suggest', '--hot-keys', '10', '--levels', '17', '--fp', '0.01']),
    '--levels: expected an integer in [1, 16], received "17"',
  )
  const cmd = parseCommand([
    'suggest',
    '--policy',
    'abuse',
    '--events',
    '50',
    '--half-life',
    '5m',
    '--weight',
    '3',
    '--fp',
    '1e-4',
  ])
  t.same(cmd.command === 'suggest' && [cmd.policy, cmd.eventsPerSecond, cmd.halfLifeMs, cmd.weight, cmd.levels], [
    'abuse',
    50,
    300_000,
    3,
    undefined,
  ])
  const limit = parseCommand([
    'suggest',
    '--rps',
    '100',
    '--rate',
    '1',
    '--burst',
    '5',
    '--period',
    '2m',
    '--fp',
    '0.01',
  ])
  t.equal(limit.command === 'suggest' && limit.periodMs, 120_000)
  // clustered arrivals (spec/sizing.md §2.6): B requests per key, D apart
  const clustered = parseCommand(
    ['suggest', '--rps', '3000', '--rate', '1', '--burst', '10', '--fp', '1e-4'].concat([
      '--requests-per-key',
      '3',
      '--request-spacing',
      '1s',
    ]),
  )
  t.same(clustered.command === 'suggest' && [clustered.requestsPerKey, clustered.requestSpacingMs], [3, 1000])
  t.equal(
    fails(['suggest', '--rps', '3000', '--rate', '1', '--burst', '10', '--fp', '1e-4', '--requests-per-key', '0.5']),
    '--requests-per-key: expected a number ≥ 1 (the requests each key sends, a mean), received "0.5"',
  )
  t.equal(
    fails(['suggest', '--rps', '3000', '--rate', '1', '--burst', '10', '--fp', '1e-4', '--requests-per-key', 'NaN']),
    '--requests-per-key: expected a number, received "NaN"',
  )
  t.equal(
    fails(['suggest', '--hot-keys', '10', '--requests-per-key', '3', '--fp', '0.01']),
    '--requests-per-key: sizes a request load: add --rps R (requests per second, all keys)',
  )
  t.equal(
    fails(['suggest', '--rps', '30', '--rate', '1', '--burst', '10', '--request-spacing', '-1s', '--fp', '0.01']).split(
      ':',
    )[0],
    '--request-spacing',
  )
})
