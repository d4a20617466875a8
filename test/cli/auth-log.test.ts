import t from 'tap'
import { AuthLogParser, authRecord, parseIsoTime } from '../../src/cli/auth-log.js'

// Lines in the shapes OpenSSH's sshd writes through syslog (auth.c `auth_log`:
// "%s %s for %s%.100s from %.200s port %d ssh2"; "Invalid user %.100s from %.100s port %d").
t.test('sshd login events', async (t) => {
  const p = new AuthLogParser(2026)
  const r = authRecord()
  const rows: [string, string, string, string, number][] = [
    [
      'Mar 27 13:10:01 web sshd[1291]: Failed password for root from 203.0.113.9 port 52144 ssh2',
      'failed',
      '203.0.113.9',
      'root',
      1,
    ],
    [
      'Mar 27 13:10:02 web sshd[1291]: Failed password for invalid user admin from 203.0.113.9 port 52146 ssh2',
      'failed',
      '203.0.113.9',
      'admin',
      1,
    ],
    ['Mar 27 13:10:03 web sshd[1291]: Invalid user oracle from 198.51.100.7', 'invalid', '198.51.100.7', 'oracle', 1],
    ['Mar 27 13:10:03 web sshd[1291]: Invalid user  from 198.51.100.7 port 4022', 'invalid', '198.51.100.7', '', 1],
    [
      'Mar 27 13:10:04 web sshd[1291]: Failed password for invalid user  from 198.51.100.7 port 4022 ssh2',
      'failed',
      '198.51.100.7',
      '',
      1,
    ],
    [
      'Mar 27 13:10:05 web sshd[1300]: Accepted publickey for ubuntu from 192.0.2.4 port 50022 ssh2: RSA SHA256:Kl8kPGZrTiz7g4FO1hyqHdsSBBb5Fge6NWOobN03XJg',
      'accepted',
      '192.0.2.4',
      'ubuntu',
      1,
    ],
    [
      'Mar 27 13:10:06 web sshd[1300]: Accepted password for deploy from 2001:db8::7 port 50022 ssh2',
      'accepted',
      '2001:db8::7',
      'deploy',
      1,
    ],
    [
      'Mar 27 13:10:07 web sshd[1291]: message repeated 5 times: [ Failed password for root from 203.0.113.9 port 52144 ssh2]',
      'failed',
      '203.0.113.9',
      'root',
      5,
    ],
    [
      'Mar 27 13:10:08 web sshd[1291]: message repeated 2 times: [ Invalid user x from 203.0.113.9]',
      'invalid',
      '203.0.113.9',
      'x',
      2,
    ],
  ]
  for (const [line, event, ip, user, count] of rows) {
    t.equal(p.parse(line, r), 'event', line)
    t.same([r.event, r.ip, r.user, r.count], [event, ip, user, count], line)
  }
  t.equal(r.timeMs, Date.parse('2026-03-27T13:10:08Z'))
})

t.test('other syslog lines parse as other; broken ones as bad', async (t) => {
  const p = new AuthLogParser(2026)
  const r = authRecord()
  for (const line of [
    'Mar 27 13:06:56 ip-10-77-20-248 sshd[1291]: Server listening on 0.0.0.0 port 22.',
    'Mar 27 13:06:56 ip-10-77-20-248 systemd-logind[1118]: Watching system buttons on /dev/input/event0 (Power Button)',
    'Mar  7 13:06:56 host CRON[99]: pam_unix(cron:session): session opened for user root by (uid=0)',
    'Mar 27 13:07:00 host sshd[5]: pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh ruser= rhost=1.2.3.4',
    'Mar 27 13:07:00 host sshd[5]: Failed password',
  ]) {
    t.equal(p.parse(line, r), 'other', line)
  }
  for (const line of [
    '',
    'hello world',
    'Foo 27 13:06:56 host sshd[1]: Failed password for root from 1.2.3.4 port 1 ssh2',
    'Mar 32 13:06:56 host sshd[1]: x',
    'Mar 27 25:06:56 host sshd[1]: x',
    'Mar 27 13:06:56 host',
    'Mar 27 13:06:56 host no colon here',
    '2024-13-01T00:00:00Z host sshd[1]: x',
  ]) {
    t.equal(p.parse(line, r), 'bad', JSON.stringify(line))
  }
})

t.test('BSD syslog has no year: December → January moves to the next year', async (t) => {
  const p = new AuthLogParser(2025)
  const r = authRecord()
  p.parse('Dec 31 23:59:59 h sshd[1]: Invalid user a from 1.1.1.1', r)
  t.equal(r.timeMs, Date.parse('2025-12-31T23:59:59Z'))
  p.parse('Jan  1 00:00:01 h sshd[1]: Invalid user a from 1.1.1.1', r)
  t.equal(r.timeMs, Date.parse('2026-01-01T00:00:01Z'))
})

t.test('ISO 8601 syslog (rsyslog default on current Debian)', async (t) => {
  const p = new AuthLogParser(1999)
  const r = authRecord()
  t.equal(
    p.parse('2024-03-27T13:06:56.250000+02:00 web sshd[12]: Failed password for root from 1.2.3.4 port 22 ssh2', r),
    'event',
  )
  t.equal(r.timeMs, Date.parse('2024-03-27T11:06:56.250Z'))
  t.equal(parseIsoTime('2024-03-27T13:06:56Z'), Date.parse('2024-03-27T13:06:56Z'))
  t.ok(Number.isNaN(parseIsoTime('2024-02-30T13:06:56Z')))
  t.ok(Number.isNaN(parseIsoTime('2024-02-01T13:06:56')), 'no zone')
})
