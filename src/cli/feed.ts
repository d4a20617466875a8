import { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import { createGunzip } from 'node:zlib'

/** Receives lines (without their newline, a trailing `\r` removed). */
export interface LineSink {
  /** One line, decoded from UTF-8. */
  line(text: string): void
  /**
   * One line as its bytes `b[start..end)`, undecoded (valid only during the call: `b` is the
   * input's buffer). When present, {@link feedLines} calls it instead of `line`, so that a
   * sink that parses bytes builds no string per line.
   */
  lineBytes?(b: Buffer, start: number, end: number): void
}

/**
 * Yield the chunks of `source`, gunzipped when its first two bytes are the gzip magic
 * (0x1f 0x8b, RFC 1952): a `.gz` file or a gzipped stdin is read the same way as plain text.
 * @param source raw chunks (a file or stdin stream)
 * @param onRaw called with the size of every raw (compressed) chunk read, for progress
 */
export async function* maybeGunzip(
  source: AsyncIterable<Buffer | string>,
  onRaw?: (bytes: number) => void,
): AsyncGenerator<Buffer> {
  const it = source[Symbol.asyncIterator]()
  // the magic needs two bytes: a first chunk of one byte (possible on a pipe) waits for more
  let head = Buffer.alloc(0)
  while (head.length < 2) {
    const n = await it.next()
    if (n.done) break
    head = Buffer.concat([head, typeof n.value === 'string' ? Buffer.from(n.value) : n.value])
  }
  if (head.length === 0) return
  async function* raw(): AsyncGenerator<Buffer> {
    onRaw?.(head.length)
    yield head
    for (;;) {
      const n = await it.next()
      if (n.done) return
      const b = typeof n.value === 'string' ? Buffer.from(n.value) : n.value
      onRaw?.(b.length)
      yield b
    }
  }
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) {
    const gunzip = createGunzip()
    const piped = Readable.from(raw()).pipe(gunzip)
    for await (const chunk of piped) yield chunk as Buffer
  } else {
    yield* raw()
  }
}

/**
 * Split a byte stream into UTF-8 lines and hand each to `sink` (a multi-byte character cut
 * between chunks is decoded whole; a last line without a newline is delivered too).
 * @param chunks the bytes
 * @param sink receives every line
 * @param onChunk called after each chunk with the number of lines so far
 * @returns the number of lines delivered
 */
export async function feedLines(
  chunks: AsyncIterable<Buffer>,
  sink: LineSink,
  onChunk?: (lines: number) => void,
): Promise<number> {
  if (sink.lineBytes !== undefined) return feedLineBytes(chunks, sink, onChunk)
  const decoder = new StringDecoder('utf8')
  let carry = ''
  let count = 0
  for await (const chunk of chunks) {
    const text = carry + decoder.write(chunk)
    let start = 0
    for (;;) {
      const nl = text.indexOf('\n', start)
      if (nl < 0) break
      const end = nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl
      sink.line(text.slice(start, end))
      count++
      start = nl + 1
    }
    carry = text.slice(start)
    onChunk?.(count)
  }
  carry += decoder.end()
  if (carry.length > 0) {
    sink.line(carry.charCodeAt(carry.length - 1) === 13 ? carry.slice(0, -1) : carry)
    count++
  }
  return count
}

/** {@link feedLines} for a sink with `lineBytes`: lines split at the newline byte (0x0A is never part of a multi-byte UTF-8 character). */
async function feedLineBytes(
  chunks: AsyncIterable<Buffer>,
  sink: LineSink,
  onChunk?: (lines: number) => void,
): Promise<number> {
  /** The start of a line cut by the end of the previous chunk(s), copied. */
  let carry: Buffer | undefined
  let count = 0
  const deliver = (b: Buffer, start: number, nl: number) => {
    sink.lineBytes!(b, start, nl > start && b[nl - 1] === 13 ? nl - 1 : nl)
    count++
  }
  for await (const chunk of chunks) {
    let start = 0
    if (carry !== undefined) {
      const nl = chunk.indexOf(10)
      if (nl < 0) {
        carry = Buffer.concat([carry, chunk])
        onChunk?.(count)
        continue
      }
      const whole = Buffer.concat([carry, chunk.subarray(0, nl)])
      carry = undefined
      deliver(whole, 0, whole.length)
      start = nl + 1
    }
    for (;;) {
      const nl = chunk.indexOf(10, start)
      if (nl < 0) break
      deliver(chunk, start, nl)
      start = nl + 1
    }
    if (start < chunk.length) carry = Buffer.from(chunk.subarray(start))
    onChunk?.(count)
  }
  if (carry !== undefined && carry.length > 0) deliver(carry, 0, carry.length)
  return count
}
