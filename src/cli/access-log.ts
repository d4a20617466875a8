/**
 * Parser of access logs in the Common Log Format and the Combined Log Format (the Apache
 * `common`/`combined` LogFormat and nginx's default `combined` log_format):
 *
 * ```
 * host ident authuser [dd/Mon/yyyy:HH:MM:SS ±hhmm] "METHOD /path?query PROTO" status bytes ["referer" "user-agent"]
 * ```
 *
 * Written by hand over the line's UTF-8 bytes rather than with a regular expression: the
 * replay reads hundreds of thousands of lines per second, straight from the file's buffers
 * (no string per line, no string for a field it does not need), and every field but the
 * client address, the request line, the time and the status is skipped. Every delimiter the
 * parser looks for is ASCII, and no byte of a multi-byte UTF-8 character is, so the bytes
 * split exactly where the characters do.
 */

/** One parsed access-log line; {@link parseAccessLine} fills a reused instance. */
export interface AccessRecord {
  /** The client address (the `%h` field), as written (left as it was by a `parseAccessBytes` told not to build it). */
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

/** The month abbreviations as 24-bit codes of their three bytes: 0–11. */
const MONTH_CODES = new Map<number, number>(
  Object.entries(MONTHS).map(([m, i]) => [(m.charCodeAt(0) << 16) | (m.charCodeAt(1) << 8) | m.charCodeAt(2), i]),
)

/** `n` decimal digits at `b[i..i+n)` as a number, or −1 if any is not a digit (or past `end`). */
function digitsAt(b: Uint8Array, i: number, n: number, end: number): number {
  if (i + n > end) return -1
  let v = 0
  for (let k = 0; k < n; k++) {
    const c = b[i + k] - 48
    if (c < 0 || c > 9) return -1
    v = v * 10 + c
  }
  return v
}

// Cache of the day part (`dd/Mon/yyyy`, 11 bytes): consecutive lines nearly always share it.
const cachedDay = new Uint8Array(11)
let cachedDayValid = false
let cachedDayMs = 0

/**
 * Parse the CLF time `dd/Mon/yyyy:HH:MM:SS ±hhmm` at `b[i..]` (just after `[`), within `end`.
 * @returns ms since the Unix epoch, or NaN when malformed (a field out of range included)
 */
function clfTimeAt(b: Uint8Array, i: number, end: number): number {
  // dd/Mon/yyyy:HH:MM:SS +hhmm  → 26 bytes
  if (end < i + 26) return NaN
  if (b[i + 2] !== 47 || b[i + 6] !== 47 || b[i + 11] !== 58) return NaN
  if (b[i + 14] !== 58 || b[i + 17] !== 58 || b[i + 20] !== 32) return NaN
  let same = cachedDayValid
  for (let k = 0; same && k < 11; k++) same = b[i + k] === cachedDay[k]
  let dayMs: number
  if (same) {
    dayMs = cachedDayMs
  } else {
    const d = digitsAt(b, i, 2, end)
    const mon = MONTH_CODES.get((b[i + 3] << 16) | (b[i + 4] << 8) | b[i + 5]) ?? -1
    const y = digitsAt(b, i + 7, 4, end)
    if (d < 1 || d > 31 || mon < 0 || y < 0) return NaN
    dayMs = Date.UTC(y, mon, d)
    // Date.UTC rolls 31/Feb over into March: refuse it instead
    if (new Date(dayMs).getUTCDate() !== d) return NaN
    for (let k = 0; k < 11; k++) cachedDay[k] = b[i + k]
    cachedDayValid = true
    cachedDayMs = dayMs
  }
  const hh = digitsAt(b, i + 12, 2, end)
  const mm = digitsAt(b, i + 15, 2, end)
  const ss = digitsAt(b, i + 18, 2, end)
  if (hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60) return NaN
  const sign = b[i + 21]
  if (sign !== 43 && sign !== 45) return NaN
  const oh = digitsAt(b, i + 22, 2, end)
  const om = digitsAt(b, i + 24, 2, end)
  if (oh < 0 || om < 0 || om > 59) return NaN
  const offsetMs = (oh * 60 + om) * 60_000
  const local = dayMs + ((hh * 60 + mm) * 60 + ss) * 1000
  // local time = UTC + offset, so UTC = local − offset
  return sign === 43 ? local - offsetMs : local + offsetMs
}

/**
 * Parse the CLF time `dd/Mon/yyyy:HH:MM:SS ±hhmm` starting at `s[i]` (just after `[`).
 * @returns ms since the Unix epoch, or NaN when malformed (a field out of range included)
 */
export function parseClfTime(s: string, i: number): number {
  const b = Buffer.from(s.slice(i, i + 26), 'utf8')
  return clfTimeAt(b, 0, b.length)
}

/**
 * The first index of byte `c` in `b[from..end)`, or −1. A loop rather than `Buffer#indexOf`:
 * the fields searched are a few dozen bytes long, and the native call's argument handling
 * cost more than the scan (`node --cpu-prof` of `grudge replay`, issue #18).
 */
function byteIndex(b: Buffer, c: number, from: number, end: number): number {
  for (let i = from; i < end; i++) if (b[i] === c) return i
  return -1
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
  const b = Buffer.from(line, 'utf8')
  return parseAccessBytes(b, 0, b.length, out, true, true) >= 0
}

/**
 * {@link parseAccessLine} over the bytes `b[start..end)` of one line (UTF-8, without its
 * newline): what the replay calls on the file's own buffers.
 * @param withRequest whether to fill `method` and `path` (left as they were otherwise: a
 * replay keyed by address alone needs no string of them)
 * @param withIp whether to fill `ip` (left as it was otherwise: the replay keyed by address
 * then looks the address up by its bytes, `b[start..returned end)`, see `address-keys.ts`)
 * @returns the end of the address in `b` (the address is `b[start..end)`, end > start) when
 * the line parsed; −1 when it did not
 * @internal
 */
export function parseAccessBytes(
  b: Buffer,
  start: number,
  end: number,
  out: AccessRecord,
  withRequest: boolean,
  withIp: boolean,
): number {
  // a trailing `\r` is tolerated (it ends the line for the 4th-digit check below)
  const sp = byteIndex(b, 32, start, end)
  if (sp <= start) return -1
  let lb = sp
  for (;;) {
    lb = byteIndex(b, 91 /* [ */, lb + 1, end)
    if (lb < 0) return -1
    if (b[lb - 1] === 32) break
  }
  lb-- // at the space of ' ['
  const t = clfTimeAt(b, lb + 2, end)
  if (t !== t) return -1
  if (lb + 30 >= end || b[lb + 28] !== 93 /* ] */ || b[lb + 29] !== 32 || b[lb + 30] !== 34 /* " */) return -1
  const reqStart = lb + 31
  // The request ends at the first `"` followed by ` ddd` (an escaped quote inside the request
  // is `\"` in Apache and `\x22` in nginx, neither followed by a space and a status).
  let q = reqStart - 1
  let status: number
  for (;;) {
    q = byteIndex(b, 34, q + 1, end)
    if (q < 0) return -1
    if (q + 1 < end && b[q + 1] === 32 && b[q - 1] !== 92) {
      status = digitsAt(b, q + 2, 3, end)
      if (status >= 0) break
    }
  }
  if (status < 100 || status > 599) return -1
  if (q + 5 < end) {
    const after = b[q + 5]
    if (after !== 32 && after !== 13) return -1 // a 4th digit
  }
  if (withRequest) {
    const s1 = byteIndex(b, 32, reqStart, end)
    if (s1 < 0 || s1 > q) {
      out.method = ''
      out.path = ''
    } else {
      out.method = b.toString('utf8', reqStart, s1)
      let s2 = byteIndex(b, 32, s1 + 1, end)
      if (s2 < 0 || s2 > q) s2 = q
      const qm = byteIndex(b, 63 /* ? */, s1 + 1, end)
      out.path = b.toString('utf8', s1 + 1, qm >= 0 && qm < s2 ? qm : s2)
    }
  }
  if (withIp) out.ip = b.toString('utf8', start, sp)
  out.status = status
  out.timeMs = t
  return sp
}
