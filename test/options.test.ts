import { ROTATOR_SIZING_KEYS } from '../src/sketch/rotator-sizing.js'
import t from 'tap'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { checkKnownOptions, closestName, editDistance, optionKeys } from '../src/options.js'
import { unknownOption } from './unknown-option.js'
import {
  DESERIALIZE_OPTION_KEYS,
  ROTATOR_DESERIALIZE_KEYS,
  ROTATOR_OPTION_KEYS,
  SKETCH_OPTION_KEYS,
} from '../src/sketch/shape.js'
import { BLOOM_FILTER_ACCURACY_KEYS, BLOOM_FILTER_SIZE_KEYS } from '../src/bloom/bloom-filter.js'
import { PERSIST_POLICY_KEYS } from '../src/bloom/persist.js'
import { MANAGED_BLOOM_OPTION_KEYS } from '../src/bloom/managed.js'
import { SHARDED_BLOOM_OPTION_KEYS } from '../src/bloom/sharded.js'
import { BLOOM_REGISTRY_OPTION_KEYS, REGISTER_BLOOM_KEYS } from '../src/bloom/registry.js'
import { HYPERLOGLOG_ACCURACY_KEYS, HYPERLOGLOG_SIZE_KEYS } from '../src/window/hyperloglog.js'
import { COUNT_MIN_ACCURACY_KEYS, COUNT_MIN_SIZE_KEYS } from '../src/window/count-min.js'
import { WINDOW_DESERIALIZE_KEYS, WINDOW_OPTION_KEYS } from '../src/window/window.js'
import { DEBT_METER_OPTION_KEYS } from '../src/limit/debt-meter.js'
import { TIER_OPTION_KEYS, TIERED_DEBT_METER_OPTION_KEYS } from '../src/limit/tiers.js'
import { FEEDBACK_SCORE_OPTION_KEYS } from '../src/limit/feedback-score.js'
import { ABUSE_SCORE_OPTION_KEYS } from '../src/limit/abuse-score.js'
import { BLOOM_GATE_OPTION_KEYS } from '../src/limit/bloom-gate.js'
import { TELEMETRY_OPTION_KEYS } from '../src/limit/telemetry.js'
import { LIMITER_OPTION_KEYS } from '../src/limit/limiter.js'
import { POLICY_SKETCH_OPTION_KEYS, POLICY_SKETCH_OPTION_NAMES } from '../src/limit/options.js'
import { HEADER_OPTION_KEYS } from '../src/http/headers.js'
import { REDIS_STORE_OPTION_KEYS } from '../src/cluster/options.js'
import {
  ADAPTER_ABUSE_KEYS,
  ADAPTER_FAIRNESS_KEYS,
  ADAPTER_LIMIT_KEYS,
  ADAPTER_TIERED_LIMIT_KEYS,
  COMMON_OPTION_NAMES,
} from '../src/http/options.js'
import { BLOOM_REGISTRY_CONFIG_KEYS } from '../src/http/bloom-registry.js'
import {
  FASTIFY_BLOOM_ROUTE_KEYS,
  FASTIFY_REGISTER_KEYS,
  GRUDGE_FASTIFY_OPTION_KEYS,
  GRUDGE_ROUTE_OPTION_KEYS,
} from '../plugins/fastify/options.js'
import { EXPRESS_BLOOM_KEYS, GRUDGE_EXPRESS_OPTION_KEYS } from '../plugins/express/options.js'

// src/options.ts: the unknown-option check every constructor and factory runs once, and
// the lists of names it checks against, which must stay the keys of the options interfaces.

t.test('editDistance: insertions, deletions, substitutions and adjacent swaps cost 1 each', async (t) => {
  const rows: [string, string, number][] = [
    ['', '', 0],
    ['', 'abc', 3],
    ['abc', '', 3],
    ['levels', 'levels', 0],
    ['level', 'levels', 1], // insertion
    ['levelss', 'levels', 1], // deletion
    ['lovels', 'levels', 1], // substitution
    ['burts', 'burst', 1], // swap of adjacent characters
    ['limt', 'limit', 1],
    ['keyGeneratr', 'key', 8],
    ['ca', 'abc', 3], // optimal string alignment: no edit of a swapped pair
    ['abcdef', 'badcfe', 3],
  ]
  for (const [a, b, d] of rows) {
    t.equal(editDistance(a, b), d, `${JSON.stringify(a)} → ${JSON.stringify(b)}`)
    t.equal(editDistance(b, a), d, `${JSON.stringify(b)} → ${JSON.stringify(a)} (symmetric)`)
  }
})

t.test('closestName: within 2 edits, case-insensitive, the first listed on a tie', async (t) => {
  const known = ['levels', 'cellsPerLevel', 'lo', 'hi']
  t.equal(closestName('level', known), 'levels')
  t.equal(closestName('CellsPerLevel', known), 'cellsPerLevel', 'case alone is distance 0')
  t.equal(closestName('cellsperlevell', known), 'cellsPerLevel')
  t.equal(closestName('lvls', known), 'levels', '2 deletions')
  t.equal(closestName('leve', known), 'levels', '2 insertions')
  t.equal(closestName('lev', ['levels']), undefined, '3 edits away: no suggestion')
  t.equal(closestName('ho', known), 'lo', 'lo and hi are both 1 away: the first listed wins')
  t.equal(closestName('zzzzzz', known), undefined)
  t.equal(closestName('x', []), undefined)
})

t.test('checkKnownOptions', async (t) => {
  const known = ['rate', 'burst', 'cost']
  t.doesNotThrow(() => checkKnownOptions({}, known))
  t.doesNotThrow(() => checkKnownOptions({ rate: 1, burst: 2, cost: undefined }, known), 'every known name')
  t.throws(() => checkKnownOptions({ burts: 10 }, known, 'limit.'), unknownOption('limit.burts', 'burst'))
  t.throws(
    () => checkKnownOptions({ burts: undefined }, known, 'limit.'),
    unknownOption('limit.burts', 'burst'),
    'an unknown key whose value is undefined is still a typo',
  )
  t.throws(
    () => checkKnownOptions({ keyGenerator: () => 'k' }, known),
    unknownOption('keyGenerator', undefined, known),
    'nothing close: the message lists the known names',
  )
  t.throws(
    () => checkKnownOptions({ rate: 1, Rate: 1 }, known),
    unknownOption('Rate', 'rate'),
    'names are case-sensitive; the suggestion is not',
  )
  t.throws(
    () => checkKnownOptions({ rate: 1, zz: 1, burts: 1 }, known),
    unknownOption('zz', undefined, known),
    'the first unknown key in order',
  )
  t.doesNotThrow(() => checkKnownOptions({ rate: { burts: 1, anything: 2 } }, known), 'values are not walked into')
  t.doesNotThrow(() => checkKnownOptions({ [Symbol('internal')]: 1 }, known), 'symbol keys are not options')
  t.doesNotThrow(
    () => checkKnownOptions(Object.create({ inherited: 1 }) as object, known),
    'only own keys (a prototype is not an options bag)',
  )
  for (const v of [undefined, null, 1, 'rate', true]) {
    t.doesNotThrow(() => checkKnownOptions(v, known), `${String(v)}: left to the caller's own type checks`)
  }
  t.doesNotThrow(() => checkKnownOptions(['rate'], ['0']), 'an array is read by its own keys')
})

t.test('optionKeys returns the names, frozen, in the order written', async (t) => {
  interface Opts {
    a?: number
    b: string
  }
  const keys = optionKeys<Opts>({ b: true, a: true })
  t.same(keys, ['b', 'a'])
  t.ok(Object.isFrozen(keys))
})

// Every list of option names, against the interface it stands for, read from the sources by
// the TypeScript compiler: a key added to an interface without its list (or a list loosened
// with a cast) fails here, besides failing `tsc` (optionKeys<T> requires every key of T).

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Where an options type is: an interface (or imported type) in a file, a member of one, or a parameter of a static method. */
interface Where {
  file: string
  type: string
  member?: string
  staticMethod?: string
  param?: number
}

const LISTS: { name: string; keys: readonly string[]; where: Where }[] = [
  {
    name: 'SKETCH_OPTION_KEYS',
    keys: SKETCH_OPTION_KEYS,
    where: { file: 'src/sketch/shape.ts', type: 'SketchOptions' },
  },
  {
    name: 'ROTATOR_OPTION_KEYS',
    keys: ROTATOR_OPTION_KEYS,
    where: { file: 'src/sketch/shape.ts', type: 'RotatorOptions' },
  },
  {
    name: 'ROTATOR_SIZING_KEYS',
    keys: ROTATOR_SIZING_KEYS,
    where: { file: 'src/sketch/rotator-sizing.ts', type: 'RotatorSizing' },
  },
  {
    name: 'ROTATOR_DESERIALIZE_KEYS',
    keys: ROTATOR_DESERIALIZE_KEYS,
    where: { file: 'src/sketch/rotator.ts', type: 'Rotator', staticMethod: 'deserialize', param: 1 },
  },
  {
    name: 'DESERIALIZE_OPTION_KEYS',
    keys: DESERIALIZE_OPTION_KEYS,
    where: { file: 'src/sketch/shape.ts', type: 'DeserializeOptions' },
  },
  {
    name: 'BLOOM_FILTER_ACCURACY_KEYS',
    keys: BLOOM_FILTER_ACCURACY_KEYS,
    where: { file: 'src/bloom/bloom-filter.ts', type: 'BloomFilterAccuracyOptions' },
  },
  {
    name: 'BLOOM_FILTER_SIZE_KEYS',
    keys: BLOOM_FILTER_SIZE_KEYS,
    where: { file: 'src/bloom/bloom-filter.ts', type: 'BloomFilterSizeOptions' },
  },
  {
    name: 'PERSIST_POLICY_KEYS',
    keys: PERSIST_POLICY_KEYS,
    where: { file: 'src/bloom/persist.ts', type: 'PersistPolicy' },
  },
  {
    name: 'MANAGED_BLOOM_OPTION_KEYS',
    keys: MANAGED_BLOOM_OPTION_KEYS,
    where: { file: 'src/bloom/managed.ts', type: 'ManagedBloomFilterOptions' },
  },
  {
    name: 'SHARDED_BLOOM_OPTION_KEYS',
    keys: SHARDED_BLOOM_OPTION_KEYS,
    where: { file: 'src/bloom/sharded.ts', type: 'ShardedBloomFilterOptions' },
  },
  {
    name: 'REGISTER_BLOOM_KEYS',
    keys: REGISTER_BLOOM_KEYS,
    where: { file: 'src/bloom/registry.ts', type: 'RegisterBloomOptions' },
  },
  {
    name: 'BLOOM_REGISTRY_OPTION_KEYS',
    keys: BLOOM_REGISTRY_OPTION_KEYS,
    where: { file: 'src/bloom/registry.ts', type: 'BloomFilterRegistryOptions' },
  },
  {
    name: 'HYPERLOGLOG_SIZE_KEYS',
    keys: HYPERLOGLOG_SIZE_KEYS,
    where: { file: 'src/window/hyperloglog.ts', type: 'HyperLogLogSizeOptions' },
  },
  {
    name: 'HYPERLOGLOG_ACCURACY_KEYS',
    keys: HYPERLOGLOG_ACCURACY_KEYS,
    where: { file: 'src/window/hyperloglog.ts', type: 'HyperLogLogAccuracyOptions' },
  },
  {
    name: 'COUNT_MIN_SIZE_KEYS',
    keys: COUNT_MIN_SIZE_KEYS,
    where: { file: 'src/window/count-min.ts', type: 'CountMinSizeOptions' },
  },
  {
    name: 'COUNT_MIN_ACCURACY_KEYS',
    keys: COUNT_MIN_ACCURACY_KEYS,
    where: { file: 'src/window/count-min.ts', type: 'CountMinAccuracyOptions' },
  },
  {
    name: 'WINDOW_OPTION_KEYS',
    keys: WINDOW_OPTION_KEYS,
    where: { file: 'src/window/window.ts', type: 'WindowOptions' },
  },
  {
    name: 'WINDOW_DESERIALIZE_KEYS',
    keys: WINDOW_DESERIALIZE_KEYS,
    where: { file: 'src/window/window.ts', type: 'WindowDeserializeOptions' },
  },
  {
    name: 'DEBT_METER_OPTION_KEYS',
    keys: DEBT_METER_OPTION_KEYS,
    where: { file: 'src/limit/debt-meter.ts', type: 'DebtMeterOptions' },
  },
  {
    name: 'FEEDBACK_SCORE_OPTION_KEYS',
    keys: FEEDBACK_SCORE_OPTION_KEYS,
    where: { file: 'src/limit/feedback-score.ts', type: 'FeedbackScoreOptions' },
  },
  {
    name: 'ABUSE_SCORE_OPTION_KEYS',
    keys: ABUSE_SCORE_OPTION_KEYS,
    where: { file: 'src/limit/abuse-score.ts', type: 'AbuseScoreOptions' },
  },
  {
    name: 'BLOOM_GATE_OPTION_KEYS',
    keys: BLOOM_GATE_OPTION_KEYS,
    where: { file: 'src/limit/bloom-gate.ts', type: 'BloomGateOptions' },
  },
  {
    name: 'TELEMETRY_OPTION_KEYS',
    keys: TELEMETRY_OPTION_KEYS,
    where: { file: 'src/limit/telemetry.ts', type: 'TelemetryOptions' },
  },
  {
    name: 'LIMITER_OPTION_KEYS',
    keys: LIMITER_OPTION_KEYS,
    where: { file: 'src/limit/limiter.ts', type: 'LimiterOptions' },
  },
  {
    name: 'POLICY_SKETCH_OPTION_KEYS',
    keys: POLICY_SKETCH_OPTION_KEYS,
    where: { file: 'src/limit/options.ts', type: 'PolicySketchOptions' },
  },
  {
    name: 'POLICY_SKETCH_OPTION_NAMES',
    keys: Object.keys(POLICY_SKETCH_OPTION_NAMES),
    where: { file: 'src/limit/options.ts', type: 'PolicySketchOptions' },
  },
  {
    name: 'HEADER_OPTION_KEYS',
    keys: HEADER_OPTION_KEYS,
    where: { file: 'src/http/headers.ts', type: 'HeaderOptions' },
  },
  {
    name: 'REDIS_STORE_OPTION_KEYS',
    keys: REDIS_STORE_OPTION_KEYS,
    where: { file: 'src/cluster/options.ts', type: 'RedisStoreOptions' },
  },
  {
    name: 'COMMON_OPTION_NAMES',
    keys: Object.keys(COMMON_OPTION_NAMES),
    where: { file: 'src/http/options.ts', type: 'CommonOptions' },
  },
  {
    name: 'ADAPTER_LIMIT_KEYS',
    keys: ADAPTER_LIMIT_KEYS,
    where: { file: 'src/http/options.ts', type: 'AdapterLimitOptions' },
  },
  {
    name: 'ADAPTER_TIERED_LIMIT_KEYS',
    keys: ADAPTER_TIERED_LIMIT_KEYS,
    where: { file: 'src/http/options.ts', type: 'AdapterTieredLimitOptions' },
  },
  {
    name: 'TIER_OPTION_KEYS',
    keys: TIER_OPTION_KEYS,
    where: { file: 'src/limit/tiers.ts', type: 'TierOptions' },
  },
  {
    name: 'TIERED_DEBT_METER_OPTION_KEYS',
    keys: TIERED_DEBT_METER_OPTION_KEYS,
    where: { file: 'src/limit/tiers.ts', type: 'TieredDebtMeterOptions' },
  },
  {
    name: 'ADAPTER_FAIRNESS_KEYS',
    keys: ADAPTER_FAIRNESS_KEYS,
    where: { file: 'src/http/options.ts', type: 'AdapterFairnessOptions' },
  },
  {
    name: 'ADAPTER_ABUSE_KEYS',
    keys: ADAPTER_ABUSE_KEYS,
    where: { file: 'src/http/options.ts', type: 'AdapterAbuseOptions' },
  },
  {
    name: 'BLOOM_REGISTRY_CONFIG_KEYS',
    keys: BLOOM_REGISTRY_CONFIG_KEYS,
    where: { file: 'src/http/bloom-registry.ts', type: 'BloomRegistryConfig' },
  },
  {
    name: 'FASTIFY_REGISTER_KEYS',
    keys: FASTIFY_REGISTER_KEYS,
    where: { file: 'plugins/fastify/options.ts', type: 'RegisterOptions' },
  },
  {
    name: 'GRUDGE_ROUTE_OPTION_KEYS',
    keys: GRUDGE_ROUTE_OPTION_KEYS,
    where: { file: 'plugins/fastify/options.ts', type: 'GrudgeRouteOptions' },
  },
  {
    name: 'GRUDGE_FASTIFY_OPTION_KEYS',
    keys: GRUDGE_FASTIFY_OPTION_KEYS,
    where: { file: 'plugins/fastify/options.ts', type: 'GrudgeFastifyOptions' },
  },
  {
    name: 'FASTIFY_BLOOM_ROUTE_KEYS',
    keys: FASTIFY_BLOOM_ROUTE_KEYS,
    where: { file: 'plugins/fastify/options.ts', type: 'FastifyBloomRouteOptions' },
  },
  {
    name: 'GRUDGE_EXPRESS_OPTION_KEYS',
    keys: GRUDGE_EXPRESS_OPTION_KEYS,
    where: { file: 'plugins/express/options.ts', type: 'GrudgeExpressOptions' },
  },
  {
    name: 'EXPRESS_BLOOM_KEYS',
    keys: EXPRESS_BLOOM_KEYS,
    where: { file: 'plugins/express/options.ts', type: 'GrudgeExpressBloomOptions' },
  },
]

/** The property names of the options type at `w`, from the compiler. */
function interfaceKeys(program: ts.Program, checker: ts.TypeChecker, w: Where): string[] {
  const sf = program.getSourceFile(join(root, w.file))
  if (sf === undefined) throw new Error(`${w.file} is not in the program`)
  // exported from the file, or imported into it
  let sym = checker.getExportsOfModule(checker.getSymbolAtLocation(sf)!).find((s) => s.name === w.type)
  for (const st of sf.statements) {
    const named = ts.isImportDeclaration(st) ? st.importClause?.namedBindings : undefined
    if (sym !== undefined || named === undefined || !ts.isNamedImports(named)) continue
    const spec = named.elements.find((e) => e.name.text === w.type)
    if (spec !== undefined) sym = checker.getSymbolAtLocation(spec.name)
  }
  if (sym === undefined) throw new Error(`${w.type} is not declared or imported in ${w.file}`)
  if (sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym)
  let type: ts.Type
  if (w.staticMethod !== undefined) {
    const method = checker.getTypeOfSymbolAtLocation(sym, sf).getProperty(w.staticMethod)!
    const sig = checker.getTypeOfSymbolAtLocation(method, sf).getCallSignatures()[0]
    type = checker.getTypeOfSymbolAtLocation(sig.parameters[w.param ?? 0], sf)
  } else {
    type = checker.getDeclaredTypeOfSymbol(sym)
    if (w.member !== undefined) type = checker.getTypeOfSymbolAtLocation(type.getProperty(w.member)!, sf)
  }
  return checker.getPropertiesOfType(checker.getNonNullableType(type)).map((p) => p.name)
}

t.test('every list of option names holds exactly the keys of its options interface', async (t) => {
  const config = ts.readConfigFile(join(root, 'tsconfig.json'), (p) => ts.sys.readFile(p))
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  const files = [...new Set(LISTS.map((l) => join(root, l.where.file)))]
  const program = ts.createProgram({ rootNames: files, options: parsed.options })
  const checker = program.getTypeChecker()
  for (const l of LISTS) {
    const want = interfaceKeys(program, checker, l.where).sort()
    t.ok(want.length > 0, `${l.name}: the interface has keys`)
    t.same([...l.keys].sort(), want, `${l.name} lists the keys of ${l.where.type} (${l.where.file})`)
    t.equal(new Set(l.keys).size, l.keys.length, `${l.name}: no name twice`)
  }
})

t.test('every list of option names in src/ and plugins/ is in the table above', async (t) => {
  const declared: string[] = []
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (p.endsWith('.ts')) {
        const text = readFileSync(p, 'utf8')
        for (const m of text.matchAll(
          /export const (\w+)(?:: OptionNames<[^=]*>)? = (?:optionKeys<|Object\.freeze\(\{)/g,
        ))
          if (m[0].includes('optionKeys') || m[0].includes('OptionNames')) declared.push(m[1])
      }
    }
  }
  walk(join(root, 'src'))
  walk(join(root, 'plugins'))
  t.same(declared.sort(), LISTS.map((l) => l.name).sort(), 'the lists declared are the lists checked')
})
