import { digits, monthIndex } from './access-log.js'

/** The authentication events the replay scores. */
export type AuthEvent = 'failed' | 'invalid' | 'accepted'

/** One parsed auth-log line; {@link AuthLogParser.parse} fills a reused instance. */
export interface AuthRecord {
  /** The event, or `''` when the line is well-formed syslog but not an sshd login event. */
  event: AuthEvent | ''
  /** The remote address of the event (`from <ip>`). */
  ip: string
  /** The user name tried (may be `''`: sshd logs `Invalid user  from …` for an empty name). */
  user: string
  /** How many times the event happened: N for `message repeated N times: [ … ]`, else 1. */
  count: number
  /** The line's time in ms since the Unix epoch (syslog times without a zone are read as UTC). */
  timeMs: number
}

/** A fresh record to pass to {@link AuthLogParser.parse}. */
export function authRecord(): AuthRecord {
  return { event: '', ip: '', user: '', count: 1, timeMs: 0 }
}

/** The outcome of parsing one auth-log line. */
export type AuthParse = 'event' | 'other' | 'bad'

/**
 * Parser of OpenSSH authentication events in syslog files (`/var/log/auth.log`,
 * `/var/log/secure`), in the classic BSD syslog layout (RFC 3164:
 * `Mmm dd HH:MM:SS host prog[pid]: message`) or the ISO 8601 layout of current rsyslog
 * (`2024-03-27T13:06:56.123456+00:00 host prog[pid]: message`).
 *
 * Events read from sshd's messages:
 * - `failed`: `Failed <method> for [invalid user ]<user> from <ip> port <n> …`
 * - `invalid`: `Invalid user <user> from <ip>[ port <n>]`
 * - `accepted`: `Accepted <method> for <user> from <ip> port <n> …`
 * - `message repeated N times: [ <one of the above> ]` counts N events.
 *
 * Every other well-formed syslog line (PAM, session, disconnect, other programs) parses as
 * `'other'`. BSD syslog lines carry no year: the parser starts at `year` and moves to the
 * next year when the month goes back by more than six (December → January).
 */
export class AuthLogParser {
  private year: number
  private lastMonth = -1

  /** @param year the year of the first BSD-syslog line, e.g. 2026 (ISO lines carry their own) */
  constructor(year: number) {
    this.year = year
  }

  /**
   * Parse one line into `out`.
   * @param line the line without its newline
   * @param out the record to fill
   * @returns `'event'` (an sshd login event, `out` filled), `'other'` (a syslog line that is
   * not one; `out.timeMs` filled) or `'bad'` (not a syslog line: no valid time, no host or
   * no `prog:` tag)
   */
  parse(line: string, out: AuthRecord): AuthParse {
    let i: number
    const c0 = line.charCodeAt(0)
    if (c0 >= 48 && c0 <= 57) {
      const t = parseIsoTime(line)
      if (t !== t) return 'bad'
      out.timeMs = t
      i = line.indexOf(' ')
    } else {
      const mon = monthIndex(line, 0)
      if (mon < 0 || line.charCodeAt(3) !== 32) return 'bad'
      // day is space-padded: "Mar  7"
      const d = line.charCodeAt(4) === 32 ? digits(line, 5, 1) : digits(line, 4, 2)
      if (d < 1 || d > 31 || line.charCodeAt(6) !== 32) return 'bad'
      if (line.charCodeAt(9) !== 58 || line.charCodeAt(12) !== 58 || line.charCodeAt(15) !== 32) return 'bad'
      const hh = digits(line, 7, 2)
      const mm = digits(line, 10, 2)
      const ss = digits(line, 13, 2)
      if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60) return 'bad'
      if (this.lastMonth >= 0 && mon < this.lastMonth - 6) this.year++
      this.lastMonth = mon
      out.timeMs = Date.UTC(this.year, mon, d, hh, mm, ss)
      i = 15
    }
    // host, then "prog[pid]: " or "prog: "
    if (i < 0) return 'bad'
    const hostEnd = line.indexOf(' ', i + 1)
    if (hostEnd <= i + 1) return 'bad'
    const colon = line.indexOf(': ', hostEnd + 1)
    if (colon < 0) return 'bad'
    const tag = line.slice(hostEnd + 1, colon)
    if (tag.length === 0 || tag.indexOf(' ') >= 0) return 'bad'
    out.event = ''
    out.count = 1
    if (!tag.startsWith('sshd')) return 'other'
    let msg = colon + 2
    if (line.startsWith('message repeated ', msg)) {
      const times = line.indexOf(' times: [ ', msg + 17)
      if (times < 0) return 'other'
      const n = Number(line.slice(msg + 17, times))
      if (!Number.isInteger(n) || n < 1) return 'other'
      out.count = n
      msg = times + 10
    }
    if (line.startsWith('Failed ', msg)) {
      const f = line.indexOf(' for ', msg + 7)
      if (f < 0) return 'other'
      let u = f + 5
      if (line.startsWith('invalid user ', u)) u += 13
      return this.userFrom(line, u, 'failed', out)
    }
    if (line.startsWith('Invalid user ', msg)) return this.userFrom(line, msg + 13, 'invalid', out)
    if (line.startsWith('Accepted ', msg)) {
      const f = line.indexOf(' for ', msg + 9)
      if (f < 0) return 'other'
      return this.userFrom(line, f + 5, 'accepted', out)
    }
    return 'other'
  }

  /** Read `<user> from <ip>` starting at `u`. */
  private userFrom(line: string, u: number, event: AuthEvent, out: AuthRecord): AuthParse {
    // the user name may be empty or contain spaces: the address follows the last " from "
    const f = line.lastIndexOf(' from ')
    if (f < u - 1) return 'other'
    const ipStart = f + 6
    let ipEnd = line.indexOf(' ', ipStart)
    if (ipEnd < 0) ipEnd = line.length
    let ip = line.slice(ipStart, ipEnd)
    if (ip.endsWith(']')) ip = ip.slice(0, -1)
    if (ip.length === 0) return 'other'
    out.user = f >= u ? line.slice(u, f) : ''
    out.ip = ip
    out.event = event
    return 'event'
  }
}

/**
 * Parse an ISO 8601 time `yyyy-mm-ddTHH:MM:SS[.frac](Z|±hh:mm)` at the start of `s`.
 * @returns ms since the Unix epoch, or NaN when malformed
 */
export function parseIsoTime(s: string): number {
  const y = digits(s, 0, 4)
  const mo = digits(s, 5, 2)
  const d = digits(s, 8, 2)
  const hh = digits(s, 11, 2)
  const mm = digits(s, 14, 2)
  const ss = digits(s, 17, 2)
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60)
    return NaN
  if (
    s.charCodeAt(4) !== 45 ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 ||
    s.charCodeAt(13) !== 58 ||
    s.charCodeAt(16) !== 58
  ) {
    return NaN
  }
  let i = 19
  let frac = 0
  if (s.charCodeAt(i) === 46) {
    let scale = 100
    i++
    for (let c = s.charCodeAt(i) - 48; c >= 0 && c <= 9; c = s.charCodeAt(++i) - 48) {
      frac += c * scale
      scale /= 10
    }
  }
  let offsetMs: number
  const z = s.charCodeAt(i)
  if (z === 90) {
    offsetMs = 0
  } else if (z === 43 || z === 45) {
    const oh = digits(s, i + 1, 2)
    const om = digits(s, i + 4, 2)
    if (oh < 0 || om < 0 || s.charCodeAt(i + 3) !== 58) return NaN
    offsetMs = (z === 43 ? 1 : -1) * (oh * 60 + om) * 60_000
  } else {
    return NaN
  }
  const local = Date.UTC(y, mo - 1, d, hh, mm, ss)
  if (new Date(local).getUTCDate() !== d) return NaN
  return local + Math.round(frac) - offsetMs
}
