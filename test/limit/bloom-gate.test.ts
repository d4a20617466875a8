import t from 'tap'
import { BLOOM_GATE_OPTION_KEYS, BloomGate, type BloomGateOptions } from '../../src/limit/bloom-gate.js'
import { typo, unknownOption } from '../unknown-option.js'

t.test('the gate asks the registry for its filter and lets through what might be present', async (t) => {
  const gate = new BloomGate({ filter: 'users' })
  const asked: string[] = []
  const registry = {
    mightContain: (name: string, item: string) => {
      asked.push(`${name}:${item}`)
      return item === 'u1'
    },
  }
  t.equal(gate.check(registry, 'u1'), true)
  t.equal(gate.check(registry, 'u2'), false)
  t.same(asked, ['users:u1', 'users:u2'])
  t.equal(await gate.check({ mightContain: async () => true }, 'u3'), true, 'an asynchronous registry')
  t.throws(() => gate.check(registry, 7 as unknown as string), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /bloom.item/,
  })
})

t.test('a missing filter name or an unknown option throws naming its path; every option passes', async (t) => {
  t.throws(() => new BloomGate(typo<BloomGateOptions>({})), {
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: /bloom.filter/,
  })
  t.throws(
    () => new BloomGate(typo<BloomGateOptions>({ filter: 'users', filters: 'x' })),
    unknownOption('bloom.filters', 'filter'),
  )
  t.throws(
    () => new BloomGate(typo<BloomGateOptions>({ filtr: 'users' }), 'config.grudge.bloom.'),
    unknownOption('config.grudge.bloom.filtr', 'filter'),
  )
  const all: Required<BloomGateOptions> = { filter: 'users' }
  t.same(Object.keys(all).sort(), [...BLOOM_GATE_OPTION_KEYS].sort(), 'the test names every option')
  t.equal(new BloomGate(all).filter, 'users')
})
