// IPv6 allow-list entries (issue #19): `2001:db8:abcd:12::1` exempted its whole /64 (entries
// were grouped like keys). An address entry is that address; a CIDR entry is its range, as in
// @fastify/rate-limit's allowList of addresses and express-rate-limit users' `skip` by range.
import t from 'tap'
import Fastify from 'fastify'
import grudge from '../../plugins/fastify/index.js'
import { FakeClock, FakeTicker } from '../../src/testing/index.js'

t.test('exact addresses and CIDR ranges, IPv4 and IPv6', async (t) => {
  const f = Fastify()
  await f.register(grudge, {
    clock: new FakeClock(0),
    ticker: new FakeTicker(),
    limit: { rate: 1, burst: 1 },
    allowList: ['2001:db8:abcd:12::1', '2001:db8:1::/48', '10.0.0.0/8', '192.168.1.7', 'fn:ops'],
  })
  f.get('/', async () => 'ok')
  const twice = async (remoteAddress: string) => {
    const a = (await f.inject({ url: '/', remoteAddress })).statusCode
    const b = (await f.inject({ url: '/', remoteAddress })).statusCode
    return [a, b]
  }
  t.same(await twice('2001:db8:abcd:12::1'), [200, 200], 'the exact address')
  t.same(await twice('2001:db8:abcd:12::2'), [200, 429], 'its /64 neighbour is limited')
  t.same(await twice('2001:db8:1:ffff::9'), [200, 200], 'inside the /48')
  t.same(await twice('2001:db8:2::9'), [200, 429], 'outside the /48')
  t.same(await twice('10.200.3.4'), [200, 200], 'inside 10.0.0.0/8')
  t.same(await twice('::ffff:10.9.9.9'), [200, 200], 'an IPv4-mapped client inside 10.0.0.0/8')
  t.same(await twice('11.0.0.1'), [200, 429], 'outside 10.0.0.0/8')
  t.same(await twice('192.168.1.7'), [200, 200], 'an exact IPv4 address')
  await f.close()
})

t.test('a CIDR entry with an impossible prefix is refused', async (t) => {
  const f = Fastify()
  await t.rejects(
    async () => {
      await f.register(grudge, { limit: { rate: 1, burst: 1 }, allowList: ['10.0.0.0/33'] })
    },
    { code: 'ERR_GRUDGE_OPTION_INVALID', message: /allowList/ },
  )
  await f.close()
})
