// What `npm run bench` (examples/bench/run-all.ts) runs, and with which arguments: every
// `*.bench.ts`, and the standalone benchmarks of STANDALONE when an argument names them. Kept
// apart from run-all.ts so that a test can check the plan without running a benchmark.
/** A benchmark that is not a `*.bench.ts`: run only by name, with what it reads from its command line. */
export interface Standalone {
  /** What it measures and what it needs, printed by `npm run bench` without names. */
  about: string
  /** `flags`: it reads `--` flags (`--quick`), given the `--` arguments and the trailing ones; `positional`: it reads `process.argv[2]`, `[3]`, given only the trailing ones. */
  reads: 'flags' | 'positional'
}
// Every examples/bench/*.ts that runs on its own and is not reached through a package.json
// script (bench:compare, bench:fleet, bench:http, bench:redis-store, bench:redis-time) or
// imported by another benchmark; test/examples/bench-wiring.test.ts fails when one is in none of these.
export const STANDALONE: Record<string, Standalone> = {
  'fold-batch-cost.ts': {
    about:
      "an exact fleet's first batch after a folding twin's switch, Redis time; Redis on 127.0.0.1:6379; -- [slots] [requests]",
    reads: 'positional',
  },
  'fold-tail-defaults.ts': {
    about:
      'the refusal tail after a fold at the debt meter defaults, fake clock; Redis on 127.0.0.1:6379; -- [jump/s] [seconds]',
    reads: 'positional',
  },
  'no-size-option.ts': {
    about: 'the "grudge, no size option" and traffic-jump rows of bench:compare, fake clock; [--quick]',
    reads: 'flags',
  },
  'telemetry-heavy-hitters.ts': {
    about:
      "stats()'s offered load and prediction with 50 heavy hitters inside an overload of fresh clients, against the measured refused share, and issue 14's point without hitters in three runs (fake clock, counts)",
    reads: 'flags',
  },
  'sync-store-cost.ts': {
    about:
      'what a Redis sync store adds per request over the in-process store; starts its own redis-server; [--quick] [--keys=N]',
    reads: 'flags',
  },
  'sync-fold-pause.ts': {
    about:
      "the longest event-loop turn of a sync store across a folding twin's switch, lazy fold against at once; starts its own redis-server; [--quick]",
    reads: 'flags',
  },
  'sync-store-memory.ts': {
    about: 'the bytes a sync store holds per cell, process.memoryUsage after GC; Redis on GRUDGE_REDIS_URL; [--quick]',
    reads: 'flags',
  },
}

/** One benchmark to run: its file in examples/bench and the arguments it is given. */
export interface PlannedBench {
  file: string
  args: string[]
}

/**
 * The benchmarks `npm run bench -- <argv>` runs, in order. An argument not starting with `--`
 * names benchmarks (a part of the file name); without any, every `*.bench.ts`, and a
 * STANDALONE one only when named. `--` flags go to every `*.bench.ts` and every standalone one
 * that reads flags; everything after a literal `--` goes to every one as it is.
 * @param argv the arguments after `npm run bench --`
 * @param benchFiles the `*.bench.ts` files of examples/bench
 * @returns the plan, or an error line when names were given and none matches
 */
export function benchPlan(argv: readonly string[], benchFiles: readonly string[]): PlannedBench[] | string {
  const rest = argv.indexOf('--')
  const args = rest === -1 ? argv : argv.slice(0, rest)
  const trailing = rest === -1 ? [] : argv.slice(rest + 1)
  const only = args.filter((a) => !a.startsWith('--'))
  const passed = args.filter((a) => a.startsWith('--'))
  const named = (f: string): boolean => only.some((o) => f.includes(o))
  const files = [
    ...benchFiles.filter((f) => only.length === 0 || named(f)),
    ...Object.keys(STANDALONE).filter(named),
  ].sort()
  if (only.length > 0 && files.length === 0)
    return `bench: no benchmark matches ${only.join(', ')}; known: ${[...benchFiles, ...Object.keys(STANDALONE)].sort().join(', ')}`
  return files.map((file) => ({
    file,
    args: STANDALONE[file]?.reads === 'positional' ? trailing : [...passed, ...trailing],
  }))
}
