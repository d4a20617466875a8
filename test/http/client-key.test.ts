import t from 'tap'
import fc from 'fast-check'
import {
  normalizeIp,
  keyPart,
  joinKeyParts,
  checkIpv6Subnet,
  deriveKey,
  type KeyRequest,
  type KeyRules,
  type RequestView,
} from '../../src/http/client-key.js'

t.test('normalizeIp: ports, IPv4-mapped IPv6, IPv6 /64 grouping, zones, junk', async (t) => {
  const rows: [string, number, string][] = [
    ['1.2.3.4', 64, '1.2.3.4'],
    ['1.2.3.4:5678', 64, '1.2.3.4'],
    ['::ffff:1.2.3.4', 64, '1.2.3.4'],
    ['::ffff:0102:0304', 64, '1.2.3.4'],
    ['[::ffff:1.2.3.4]:80', 64, '1.2.3.4'],
    ['2001:db8:1:2:3:4:5:6', 64, '2001:db8:1:2::/64'],
    ['2001:DB8:1:2:ffff:ffff:ffff:ffff', 64, '2001:db8:1:2::/64'],
    ['[2001:db8::1]:443', 64, '2001:db8::/64'],
    ['2001:db8:1:2:3:4:5:6', 48, '2001:db8:1::/48'],
    ['2001:db8:1:2:3:4:5:6', 56, '2001:db8:1::/56'],
    ['2001:db8:1:2ff:3:4:5:6', 56, '2001:db8:1:200::/56'],
    ['2001:db8:1:2:3:4:5:6', 128, '2001:db8:1:2:3:4:5:6'],
    ['fe80::1%eth0', 64, 'fe80::/64'],
    ['::1', 64, '::/64'],
    ['not an ip', 64, 'not an ip'],
    ['', 64, ''],
  ]
  for (const [input, subnet, want] of rows) t.equal(normalizeIp(input, subnet), want, `${input} /${subnet}`)
})

t.test('every address inside one /64 maps to one key (property)', async (t) => {
  const hex = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16))
  fc.assert(
    fc.property(
      fc.tuple(hex, hex, hex, hex),
      fc.tuple(hex, hex, hex, hex),
      fc.tuple(hex, hex, hex, hex),
      (net, a, b) => {
        const x = normalizeIp([...net, ...a].join(':'))
        const y = normalizeIp([...net, ...b].join(':'))
        return x === y && x.endsWith('/64')
      },
    ),
  )
  t.pass()
})

t.test('keyPart and joinKeyParts', async (t) => {
  const req = (
    headers: Record<string, string>,
    ip = '1.2.3.4:99',
    route: string | null = '/users/:id',
  ): KeyRequest => ({
    ip,
    method: 'GET',
    routePattern: route ?? undefined,
    header: (n) => headers[n],
  })
  t.equal(keyPart('ip', req({})), 'ip:1.2.3.4')
  t.equal(keyPart('tenant', req({ 'x-tenant-id': 'acme' })), 'tenant:acme')
  t.equal(keyPart('tenant', req({})), 'ip:1.2.3.4', 'missing tenant → IP key')
  t.equal(keyPart('tenant', req({ 'x-api-key': 'k' }), { tenantHeader: 'x-api-key' }), 'tenant:k')
  t.equal(keyPart('route', req({})), 'route:GET /users/:id')
  t.equal(keyPart('route', req({}, '1.1.1.1', null)), 'route:GET *', 'unknown pattern is *, never the raw URL')
  t.equal(joinKeyParts(['a']), 'a')
  t.not(joinKeyParts(['a|b', 'c']), joinKeyParts(['a', 'b|c']))
  t.not(joinKeyParts(['1:a', 'b']), joinKeyParts(['1', 'a:b']))
  t.throws(() => checkIpv6Subnet(0), { code: 'ERR_GRUDGE_OPTION_INVALID' })
  t.equal(checkIpv6Subnet(undefined), 64)
})

t.test(
  "deriveKey's ip part: the same address again, another address, the same address at another subnet",
  async (t) => {
    const view: RequestView<{ ip: string }> = {
      ip: (r) => r.ip,
      method: () => 'GET',
      route: () => undefined,
      header: () => undefined,
    }
    const rules = (ipv6Subnet: number): KeyRules<{ ip: string }> => ({
      keyParts: ['ip'],
      tenantHeader: 'x-tenant-id',
      ipv6Subnet,
    })
    const v6 = '2001:db8:1:2ff:3:4:5:6'
    // expected keys: 'ip:' + the normalizeIp table above (56 → 2001:db8:1:200::/56, 64 → /64)
    const rows: [string, number, string][] = [
      [v6, 64, 'ip:2001:db8:1:2ff::/64'],
      [v6, 64, 'ip:2001:db8:1:2ff::/64'],
      [v6, 56, 'ip:2001:db8:1:200::/56'],
      [v6, 56, 'ip:2001:db8:1:200::/56'],
      [v6, 64, 'ip:2001:db8:1:2ff::/64'],
      ['1.2.3.4:5678', 64, 'ip:1.2.3.4'],
      ['1.2.3.5', 64, 'ip:1.2.3.5'],
      ['1.2.3.4:5678', 64, 'ip:1.2.3.4'],
      ['1.2.3.4:5678', 64, 'ip:1.2.3.4'],
    ]
    for (const [ip, subnet, want] of rows) t.equal(deriveKey(rules(subnet), view, { ip }), want, `${ip} at /${subnet}`)
  },
)
