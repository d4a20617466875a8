/**
 * Parser of access logs in the Common Log Format and the Combined Log Format (the Apache
 * `common`/`combined` LogFormat and nginx's default `combined` log_format):
 *
 * ```
 * host ident authuser [dd/Mon/yyyy:HH:MM:SS ±hhmm] "METHOD /path?query PROTO" status bytes ["referer" "user-agent"]
 * ```
 *
 * Written by hand with `indexOf`/`charCodeAt` rather than a regular expression: the replay
 * reads hundreds of thousands of lines per second and every field but the client address,
 * the request line, the time and the status is skipped.
 */

/** One parsed access-log line; {@link parseAccessLine} fills a reused instance. */
export interface AccessRecord {
  /** The client address (the `%h` field), as written. */
  ip: string
  /** The request method (`GET`), or `''` when the request line has no method (`"-"`, garbage). */
  method: string
  /** The request path without the query string, or `''` when absent. */
  path: string
  /** The HTTP status, 100–599. */
  status: number
  /** The request time in ms since the Unix epoch (UTC, the line's offset applied). */
  timeMs: number
}

/** A fresh record to pass to {@link parseAccessLine}. */
export function accessRecord(): AccessRecord {
  return { ip: '', method: '', path: '', status: 0, timeMs: 0 }
}

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

/** The three-letter English month abbreviation at `s[i..i+3)` as 0–11, or −1. */
export function monthIndex(s: string, i: number): number {
  const m = MONTHS[s.slice(i, i + 3)]
  return m === undefined ? -1 : m
}

/** `n` decimal digits at `s[i..i+n)` as a number, or −1 if any is not a digit. */
export function digits(s: string, i: number, n: number): number {
  let v = 0
  for (let k = 0; k < n; k++) {
    const c = s.charCodeAt(i + k) - 48
    if (c < 0 || c > 9) return -1
    v = v * 10 + c
  }
  return v
}

// Cache of the day part: consecutive lines nearly always share the date.
let cachedDay = ''
let cachedDayMs = 0

/**
 * Parse the CLF time `dd/Mon/yyyy:HH:MM:SS ±hhmm` starting at `s[i]` (just after `[`).
 * @returns ms since the Unix epoch, or NaN when malformed (a field out of range included)
 */
export function parseClfTime(s: string, i: number): number {
  // dd/Mon/yyyy:HH:MM:SS +hhmm  → 26 characters
  if (s.length < i + 26) return NaN
  if (s.charCodeAt(i + 2) !== 47 || s.charCodeAt(i + 6) !== 47 || s.charCodeAt(i + 11) !== 58) return NaN
  if (s.charCodeAt(i + 14) !== 58 || s.charCodeAt(i + 17) !== 58 || s.charCodeAt(i + 20) !== 32) return NaN
  const dayKey = s.slice(i, i + 11)
  let dayMs: number
  if (dayKey === cachedDay) {
    dayMs = cachedDayMs
  } else {
    const d = digits(s, i, 2)
    const mon = monthIndex(s, i + 3)
    const y = digits(s, i + 7, 4)
    if (d < 1 || d > 31 || mon < 0 || y < 0) return NaN
    dayMs = Date.UTC(y, mon, d)
    // Date.UTC rolls 31/Feb over into March: refuse it instead
    if (new Date(dayMs).getUTCDate() !== d) return NaN
    cachedDay = dayKey
    cachedDayMs = dayMs
  }
  const hh = digits(s, i + 12, 2)
  const mm = digits(s, i + 15, 2)
  const ss = digits(s, i + 18, 2)
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60) return NaN
  const sign = s.charCodeAt(i + 21)
  if (sign !== 43 && sign !== 45) return NaN
  const oh = digits(s, i + 22, 2)
  const om = digits(s, i + 24, 2)
  if (oh < 0 || om < 0 || om > 59) return NaN
  const offsetMs = (oh * 60 + om) * 60_000
  const local = dayMs + ((hh * 60 + mm) * 60 + ss) * 1000
  // local time = UTC + offset, so UTC = local − offset
  return sign === 43 ? local - offsetMs : local + offsetMs
}

/**
 * Parse one CLF/Combined line into `out`.
 * A request line that is not `METHOD path PROTO` (`"-"`, a TLS handshake sent to the HTTP
 * port) still parses, with `method` and `path` empty: the client did make a request.
 * @param line the line without its newline (a trailing `\r` is tolerated)
 * @param out the record to fill (left partly written when the line does not parse)
 * @returns true when the line parsed; false for anything else (no address, no `[time]`,
 * a malformed time, no quoted request, a status that is not three digits in 100–599)
 */
export function parseAccessLine(line: string, out: AccessRecord): boolean {
  const sp = line.indexOf(' ')
  if (sp <= 0) return false
  const lb = line.indexOf(' [', sp)
  if (lb < 0) return false
  const t = parseClfTime(line, lb + 2)
  if (t !== t) return false
  if (
    line.charCodeAt(lb + 28) !== 93 /* ] */ ||
    line.charCodeAt(lb + 29) !== 32 ||
    line.charCodeAt(lb + 30) !== 34 /* " */
  ) {
    return false
  }
  const reqStart = lb + 31
  // The request ends at the first `"` followed by ` ddd` (an escaped quote inside the request
  // is `\"` in Apache and `\x22` in nginx, neither followed by a space and a status).
  let q = reqStart - 1
  let status: number
  for (;;) {
    q = line.indexOf('"', q + 1)
    if (q < 0) return false
    if (line.charCodeAt(q + 1) === 32 && line.charCodeAt(q - 1) !== 92) {
      status = digits(line, q + 2, 3)
      if (status >= 0) break
    }
  }
  if (status < 100 || status > 599) return false
  const after = line.charCodeAt(q + 5)
  if (after === after && after !== 32 && after !== 13) return false // a 4th digit
  const s1 = line.indexOf(' ', reqStart)
  if (s1 < 0 || s1 > q) {
    out.method = ''
    out.path = ''
  } else {
    out.method = line.slice(reqStart, s1)
    let s2 = line.indexOf(' ', s1 + 1)
    if (s2 < 0 || s2 > q) s2 = q
    const qm = line.indexOf('?', s1 + 1)
    out.path = line.slice(s1 + 1, qm >= 0 && qm < s2 ? qm : s2)
  }
  out.ip = line.slice(0, sp)
  out.status = status
  out.timeMs = t
  return true
}
