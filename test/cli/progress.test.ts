import t from 'tap'
import { ProgressBar } from '../../src/cli/progress.js'

function target(isTTY: boolean) {
  const writes: string[] = []
  return { isTTY, columns: 60, writes, write: (s: string) => void writes.push(s) }
}

t.test('step table: silent for 1 s, then at most every 100 ms, erased at the end', async (t) => {
  let now = 0
  const out = target(true)
  const bar = new ProgressBar(out, 1000, () => now)
  const steps: { nowMs: number; bytes: number; draws: number }[] = [
    { nowMs: 0, bytes: 0, draws: 0 },
    { nowMs: 500, bytes: 100, draws: 0 },
    { nowMs: 999, bytes: 200, draws: 0 },
    { nowMs: 1000, bytes: 250, draws: 1 },
    { nowMs: 1050, bytes: 300, draws: 1 },
    { nowMs: 1100, bytes: 500, draws: 2 },
    { nowMs: 1150, bytes: 1000, draws: 2 },
  ]
  for (const s of steps) {
    now = s.nowMs
    bar.update(s.bytes, s.bytes * 10)
    t.equal(out.writes.length, s.draws, `at ${s.nowMs} ms`)
  }
  const ERASE_TO_EOL = '\u001b[K'
  t.ok(out.writes[0].endsWith(ERASE_TO_EOL))
  const m = /^\r\[(#+)(-+)\] {2}25% 2,500 lines 2,500 lines\/s$/.exec(out.writes[0].slice(0, -ERASE_TO_EOL.length))
  t.ok(m, out.writes[0])
  const full = m![1].length / (m![1].length + m![2].length)
  t.ok(Math.abs(full - 0.25) <= 0.5 / (m![1].length + m![2].length), `bar ${full} full at 25%`)
  t.match(out.writes[1], / 50% /)
  t.ok(
    out.writes.every((w) => w.length <= 60 + 4),
    'fits the terminal width',
  )
  bar.done()
  t.equal(out.writes.at(-1), '\r\x1b[K')
})

t.test('off when stderr is not a TTY; stdin (unknown size) shows bytes and lines', async (t) => {
  let now = 0
  const pipe = target(false)
  const bar = new ProgressBar(pipe, 1000, () => now)
  now = 5000
  bar.update(10, 10)
  bar.done()
  t.same(pipe.writes, [])
  const tty = target(true)
  const stdin = new ProgressBar(tty, undefined, () => now)
  now = 7000
  stdin.update(3 * 1048576, 4000)
  t.match(tty.writes[0], /3\.0 MiB, 4,000 lines, 2,000 lines\/s/)
})
