import { GrudgeTypeError, describeValue } from '../errors.js'

/**
 * Keys as bytes without a per-call allocation. A string key is encoded as UTF-8 (WHATWG
 * rules: a lone surrogate becomes EF BF BD, exactly as `Buffer.from(str)` and
 * `TextEncoder` do) into one module-level buffer that grows when a longer key arrives and
 * is then reused. A `Uint8Array` key is used as it is.
 */
let scratch: Buffer = Buffer.allocUnsafeSlow(1024)

/** Byte view filled by the last {@link keyBytes} call (valid until the next call). */
export let keyView: Uint8Array = scratch
/** Number of valid bytes in {@link keyView} after the last {@link keyBytes} call. */
export let keyLength = 0
/** The string whose bytes the scratch buffer holds (undefined before any). */
let lastKey: string | undefined

/**
 * Encode `key` as bytes into {@link keyView} / {@link keyLength} (a shared scratch
 * buffer: read them before the next call). Strings are UTF-8; the empty key and keys of
 * any length are valid.
 * @param key a string (hashed as its UTF-8 bytes) or a Uint8Array (hashed as is)
 * @throws {GrudgeTypeError} `ERR_GRUDGE_KEY_INVALID` when key is neither
 */
export function keyBytes(key: string | Uint8Array): void {
  if (typeof key === 'string') {
    // the same key again (each generation of a Rotator, then the telemetry, hash one key
    // in a row): the scratch still holds its bytes
    if (key === lastKey && keyView === scratch) return
    const n = key.length
    if (n * 3 > scratch.length) {
      scratch = Buffer.allocUnsafeSlow(Math.max(n * 3, scratch.length * 2))
    }
    keyView = scratch
    if (n <= 64) {
      keyLength = encodeShort(key, n, scratch)
    } else {
      keyLength = scratch.write(key, 0, 'utf8')
    }
    lastKey = key
    return
  }
  if (key instanceof Uint8Array) {
    keyView = key
    keyLength = key.length
    return
  }
  throw new GrudgeTypeError(
    'ERR_GRUDGE_KEY_INVALID',
    `key: expected a string or a Uint8Array, received ${describeValue(key)}`,
  )
}

/** UTF-8 encode a short string in JS (cheaper than a call into C++ for a few bytes). */
function encodeShort(s: string, n: number, out: Uint8Array): number {
  // ASCII prefix first: one compare and one store per char (most keys are ASCII)
  let i = 0
  for (; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x80) break
    out[i] = c
  }
  if (i === n) return n
  let j = i
  for (; i < n; i++) {
    let c = s.charCodeAt(i)
    if (c < 0x80) {
      out[j++] = c
    } else if (c < 0x800) {
      out[j++] = 0xc0 | (c >> 6)
      out[j++] = 0x80 | (c & 0x3f)
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < n ? s.charCodeAt(i + 1) : 0
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          i++
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00)
          out[j++] = 0xf0 | (c >> 18)
          out[j++] = 0x80 | ((c >> 12) & 0x3f)
          out[j++] = 0x80 | ((c >> 6) & 0x3f)
          out[j++] = 0x80 | (c & 0x3f)
          continue
        }
        c = 0xfffd // lone surrogate, as WHATWG UTF-8 encode
      }
      out[j++] = 0xe0 | (c >> 12)
      out[j++] = 0x80 | ((c >> 6) & 0x3f)
      out[j++] = 0x80 | (c & 0x3f)
    }
  }
  return j
}
