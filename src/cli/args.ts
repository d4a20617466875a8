import { parseArgs } from 'node:util'
import { GrudgeError, invalidOption } from '../errors.js'
import { closestName } from '../options.js'
import { DEFAULT_LEVELS } from '../sketch/shape.js'
import { DEFAULT_POLICY_MEMORY_BYTES } from '../limit/options.js'
import type { KeyKind, LogFormat, ReplayOptions } from './replay-config.js'
import type { SuggestPolicy } from './suggest.js'
import { parseBytes, parseDurationMs, parseWeights } from './units.js'

/** Usage text of the `grudge` command. */
export const USAGE = `usage:
  grudge replay [options] [file|-]    replay an access or sshd auth log (.gz read too; stdin when no file or -)
  grudge suggest [--policy limit|abuse|fairness] <load> --fp P [--memory 8MB] [--generations 2] [--levels L | --max-levels N]
                                      size a policy's sketch for a load and a false-reject rate P: at the
                                      policies' default ${DEFAULT_LEVELS} levels, at L levels (1–16) with --levels L, or the
                                      best of 1..N levels (N 1–64) with --max-levels N (1 level has no Min
                                      aggregation to lean on: a fragile shape)
  grudge --version                    print the version

suggest loads (--hot-keys H, keys held at their limit, adds to any of them):
  limit (default)   --rps R --rate r --burst b [--cost c] [--period D]   requests/s of all keys; D the rotation
                    period (default the shortest the amnesty guard allows); or --hot-keys H alone
                    [--requests-per-key B [--request-spacing D]]   each key sends B requests (a mean ≥ 1,
                    default 1), D apart (default 0: all at once, an upper bound for any spacing)
  abuse             --events E [--weight w] [--threshold 10] [--half-life 10m] [--max-score 4×threshold]
                    E scored events/s of all keys (responses with a positive weight), w the heaviest weight (default 1)
  fairness          --events E [--failure-delta 0.1] [--lambda 0.1]   E failures/s of all keys, λ per second

replay options:
  --format auto|access|auth   log format (default auto: CLF/Combined or syslog sshd)
  --key K                     access: ip | ip24 | route | ip+route | ip+method; auth: ip | ip24 | user | ip+user (default ip)
  --rate R|off                debt meter: requests per second per key (default 1 for access logs, off for auth)
  --burst B                   debt meter: burst in requests (default 20)
  --abuse W|off               abuse score weights: access "401=3,404=1,5xx=0,2xx=-0.5"; auth "failed=1,invalid=1,accepted=-2"
                              (default off for access logs, the auth example for auth logs)
  --threshold T               abuse score at which requests are refused (default 5)
  --half-life D               half-life of the abuse score (default 10m)
  --memory B                  each policy's memory budget, as the adapters' memory option (default 10MB + ${(DEFAULT_POLICY_MEMORY_BYTES - 10 * 1024 * 1024) / 1024}KB): the
                              policies size themselves within it, and the report lists the sizes they chose over time
  --levels L --cells M        sketch shape: L levels (1–16, default ${DEFAULT_LEVELS}); --cells M (16–2^24) fixes M, 16 B a cell
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
      requestsPerSecond: number
      rate: number | undefined
      burst: number | undefined
      cost: number | undefined
      fp: number
      memoryBytes: number | undefined
      generations: number
      maxLevels: number | undefined
      json: boolean
      policy: SuggestPolicy
      periodMs: number | undefined
      requestsPerKey: number | undefined
      requestSpacingMs: number | undefined
      levels: number | undefined
      eventsPerSecond: number | undefined
      weight: number | undefined
      threshold: number | undefined
      halfLifeMs: number | undefined
      maxScore: number | undefined
      failureDelta: number | undefined
      lambdaPerSecond: number | undefined
    }
  | { command: 'help' }
  | { command: 'version' }

/** A decimal number as a flag's value: digits, an optional fraction and exponent (not `0x10`, which `Number` reads as 16). */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/

function number(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const n = Number(text)
  if (!DECIMAL.test(text.trim()) || !Number.isFinite(n)) invalidOption(option, 'a number', text)
  return n
}

/**
 * Refuse a flag given twice (`parseArgs` keeps the last silently).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the flag
 */
function onceEach(tokens: readonly { kind: string; name?: string }[]): void {
  const seen = new Set<string>()
  for (const t of tokens) {
    if (t.kind !== 'option' || t.name === undefined) continue
    if (seen.has(t.name)) invalidOption(t.name, 'the flag once', 'it twice or more')
    seen.add(t.name)
  }
}

/** A number flag's value, or `undefined` when absent; refused naming the flag when `ok` is false. */
function checked(
  flag: string,
  text: string | undefined,
  expected: string,
  ok: (n: number) => boolean,
): number | undefined {
  const n = number(flag, text)
  if (n !== undefined && !ok(n)) invalidOption(flag, expected, text)
  return n
}

type Flags = Record<string, { type: 'string' | 'boolean' }>

const SUGGEST_FLAGS = {
  'hot-keys': { type: 'string' },
  rps: { type: 'string' },
  rate: { type: 'string' },
  burst: { type: 'string' },
  cost: { type: 'string' },
  fp: { type: 'string' },
  memory: { type: 'string' },
  generations: { type: 'string' },
  'max-levels': { type: 'string' },
  levels: { type: 'string' },
  period: { type: 'string' },
  'requests-per-key': { type: 'string' },
  'request-spacing': { type: 'string' },
  policy: { type: 'string' },
  events: { type: 'string' },
  weight: { type: 'string' },
  threshold: { type: 'string' },
  'half-life': { type: 'string' },
  'max-score': { type: 'string' },
  'failure-delta': { type: 'string' },
  lambda: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies Flags

const SUGGEST_POLICIES: readonly SuggestPolicy[] = ['limit', 'abuse', 'fairness']
/** The flags of each policy's load in `grudge suggest` (besides --hot-keys). */
const SUGGEST_LOAD_FLAGS: Readonly<Record<SuggestPolicy, readonly string[]>> = {
  limit: ['rps', 'rate', 'burst', 'cost', 'period', 'requests-per-key', 'request-spacing'],
  abuse: ['events', 'weight', 'threshold', 'half-life', 'max-score'],
  fairness: ['events', 'failure-delta', 'lambda'],
}

const REPLAY_FLAGS = {
  format: { type: 'string' },
  key: { type: 'string' },
  rate: { type: 'string' },
  burst: { type: 'string' },
  abuse: { type: 'string' },
  threshold: { type: 'string' },
  'half-life': { type: 'string' },
  levels: { type: 'string' },
  cells: { type: 'string' },
  memory: { type: 'string' },
  generations: { type: 'string' },
  period: { type: 'string' },
  'max-disorder': { type: 'string' },
  seed: { type: 'string' },
  year: { type: 'string' },
  top: { type: 'string' },
  bin: { type: 'string' },
  json: { type: 'boolean' },
  html: { type: 'string' },
} as const satisfies Flags

const COMMANDS = ['replay', 'suggest', 'help', 'version']

/** A command-line error: `--flag: what is wrong`, code `ERR_GRUDGE_OPTION_INVALID`. */
function badFlag(flag: string, text: string): never {
  throw new GrudgeError('ERR_GRUDGE_OPTION_INVALID', `--${flag}: ${text}`)
}

/**
 * The arguments with every flag checked against `flags` and every value attached with `=`,
 * for `parseArgs`: `--rate -1` becomes `--rate=-1` (parseArgs calls a value starting with a
 * dash "ambiguous"), an unknown flag is refused with the closest known one (the options'
 * did-you-mean, {@link closestName}), a flag without its value is refused naming it.
 */
function attachValues(args: readonly string[], flags: Flags): string[] {
  const names = Object.keys(flags)
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (a === '--') {
      out.push(...args.slice(i))
      break
    }
    if (!a.startsWith('-') || a === '-') {
      out.push(a)
      continue
    }
    const eq = a.indexOf('=')
    const name = a.slice(a.startsWith('--') ? 2 : 1, eq === -1 ? undefined : eq)
    const flag = flags[name] as Flags[string] | undefined
    if (flag === undefined) {
      const near = closestName(name, names)
      badFlag(
        name,
        `unknown option; ${near !== undefined ? `did you mean --${near}?` : `known: ${names.map((n) => '--' + n).join(' ')}`}`,
      )
    }
    if (flag.type === 'boolean') {
      if (eq !== -1) badFlag(name, `takes no value, received ${JSON.stringify(a.slice(eq + 1))}`)
      out.push(`--${name}`)
    } else if (eq !== -1) {
      out.push(`--${name}=${a.slice(eq + 1)}`)
    } else {
      if (i + 1 >= args.length) badFlag(name, 'expected a value after it')
      out.push(`--${name}=${args[++i]}`)
    }
  }
  return out
}

/** The command-line flag of a library option name (`halfLifeMs` → `half-life`). */
const FLAG_OF: Record<string, string> = {
  halfLifeMs: 'half-life',
  maxDisorderMs: 'max-disorder',
  cellsPerLevel: 'cells',
  periodMs: 'period',
  requestsPerKey: 'requests-per-key',
  requestSpacingMs: 'request-spacing',
  binMs: 'bin',
  ratePerSecond: 'rate',
  maxScore: 'max-score',
  failureDelta: 'failure-delta',
  lambdaPerSecond: 'lambda',
  memoryBytes: 'memory',
}

/**
 * One line for an error of the command line or of the replay's options, naming the flag:
 * `option "halfLifeMs": expected …` reads `--half-life: expected …`, `option "abuse.4xx"`
 * reads `--abuse 4xx`. Other errors (a missing file) keep their message.
 * @param err what `parseCommand` or the replay threw
 * @returns the message, one line, without the `grudge:` prefix
 */
export function cliErrorLine(err: { message: string; code?: string }): string {
  const m = /^option "([^".]+)(?:\.([^"]+))?": ([\s\S]*)$/.exec(err.message)
  const text = m === null ? err.message : `--${FLAG_OF[m[1]] ?? m[1]}${m[2] !== undefined ? ' ' + m[2] : ''}: ${m[3]}`
  return text.replace(/\s*\n\s*/g, ' ')
}

/**
 * Parse the arguments of the `grudge` command (without `node` and the script).
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the bad flag: an unknown one (with
 * the closest known flag), a missing value, a value that is not a number or out of its range
 * (`suggest` checks every value given before it reports a missing flag), a flag that needs
 * another (`suggest --rate` without `--rps`)
 */
export function parseCommand(argv: string[]): Command {
  const [command, ...rest] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h')
    return { command: 'help' }
  if (command === 'version' || command === '--version' || command === '-v') return { command: 'version' }
  if (rest.includes('--help') || rest.includes('-h')) return { command: 'help' }
  if (command === 'suggest') {
    const { values, tokens } = parseArgs({
      args: attachValues(rest, SUGGEST_FLAGS),
      options: SUGGEST_FLAGS,
      strict: true,
      allowPositionals: false,
      tokens: true,
    })
    onceEach(tokens)
    // every value given is checked first, naming its flag; then what goes together; then
    // what is missing (so `--rate -1` is reported as a bad rate, not as a missing --hot-keys)
    const policyText = values.policy ?? 'limit'
    if (!(SUGGEST_POLICIES as readonly string[]).includes(policyText)) {
      const near = closestName(policyText, SUGGEST_POLICIES)
      badFlag(
        'policy',
        `expected limit, abuse or fairness, received ${JSON.stringify(policyText)}${near !== undefined ? `; did you mean ${near}?` : ''}`,
      )
    }
    const policy = policyText as SuggestPolicy
    for (const other of SUGGEST_POLICIES) {
      if (other === policy) continue
      for (const flag of SUGGEST_LOAD_FLAGS[other])
        if (!SUGGEST_LOAD_FLAGS[policy].includes(flag) && values[flag as keyof typeof values] !== undefined)
          badFlag(
            flag,
            `belongs to --policy ${other}; --policy ${policy} reads ${SUGGEST_LOAD_FLAGS[policy].map((f) => '--' + f).join(' ')}`,
          )
    }
    const eventsPerSecond = checked('events', values.events, 'events per second ≥ 0', (n) => n >= 0)
    const weight = checked('weight', values.weight, 'a number > 0 (the heaviest positive weight)', (n) => n > 0)
    const threshold = checked('threshold', values.threshold, 'a number > 0', (n) => n > 0)
    const halfLifeMs = values['half-life'] === undefined ? undefined : parseDurationMs('half-life', values['half-life'])
    const maxScore = checked(
      'max-score',
      values['max-score'],
      threshold === undefined ? 'a number ≥ the threshold (default 10)' : `a number ≥ --threshold (${threshold})`,
      (n) => n >= (threshold ?? 10),
    )
    const failureDelta = checked('failure-delta', values['failure-delta'], 'a number in (0, 1]', (n) => n > 0 && n <= 1)
    const lambdaPerSecond = checked('lambda', values.lambda, 'a decay rate > 0 (per second)', (n) => n > 0)
    const periodMs = values.period === undefined ? undefined : parseDurationMs('period', values.period)
    const requestsPerKey = checked(
      'requests-per-key',
      values['requests-per-key'],
      'a number ≥ 1 (the requests each key sends, a mean)',
      (n) => n >= 1,
    )
    const requestSpacingMs =
      values['request-spacing'] === undefined
        ? undefined
        : parseDurationMs('request-spacing', values['request-spacing'])
    const levels = checked(
      'levels',
      values.levels,
      'an integer in [1, 16]',
      (n) => Number.isInteger(n) && n >= 1 && n <= 16,
    )
    const hotKeys = checked('hot-keys', values['hot-keys'], 'a number of hot keys ≥ 0', (n) => n >= 0)
    const requestsPerSecond = checked('rps', values.rps, 'requests per second ≥ 0', (n) => n >= 0)
    const rate = checked('rate', values.rate, 'requests per second per key > 0', (n) => n > 0)
    const cost = checked('cost', values.cost, 'a number > 0 (the cost of one request)', (n) => n > 0)
    const burst = checked(
      'burst',
      values.burst,
      cost === undefined ? 'a number ≥ 1 (a request costs 1; --cost sets it)' : `a number ≥ --cost (${cost})`,
      (n) => n >= (cost ?? 1),
    )
    const fp = checked('fp', values.fp, 'a probability in (0, 1), e.g. 0.001', (n) => n > 0 && n < 1)
    const memoryBytes = values.memory === undefined ? undefined : parseBytes('memory', values.memory)
    const generations = checked(
      'generations',
      values.generations,
      "an integer in [2, 16] (a Limiter's generations)",
      (n) => Number.isInteger(n) && n >= 2 && n <= 16,
    )
    const maxLevels = checked(
      'max-levels',
      values['max-levels'],
      'an integer in [1, 64]',
      (n) => Number.isInteger(n) && n >= 1 && n <= 64,
    )
    if (levels !== undefined && values['max-levels'] !== undefined)
      badFlag('max-levels', 'give --levels L (one L) or --max-levels (the most L weighed), not both')
    if (policy === 'limit') {
      if (requestsPerSecond === undefined) {
        // the sizing model reads rate, burst, cost and the period only with a request load
        for (const [flag, v] of [
          ['rate', rate],
          ['burst', burst],
          ['cost', cost],
          ['period', periodMs],
          ['requests-per-key', requestsPerKey],
          ['request-spacing', requestSpacingMs],
        ] as const)
          if (v !== undefined) badFlag(flag, 'sizes a request load: add --rps R (requests per second, all keys)')
      } else {
        if (rate === undefined) badFlag('rate', 'missing: a load needs --rate r (requests per second per key)')
        if (burst === undefined) badFlag('burst', 'missing: a load needs --burst b (requests)')
      }
      if (hotKeys === undefined && requestsPerSecond === undefined)
        badFlag(
          'hot-keys',
          'missing: give a number of hot keys (--hot-keys 1000) or a load (--rps 3000 --rate 1 --burst 10)',
        )
    } else if (hotKeys === undefined && eventsPerSecond === undefined)
      badFlag(
        'events',
        `missing: give the scored events per second of all keys (--events 50) or a number of hot keys (--hot-keys 1000)`,
      )
    if (fp === undefined) badFlag('fp', 'missing: the false-reject rate to reach, e.g. --fp 0.001')
    return {
      command: 'suggest',
      hotKeys: hotKeys ?? 0,
      requestsPerSecond: requestsPerSecond ?? 0,
      rate,
      burst,
      cost,
      fp,
      memoryBytes,
      generations: generations ?? 2,
      maxLevels,
      json: values.json ?? false,
      policy,
      periodMs,
      requestsPerKey,
      requestSpacingMs,
      levels,
      eventsPerSecond,
      weight,
      threshold,
      halfLifeMs,
      maxScore,
      failureDelta,
      lambdaPerSecond,
    }
  }
  if (command !== 'replay') {
    const near = closestName(command, COMMANDS)
    throw new GrudgeError(
      'ERR_GRUDGE_OPTION_INVALID',
      `unknown command ${JSON.stringify(command)}; ${near !== undefined ? `did you mean ${near}?` : 'expected replay, suggest, help or version'}`,
    )
  }
  const { values, positionals, tokens } = parseArgs({
    args: attachValues(rest, REPLAY_FLAGS),
    options: REPLAY_FLAGS,
    strict: true,
    allowPositionals: true,
    tokens: true,
  })
  onceEach(tokens)
  if (positionals.length > 1) invalidOption('file', 'one input file (or - for stdin)', positionals.join(' '))
  const options: ReplayOptions = {}
  if (values.format !== undefined) options.format = values.format as LogFormat | 'auto'
  if (values.key !== undefined) options.key = values.key as KeyKind
  if (values.rate !== undefined) {
    options.ratePerSecond = values.rate === 'off' ? null : number('rate', values.rate)
    if (options.ratePerSecond !== null && options.ratePerSecond !== undefined && !(options.ratePerSecond > 0))
      invalidOption('rate', 'requests per second > 0, or off', values.rate)
  }
  if (values.burst !== undefined) options.burst = number('burst', values.burst)
  if (values.abuse !== undefined) options.abuse = values.abuse === 'off' ? null : parseWeights('abuse', values.abuse)
  if (values.threshold !== undefined) options.threshold = number('threshold', values.threshold)
  if (values['half-life'] !== undefined) options.halfLifeMs = parseDurationMs('half-life', values['half-life'])
  if (values.levels !== undefined) options.levels = number('levels', values.levels)
  if (values.cells !== undefined) options.cellsPerLevel = number('cells', values.cells)
  if (values.memory !== undefined) options.memoryBytes = parseBytes('memory', values.memory)
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
