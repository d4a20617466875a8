import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Replay } from '../../src/cli/replay.js'
import { missingDataReason, sharedData } from './fixtures/shared-data.js'

// Replays of the two real logs of ../shared/data. Reference values: the data README
// (10,000 lines, 1,753 distinct client addresses; 7,121 lines with 891 failed-login and
// invalid-user lines) and independent computations here (regular expressions over the raw
// text, an exact token bucket written out below), never the replay's own output.
if (sharedData === undefined) {
  t.test('replays of the real logs of ../shared/data', { skip: missingDataReason }, async () => {})
} else {
  const dir = sharedData
  const MONTHS: Record<string, number> = {
    Jan: 0,
    Feb: 1,
    Mar: 2,
    Apr: 3,
    May: 4,
    Jun: 5,
    Jul: 6,
    Aug: 7,
    Sep: 8,
    Oct: 9,
    Nov: 10,
    Dec: 11,
  }

  t.test('access.log: counts, span and the debt meter against an exact token bucket', async (t) => {
    const text = readFileSync(join(dir, 'access.log'), 'utf8')
    const raw = text.split('\n').filter((l) => l.length > 0)
    t.equal(raw.length, 10_000, 'README: 10,000 lines')
    // independent parse: regex
    const re = /^(\S+) \S+ \S+ \[(\d\d)\/(\w{3})\/(\d{4}):(\d\d):(\d\d):(\d\d) ([+-]\d{4})\]/
    const events = raw.map((l, i) => {
      const m = re.exec(l)!
      const off = (m[8][0] === '-' ? -1 : 1) * (Number(m[8].slice(1, 3)) * 60 + Number(m[8].slice(3))) * 60_000
      return { ip: m[1], t: Date.UTC(+m[4], MONTHS[m[3]], +m[2], +m[5], +m[6], +m[7]) - off, i }
    })
    const sorted = [...events].sort((a, b) => a.t - b.t || a.i - b.i)
    // exact token bucket (GCRA): rate 1/s, burst 20, a request admitted iff debt + 1 ≤ 20
    const buckets = new Map<string, { debt: number; at: number }>()
    let rejected = 0
    const rejectedKeys = new Set<string>()
    for (const e of sorted) {
      const b = buckets.get(e.ip) ?? { debt: 0, at: e.t }
      b.debt = Math.max(0, b.debt - (e.t - b.at) / 1000)
      b.at = e.t
      if (b.debt + 1 <= 20) b.debt += 1
      else {
        rejected++
        rejectedKeys.add(e.ip)
      }
      buckets.set(e.ip, b)
    }
    // a disorder tolerance larger than the log's (all its disorder is within one minute)
    const replay = new Replay({ ratePerSecond: 1, burst: 20, maxDisorderMs: 3_600_000, cellsPerLevel: 4096 })
    for (const l of text.split('\n')) if (l.length > 0) replay.line(l)
    const rep = replay.finish()
    replay.close()
    t.same([rep.input.linesRead, rep.input.linesParsed, rep.input.linesUnparseable], [10_000, 10_000, 0])
    t.equal(rep.distinctKeys.exact, 1753, 'README: 1,753 distinct client addresses')
    t.equal(rep.distinctKeys.method, 'hyperloglog')
    // HyperLogLog p = 14: σ = 1.04/√16384 = 0.81 %; allow 4σ
    t.ok(Math.abs(rep.distinctKeys.count - 1753) <= 4 * 0.0081 * 1753, `HyperLogLog ${rep.distinctKeys.count} ≈ 1,753`)
    t.equal(rep.span.startMs, sorted[0].t)
    t.equal(rep.span.endMs, sorted.at(-1)!.t)
    t.ok(rep.input.outOfOrder > 0, 'README: not strictly sorted by time')
    t.equal(rep.input.late, 0)
    t.equal(rep.reference.rejected, rejected, `exact bucket rejects ${rejected}`)
    t.equal(rep.reference.distinctKeysThrottled, rejectedKeys.size)
    // the sketch (4 × 4096 cells, 1,753 keys) may differ only through collisions on all four
    // levels: allow 1% of requests
    t.ok(
      rep.reference.decisionsDiffering <= 100,
      `sketch vs exact: ${rep.reference.decisionsDiffering} decisions differ`,
    )
    t.ok(Math.abs(rep.totals.rejected - rejected) <= 100)
  })

  t.test('auth.log: events, brute-force sources throttled, sketch vs reference', async (t) => {
    const text = readFileSync(join(dir, 'auth.log'), 'utf8')
    const raw = text.split('\n').filter((l) => l.length > 0)
    t.equal(raw.length, 7121, 'README: 7,121 lines')
    const failedOrInvalid = raw.filter((l) => /sshd\[\d+\]: .*(Failed password|Invalid user)/.test(l))
    t.equal(failedOrInvalid.length, 891, 'README: 891 failed-login and invalid-user lines')
    // events with repeats expanded, by regex
    let expected = 0
    const perIp = new Map<string, number>()
    for (const l of raw) {
      const m =
        /sshd\[\d+\]: (?:message repeated (\d+) times: \[ )?(?:Failed \S+ for (?:invalid user )?.* from (\S+) port|Invalid user .* from ([^\s\]]+)|Accepted \S+ for .* from (\S+) port)/.exec(
          l,
        )
      if (!m) continue
      const n = m[1] ? Number(m[1]) : 1
      expected += n
      const ip = m[2] ?? m[3] ?? m[4]
      if (!m[4]) perIp.set(ip, (perIp.get(ip) ?? 0) + n)
    }
    const replay = new Replay({ year: 2026 })
    for (const l of text.split('\n')) if (l.length > 0) replay.line(l)
    const rep = replay.finish()
    replay.close()
    t.equal(rep.input.format, 'auth')
    t.same([rep.input.linesRead, rep.input.linesParsed, rep.input.linesUnparseable], [7121, 7121, 0])
    t.equal(rep.input.events, expected, `${expected} events (repeats expanded)`)
    // the source with the most failures must be among the throttled, and a source with fewer
    // failures than the threshold (5) never is
    const worst = [...perIp].sort((a, b) => b[1] - a[1])[0][0]
    t.ok(
      rep.throttled.top.some((k) => k.key === worst),
      `${worst} (most failures) is throttled`,
    )
    const light = [...perIp].filter(([, n]) => n < 5).map(([ip]) => ip)
    t.ok(light.length > 0)
    t.notOk(
      rep.throttled.top.some((k) => light.includes(k.key)),
      'no source with < 5 failures is throttled',
    )
    t.ok(
      rep.reference.decisionsDiffering <= rep.totals.requests * 0.01,
      `${rep.reference.decisionsDiffering} decisions differ`,
    )
  })
}
