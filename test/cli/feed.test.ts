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
