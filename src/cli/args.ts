import { parseArgs } from 'node:util'
import { invalidOption } from '../errors.js'
import type { KeyKind, LogFormat, ReplayOptions } from './replay-config.js'
import { parseBytes, parseDurationMs, parseWeights } from './units.js'

/** Usage text of the `grudge` command. */
export const USAGE = `usage:
  grudge replay [options] [file|-]    replay an access or sshd auth log (.gz read too; stdin when no file or -)
  grudge suggest --hot-keys H --fp P [--memory 8MB] [--generations 2] [--max-levels 8]
                                      size a sketch for H hot keys and a false-positive rate P
  grudge --version                    print the version

replay options:
  --format auto|access|auth   log format (default auto: CLF/Combined or syslog sshd)
  --key K                     access: ip | ip24 | route | ip+route | ip+method; auth: ip | ip24 | user | ip+user (default ip)
  --rate R|off                debt meter: requests per second per key (default 1 for access logs, off for auth)
  --burst B                   debt meter: burst in requests (default 20)
  --abuse W|off               abuse score weights: access "401=3,404=1,5xx=0,2xx=-0.5"; auth "failed=1,invalid=1,accepted=-2"
                              (default off for access logs, the auth example for auth logs)
  --threshold T               abuse score at which requests are refused (default 5)
  --half-life D               half-life of the abuse score (default 10m)
  --levels L --cells M        sketch shape: L levels (1–16) × M cells (16–2^24), 16 B a cell (default 4 × 4096)
  --generations N --period D  rotator generations (default 2, the adapters') and period (default: each policy's shortest safe one)
  --max-disorder D            lines up to D out of order are put back in order (default 1m)
  --seed S                    hashing seed (an integer) for a reproducible replay (default random)
  --year Y                    year of the first line of a syslog file without years (default this year)
  --top N                     most throttled keys listed (default 10)
  --bin D                     timeline bar width, whole minutes (default: from the data, ≤ 400 bars)
  --json                      print the report as JSON
  --html FILE                 also write a self-contained HTML report with a timeline chart
durations: 250ms, 30s, 10m, 1h, 1d (a bare number is ms); sizes: 512KB, 8MB, 1GB (powers of 1024)
`

/** A parsed command line. */
export type Command =
  | { command: 'replay'; file: string | undefined; options: ReplayOptions; json: boolean; html: string | undefined }
  | {
      command: 'suggest'
      hotKeys: number
      fp: number
      memoryBytes: number | undefined
      generations: number
      maxLevels: number
      json: boolean
    }
  | { command: 'help' }
  | { command: 'version' }

function number(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const n = Number(text)
  if (text.trim() === '' || !Number.isFinite(n)) invalidOption(option, 'a number', text)
  return n
}

/**
 * Parse the arguments of the `grudge` command (without `node` and the script).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad option; node's
 * `ERR_PARSE_ARGS_*` errors for unknown options or missing values
 */
export function parseCommand(argv: string[]): Command {
  const [command, ...rest] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h')
    return { command: 'help' }
  if (command === 'version' || command === '--version' || command === '-v') return { command: 'version' }
  if (rest.includes('--help') || rest.includes('-h')) return { command: 'help' }
  if (command === 'suggest') {
    const { values } = parseArgs({
      args: rest,
      options: {
        'hot-keys': { type: 'string' },
        fp: { type: 'string' },
        memory: { type: 'string' },
        generations: { type: 'string' },
        'max-levels': { type: 'string' },
        json: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    })
    const hotKeys = number('hot-keys', values['hot-keys'])
    const fp = number('fp', values.fp)
    if (hotKeys === undefined) invalidOption('hot-keys', 'a number of hot keys, e.g. --hot-keys 1000', undefined)
    if (fp === undefined) invalidOption('fp', 'a false-positive rate, e.g. --fp 0.001', undefined)
    return {
      command: 'suggest',
      hotKeys,
      fp,
      memoryBytes: values.memory === undefined ? undefined : parseBytes('memory', values.memory),
      generations: number('generations', values.generations) ?? 2,
      maxLevels: number('max-levels', values['max-levels']) ?? 8,
      json: values.json ?? false,
    }
  }
  if (command !== 'replay') invalidOption('command', 'replay, suggest or help', command)
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      format: { type: 'string' },
      key: { type: 'string' },
      rate: { type: 'string' },
      burst: { type: 'string' },
      abuse: { type: 'string' },
      threshold: { type: 'string' },
      'half-life': { type: 'string' },
      levels: { type: 'string' },
      cells: { type: 'string' },
      generations: { type: 'string' },
      period: { type: 'string' },
      'max-disorder': { type: 'string' },
      seed: { type: 'string' },
      year: { type: 'string' },
      top: { type: 'string' },
      bin: { type: 'string' },
      json: { type: 'boolean' },
      html: { type: 'string' },
    },
    strict: true,
    allowPositionals: true,
  })
  if (positionals.length > 1) invalidOption('file', 'one input file (or - for stdin)', positionals.join(' '))
  const options: ReplayOptions = {}
  if (values.format !== undefined) options.format = values.format as LogFormat | 'auto'
  if (values.key !== undefined) options.key = values.key as KeyKind
  if (values.rate !== undefined) options.ratePerSecond = values.rate === 'off' ? null : number('rate', values.rate)
  if (values.burst !== undefined) options.burst = number('burst', values.burst)
  if (values.abuse !== undefined) options.abuse = values.abuse === 'off' ? null : parseWeights('abuse', values.abuse)
  if (values.threshold !== undefined) options.threshold = number('threshold', values.threshold)
  if (values['half-life'] !== undefined) options.halfLifeMs = parseDurationMs('half-life', values['half-life'])
  if (values.levels !== undefined) options.levels = number('levels', values.levels)
  if (values.cells !== undefined) options.cellsPerLevel = number('cells', values.cells)
  if (values.generations !== undefined) options.generations = number('generations', values.generations)
  if (values.period !== undefined) options.periodMs = parseDurationMs('period', values.period)
  if (values['max-disorder'] !== undefined)
    options.maxDisorderMs = parseDurationMs('max-disorder', values['max-disorder'])
  if (values.seed !== undefined) options.seed = number('seed', values.seed)
  if (values.year !== undefined) options.year = number('year', values.year)
  if (values.top !== undefined) options.top = number('top', values.top)
  if (values.bin !== undefined) options.binMs = parseDurationMs('bin', values.bin)
  const file = positionals[0] === '-' ? undefined : positionals[0]
  return { command: 'replay', file, options, json: values.json ?? false, html: values.html }
}
