#!/usr/bin/env node
// The `grudge` command: `grudge replay` (a log through the policies, with a report) and
// `grudge suggest` (sketch sizing). The logic lives in src/cli/; this file does the I/O.
import { createReadStream, existsSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { cliErrorLine, parseCommand, USAGE } from '../src/cli/args.js'
import { feedLines, maybeGunzip } from '../src/cli/feed.js'
import { renderHtml } from '../src/cli/html.js'
import { ProgressBar } from '../src/cli/progress.js'
import { Replay } from '../src/cli/replay.js'
import { formatSuggestion, suggestShape, type SuggestOptions } from '../src/cli/suggest.js'
import { formatReport } from '../src/cli/text-report.js'

/** The version in the package.json above this script (the script runs from bin/ or dist/esm/bin/). */
function packageVersion(): string {
  let dir = dirname(realpathSync(process.argv[1]))
  for (let i = 0; i < 5; i++) {
    const file = join(dir, 'package.json')
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'grudge' && typeof pkg.version === 'string') return pkg.version
    }
    dir = dirname(dir)
  }
  return 'unknown'
}

async function main(argv: string[]): Promise<number> {
  const cmd = parseCommand(argv)
  if (cmd.command === 'help') {
    process.stdout.write(USAGE)
    return 0
  }
  if (cmd.command === 'version') {
    process.stdout.write(`${packageVersion()}\n`)
    return 0
  }
  if (cmd.command === 'suggest') {
    const asked: SuggestOptions = {
      policy: cmd.policy,
      hotKeys: cmd.hotKeys,
      requestsPerSecond: cmd.policy === 'limit' ? cmd.requestsPerSecond : undefined,
      rate: cmd.rate,
      burst: cmd.burst,
      cost: cmd.cost,
      periodMs: cmd.periodMs,
      requestsPerKey: cmd.requestsPerKey,
      requestSpacingMs: cmd.requestSpacingMs,
      eventsPerSecond: cmd.eventsPerSecond,
      weight: cmd.weight,
      threshold: cmd.threshold,
      halfLifeMs: cmd.halfLifeMs,
      maxScore: cmd.maxScore,
      failureDelta: cmd.failureDelta,
      lambdaPerSecond: cmd.lambdaPerSecond,
      targetFalsePositive: cmd.fp,
      memoryBytes: cmd.memoryBytes,
      generations: cmd.generations,
      levels: cmd.levels,
      maxLevels: cmd.maxLevels,
    }
    const s = suggestShape(asked)
    if (cmd.json) process.stdout.write(JSON.stringify(s, null, 2) + '\n')
    else process.stdout.write(formatSuggestion(s, asked))
    return s.meetsTarget ? 0 : 3
  }
  const source = cmd.file ?? 'stdin'
  const replay = new Replay(cmd.options)
  // stat first: a missing file is reported before a stream exists to emit an unhandled error
  const totalBytes = cmd.file === undefined ? undefined : statSync(cmd.file).size
  const input = cmd.file === undefined ? process.stdin : createReadStream(cmd.file, { highWaterMark: 1 << 20 })
  const bar = new ProgressBar(process.stderr, totalBytes, () => performance.now())
  let rawBytes = 0
  const t0 = performance.now()
  const lines = await feedLines(
    maybeGunzip(input, (n) => (rawBytes += n)),
    replay,
    (n) => bar.update(rawBytes, n),
  )
  const report = replay.finish()
  const elapsedMs = performance.now() - t0
  bar.done()
  replay.close()
  const linesPerSecond = elapsedMs > 0 ? (lines / elapsedMs) * 1000 : undefined
  if (cmd.html !== undefined) writeFileSync(cmd.html, renderHtml(report, source))
  if (cmd.json) process.stdout.write(JSON.stringify({ ...report, source, elapsedMs, linesPerSecond }, null, 2) + '\n')
  else
    process.stdout.write(
      formatReport(report, source, linesPerSecond) + (cmd.html ? `\nHTML report: ${cmd.html}\n` : ''),
    )
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (err: Error & { code?: string }) => {
    // one line naming the flag; the usage is one `grudge --help` away
    const usage = err.code?.startsWith('ERR_PARSE_ARGS') || err.code === 'ERR_GRUDGE_OPTION_INVALID'
    process.stderr.write(`grudge: ${cliErrorLine(err)}${usage ? ' (grudge --help lists the options)' : ''}\n`)
    process.exitCode = 2
  },
)
