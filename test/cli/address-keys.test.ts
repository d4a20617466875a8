import t from 'tap'
import { AddressKeys } from '../../src/cli/address-keys.js'
import { addressKey, Replay } from '../../src/cli/replay.js'
import type { ReplayOptions } from '../../src/cli/replay-config.js'

// The replay keyed by address looks each line's address up by its bytes (address-keys.ts)
// instead of building its string, normalizing it and hashing it into the reference's Map on
// every line. These tests hold it to the string path it replaced: the same key for every
// spelling (the expected keys are the RFC-derived ones of replay-keys.test.ts), and a report
// equal, field for field, to the one built from the same lines given as strings.

const bytesOf = (s: string) => Buffer.from(`<${s}>`, 'utf8') // the address at [1, n − 1): not at offset 0

t.test('one id per key, for every spelling of it, handed out in order of first sight', async (t) => {
  const added: [string, number][] = []
  const a = new AddressKeys(
    (ip) => addressKey(ip, 'ip'),
    (key, id) => void added.push([key, id]),
  )
  const idOf = (s: string) => {
    const b = bytesOf(s)
    return a.idOf(b, 1, b.length - 1)
  }
  t.equal(idOf('192.0.2.1'), 0)
  t.equal(idOf('2001:db8::1'), 1)
  t.equal(idOf('::ffff:192.0.2.1'), 0, 'IPv4-mapped: the IPv4 key (RFC 4291 §2.5.5.2)')
  t.equal(idOf('2001:0DB8:0000:0000:0000:0000:0000:0001'), 1, 'full form of the same /64')
  t.equal(idOf('192.0.2.1'), 0, 'the same bytes again')
  t.equal(idOf('192.0.2.10'), 2, 'a longer address sharing a prefix is another key')
  t.equal(idOf('192.0.2.'), 3, 'so is a shorter one')
  t.same(a.keys, ['192.0.2.1', '2001:db8::/64', '192.0.2.10', '192.0.2.'])
  t.same(
    added,
    [
      ['192.0.2.1', 0],
      ['2001:db8::/64', 1],
      ['192.0.2.10', 2],
      ['192.0.2.', 3],
    ],
    'onNewKey once per key, not per spelling',
  )
})

t.test('ip24: the addresses of one /24 share one id; the table grows past its first sizes', async (t) => {
  let news = 0
  const a = new AddressKeys(
    (ip) => addressKey(ip, 'ip24'),
    () => void news++,
  )
  // 60,000 distinct addresses (past the first 4,096 slots, 2,048 entries and 32 KiB of bytes,
  // so every table is regrown and rehashed), over 235 /24 networks
  const N = 60_000
  const ip = (i: number) => `10.${(i >> 8) & 255}.${i & 255}.${i % 251}`
  const first = new Map<string, number>()
  for (let i = 0; i < N; i++) {
    const b = bytesOf(ip(i))
    const id = a.idOf(b, 1, b.length - 1)
    const key = addressKey(ip(i), 'ip24')
    if (!first.has(key)) first.set(key, id)
    if (a.keys[id] !== key || first.get(key) !== id) {
      t.fail(`address ${ip(i)}: id ${id}, key ${a.keys[id]}, expected ${key}`)
      return
    }
  }
  // and again, now that the tables are full: every address finds the id it got
  for (let i = 0; i < N; i += 7) {
    const b = bytesOf(ip(i))
    if (a.keys[a.idOf(b, 1, b.length - 1)] !== addressKey(ip(i), 'ip24')) {
      t.fail(`address ${ip(i)} not found again`)
      return
    }
  }
  t.equal(a.keys.length, first.size)
  t.equal(news, first.size)
  t.equal(first.size, new Set(Array.from({ length: N }, (_, i) => addressKey(ip(i), 'ip24'))).size)
})

// A small log with everything the key path meets: repeated and new addresses, several
// spellings of one client, IPv6, lines out of order and late, unparseable lines, statuses
// that weigh on the abuse score.
function log(): string[] {
  const T0 = Date.parse('2026-01-05T10:00:00Z')
  const MON = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
  const p = (n: number) => String(n).padStart(2, '0')
  const ts = (ms: number) => {
    const d = new Date(ms)
    return `${p(d.getUTCDate())}/${MON[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  }
  const ips = ['192.0.2.1', '::ffff:192.0.2.1', '198.51.100.7', '2001:db8::1', '2001:db8:0:0:1::1', '192.0.2.77']
  const statuses = [200, 401, 404, 200, 500, 304]
  const lines: string[] = []
  let x = 7
  for (let i = 0; i < 3000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    const ip = i % 17 === 0 ? `203.0.113.${i % 256}` : ips[x % ips.length]
    const sec = Math.floor(i / 20) - (x % 3) - (i % 500 === 499 ? 120 : 0)
    lines.push(`${ip} - - [${ts(T0 + sec * 1000)}] "GET /p?q=${i} HTTP/1.1" ${statuses[(x >> 8) % 6]} 10 "-" "t"`)
    if (i % 401 === 0) lines.push('not a log line')
  }
  return lines
}

function replay(lines: string[], options: ReplayOptions, asBytes: boolean) {
  const r = new Replay(options)
  for (const l of lines) {
    if (asBytes) {
      const b = Buffer.from(`\n${l}\n`)
      r.lineBytes(b, 1, b.length - 1)
    } else r.line(l)
  }
  const rep = r.finish()
  r.close()
  return rep
}

t.test('a replay from the bytes reports what the same lines as strings report', async (t) => {
  const lines = log()
  for (const options of [
    { ratePerSecond: 1, burst: 5, seed: 3 },
    { ratePerSecond: 1, burst: 5, seed: 3, key: 'ip24' as const },
    { ratePerSecond: 2, burst: 10, seed: 5, abuse: { '401': 3, '404': 1, '2xx': -0.5 }, cellsPerLevel: 64 },
    { format: 'access' as const, ratePerSecond: 1, burst: 3, seed: 9, maxDisorderMs: 500 },
    { ratePerSecond: 1, burst: 5, seed: 3, key: 'ip+route' as const },
  ]) {
    const fromStrings = replay(lines, options, false)
    const fromBytes = replay(lines, options, true)
    t.same(fromBytes, fromStrings, JSON.stringify(options))
    t.ok(
      fromStrings.totals.rejected > 0 && fromStrings.input.linesUnparseable > 0,
      'the log exercises refusals and bad lines',
    )
  }
})
