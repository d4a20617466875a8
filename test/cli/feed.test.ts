import t from 'tap'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import { feedLines, maybeGunzip } from '../../src/cli/feed.js'

async function collect(chunks: Buffer[]): Promise<string[]> {
  const out: string[] = []
  await feedLines(maybeGunzip(Readable.from(chunks)), { line: (l) => void out.push(l) })
  return out
}

t.test('lines across chunk boundaries, CRLF, a last line without newline', async (t) => {
  const text = 'first\r\nsecond line\n\nthird'
  const bytes = Buffer.from(text)
  const whole = await collect([bytes])
  t.same(whole, ['first', 'second line', '', 'third'])
  // every split point gives the same lines
  for (let cut = 0; cut <= bytes.length; cut++) {
    t.same(await collect([bytes.subarray(0, cut), bytes.subarray(cut)]), whole, `cut at ${cut}`)
  }
})

t.test('a multi-byte character cut between chunks is decoded whole', async (t) => {
  const bytes = Buffer.from('GET /café\n/日本\n')
  for (let cut = 1; cut < bytes.length; cut++) {
    t.same(await collect([bytes.subarray(0, cut), bytes.subarray(cut)]), ['GET /café', '/日本'], `cut at ${cut}`)
  }
})

t.test('gzip input (RFC 1952 magic 1f 8b) is decompressed, plain input passes through', async (t) => {
  const text = Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n') + '\n'
  const gz = gzipSync(text)
  t.same([gz[0], gz[1]], [0x1f, 0x8b])
  const lines = await collect([gz.subarray(0, 1), gz.subarray(1, 10), gz.subarray(10)])
  t.equal(lines.length, 1000)
  t.equal(lines[999], 'line 999')
  let raw = 0
  await feedLines(
    maybeGunzip(Readable.from([gz]), (n) => (raw += n)),
    { line() {} },
  )
  t.equal(raw, gz.length, 'progress counts compressed bytes')
  t.same(await collect([]), [], 'empty input')
})

t.test('a sink with lineBytes gets the same lines as bytes, at every cut between chunks', async (t) => {
  const bytes = Buffer.from('first\r\nsecond line\n\nGET /café\n/日本\r\nlast')
  const expected = ['first', 'second line', '', 'GET /café', '/日本', 'last']
  const viaBytes = async (chunks: Buffer[]) => {
    const out: string[] = []
    const n = await feedLines(maybeGunzip(Readable.from(chunks)), {
      line: () => t.fail('line() called on a sink with lineBytes'),
      lineBytes: (b, start, end) => void out.push(b.toString('utf8', start, end)),
    })
    t.equal(n, out.length)
    return out
  }
  t.same(await viaBytes([bytes]), expected)
  for (let cut = 0; cut <= bytes.length; cut++)
    t.same(await viaBytes([bytes.subarray(0, cut), bytes.subarray(cut)]), expected, `cut at ${cut}`)
  // a line longer than a chunk: three chunks inside one line
  t.same(await viaBytes([bytes.subarray(0, 9), bytes.subarray(9, 11), bytes.subarray(11)]), expected)
})
