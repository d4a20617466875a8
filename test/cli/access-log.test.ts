import t from 'tap'
import { accessRecord, parseAccessLine, parseClfTime } from '../../src/cli/access-log.js'

// Reference lines: the Apache httpd log-files documentation (Common and Combined examples),
// nginx's default `combined` log_format, and hand-made variants. Expected times are the
// documented local times converted to UTC by hand.
t.test('the Apache documentation examples parse', async (t) => {
  const r = accessRecord()
  // https://httpd.apache.org/docs/2.4/logs.html#common: 10/Oct/2000:13:55:36 −0700 = 20:55:36 UTC
  t.ok(parseAccessLine('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326', r))
  t.same(
    { ...r },
    { ip: '127.0.0.1', method: 'GET', path: '/apache_pb.gif', status: 200, timeMs: Date.parse('2000-10-10T20:55:36Z') },
  )
  t.ok(
    parseAccessLine(
      '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)"',
      r,
    ),
  )
  t.equal(r.path, '/apache_pb.gif')
  t.equal(r.timeMs, 971211336000)
})

t.test('nginx combined, IPv6, query strings, positive offsets', async (t) => {
  const r = accessRecord()
  t.ok(
    parseAccessLine(
      '2001:db8::1 - - [01/Jan/2024:00:30:00 +0100] "POST /api/login?next=%2F HTTP/2.0" 401 17 "-" "curl/8.5.0"',
      r,
    ),
  )
  t.same(
    { ...r },
    { ip: '2001:db8::1', method: 'POST', path: '/api/login', status: 401, timeMs: Date.parse('2023-12-31T23:30:00Z') },
  )
  t.ok(
    parseAccessLine('10.0.0.1 - - [29/Feb/2024:23:59:60 +0000] "GET / HTTP/1.1" 304 0\r', r),
    'leap day, leap second, trailing CR',
  )
  t.equal(r.status, 304)
  t.equal(r.timeMs, Date.parse('2024-03-01T00:00:00Z'))
})

t.test('odd request lines still count as requests', async (t) => {
  const r = accessRecord()
  t.ok(parseAccessLine('10.0.0.2 - - [17/May/2015:10:05:03 +0000] "-" 408 0 "-" "-"', r))
  t.same([r.method, r.path, r.status], ['', '', 408])
  t.ok(
    parseAccessLine('10.0.0.3 - - [17/May/2015:10:05:03 +0000] "\\x16\\x03\\x01\\x02\\x00" 400 226 "-" "-"', r),
    'TLS bytes on the HTTP port',
  )
  t.same([r.method, r.path, r.status], ['', '', 400])
  t.ok(
    parseAccessLine('10.0.0.4 - - [17/May/2015:10:05:03 +0000] "GET /a\\"b HTTP/1.1" 200 5', r),
    'escaped quote inside the request',
  )
  t.same([r.path, r.status], ['/a\\"b', 200])
  t.ok(
    parseAccessLine('10.0.0.5 - - [17/May/2015:10:05:03 +0000] "GET /only-path" 404 5', r),
    'HTTP/0.9-style request without protocol',
  )
  t.same([r.method, r.path, r.status], ['GET', '/only-path', 404])
})

t.test('malformed lines are refused, never thrown on', async (t) => {
  const r = accessRecord()
  const bad = [
    '',
    'garbage',
    '10.0.0.1 - - 17/May/2015:10:05:03 +0000 "GET / HTTP/1.1" 200 5',
    '10.0.0.1 - - [17/Mai/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5',
    '10.0.0.1 - - [30/Feb/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5',
    '10.0.0.1 - - [17/May/2015:24:05:03 +0000] "GET / HTTP/1.1" 200 5',
    '10.0.0.1 - - [17/May/2015:10:05:03 0000] "GET / HTTP/1.1" 200 5',
    '10.0.0.1 - - [17/May/2015:10:05:03 +0000] GET / HTTP/1.1 200 5',
    '10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" abc 5',
    '10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 2000 5',
    '10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 099 5',
    '10.0.0.1 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1',
    '10.0.0.1 - - [17/May/2015:10:05',
    ' - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5',
  ]
  for (const line of bad) t.notOk(parseAccessLine(line, r), JSON.stringify(line))
})

t.test('parseClfTime applies the offset sign correctly', async (t) => {
  t.equal(parseClfTime('01/Jan/1970:00:00:00 +0000', 0), 0)
  t.equal(parseClfTime('01/Jan/1970:01:00:00 +0100', 0), 0)
  t.equal(parseClfTime('31/Dec/1969:19:00:00 -0500', 0), 0)
  t.ok(Number.isNaN(parseClfTime('31/Dec/1969:19:00:00 -0560', 0)), 'offset minutes > 59')
})
