import t from 'tap'
import { addressKey, Replay } from '../../src/cli/replay.js'
import { keyPart, type KeyRequest } from '../../src/http/client-key.js'

// replay once grouped IPv6 by /64 with its own code (the first four colon-separated groups,
// not expanded), so two spellings of one /64 made two keys and an IPv4-mapped address was
// not unmapped: the replay's figures then described a limiter the adapters are not. Replay
// and the adapters must key every spelling of an address the same way.
//
// Expected keys are written from the RFCs, not from either implementation's output:
// - IPv4 dotted quad, RFC 791; documentation ranges 192.0.2.0/24 and 198.51.100.0/24, RFC 5737.
// - IPv6 text forms, RFC 4291 §2.2 (full, leading zeros dropped, `::` for one run of zero
//   groups, mixed IPv4 tail); the key is written in the RFC 5952 canonical form (lower case,
//   no leading zeros, `::` for the longest run of two or more zero groups, the first on a
//   tie) of the /64 network (RFC 4291 §2.5.4: 64-bit interface id, so the first 64 bits name
//   the subnet), followed by `/64` (RFC 4291 §2.3 prefix notation).
// - IPv4-mapped IPv6, RFC 4291 §2.5.5.2 (`::ffff:a.b.c.d`): the IPv4 client it stands for.
// - Zone index, RFC 4007 §11 (`addr%zone`): local to the host, not part of the address.
// - `[addr]:port`, RFC 3986 §3.2.2: the port is not part of the client.
const table: [input: string, key: string, why: string][] = [
  ['192.0.2.1', '192.0.2.1', 'IPv4 as is'],
  ['198.51.100.7:51234', '198.51.100.7', 'IPv4 with a port'],
  ['2001:db8::1', '2001:db8::/64', 'compressed'],
  ['2001:db8:0:0:1::1', '2001:db8::/64', 'the same /64, zero groups written out and a later ::'],
  ['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::/64', 'full form, upper case, leading zeros'],
  ['2001:db8::ffff:ffff:ffff:ffff', '2001:db8::/64', 'last host of the /64'],
  ['[2001:db8::2]:443', '2001:db8::/64', 'bracketed with a port'],
  ['2001:db8::192.0.2.1', '2001:db8::/64', 'mixed notation with an IPv4 tail (not mapped)'],
  ['2001:db8:0:1::1', '2001:db8:0:1::/64', 'the neighbouring /64 is another key'],
  ['2001:db8:85a3:8d3:1319:8a2e:370:7348', '2001:db8:85a3:8d3::/64', 'no zero group in the network'],
  ['::ffff:192.0.2.1', '192.0.2.1', 'IPv4-mapped, dotted tail'],
  ['::FFFF:C000:0201', '192.0.2.1', 'IPv4-mapped, hex tail'],
  ['0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1', 'IPv4-mapped, zeros written out'],
  ['fe80::1%eth0', 'fe80::/64', 'link-local with a zone'],
  ['fe80::2%25', 'fe80::/64', 'link-local with a numeric zone'],
]

function adapterView(ip: string): KeyRequest {
  return { ip, method: 'GET', routePattern: '/', header: () => undefined }
}

t.test('replay keys an address as the adapters do, and as the RFCs say', async (t) => {
  for (const [input, key, why] of table) {
    t.equal(addressKey(input, 'ip'), key, `replay: ${input} (${why})`)
    t.equal(keyPart('ip', adapterView(input)), 'ip:' + key, `adapters: ${input} (${why})`)
  }
})

t.test('a replay groups the requests of those addresses by those keys', async (t) => {
  // rate ~0 and burst 1: every key's second request is refused, so every key is throttled and
  // its request count says how many of the table's addresses it grouped (2 requests each).
  const T0 = Date.parse('2026-01-05T10:00:00Z')
  const ts = '05/Jan/2026:10:00:00 +0000'
  const r = new Replay({ format: 'access', ratePerSecond: 1e-6, burst: 1, top: 100, seed: 1 })
  for (const [input] of table) for (let i = 0; i < 2; i++) r.line(`${input} - - [${ts}] "GET / HTTP/1.1" 200 1`)
  const rep = r.finish()
  r.close()
  t.equal(rep.span.startMs, T0)
  const want = new Map<string, number>()
  for (const [, key] of table) want.set(key, (want.get(key) ?? 0) + 2)
  t.same(
    new Map(rep.throttled.top.map((k) => [k.key, k.requests])),
    want,
    'one key per client, holding the requests of all its spellings',
  )
  t.equal(rep.distinctKeys.exact, want.size)
})

t.test('ip24 groups IPv4 by its /24 and leaves IPv6 at its /64', async (t) => {
  t.equal(addressKey('192.0.2.1', 'ip24'), '192.0.2.0/24')
  t.equal(addressKey('::ffff:192.0.2.200', 'ip24'), '192.0.2.0/24', 'a mapped address joins its IPv4 /24')
  t.equal(addressKey('2001:db8:0:0:1::1', 'ip24'), '2001:db8::/64')
  t.equal(addressKey('fe80::1%eth0', 'ip24'), 'fe80::/64')
})
