// TypeDoc plugin for `npm run docs` (loaded by typedoc.config.mjs).
//
// 1. Modules are named by what users import (`grudge`, `grudge/testing`, `grudge/fastify`,
//    `grudge/express`, from package.json `exports`), not by their source paths.
// 2. An `as const` lookup table (ERROR_CODES, FAMILY, HASHER_IDS, …) is documented once on the
//    constant; its entries are data, and for ERROR_CODES the value *is* the documentation. So
//    an entry of a documented table without its own docstring gets its literal value as its
//    comment instead of failing `notDocumented`. Anything else undocumented still fails.
import { readFileSync } from 'node:fs'
import { Comment, Converter, ReflectionKind } from 'typedoc'

/** Source path (e.g. `src/testing/index.ts`) → import specifier (e.g. `grudge/testing`). */
function specifiers() {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  const out = new Map()
  for (const [key, value] of Object.entries(pkg.exports)) {
    const types = typeof value === 'object' ? value.import?.types : undefined
    if (!types) continue
    const source = types.replace(/^\.\/dist\/esm\//, '').replace(/\.d\.ts$/, '.ts')
    out.set(source, key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`)
  }
  return out
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  const names = specifiers()
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    const project = context.project
    for (const mod of project.getReflectionsByKind(ReflectionKind.Module)) {
      const path = project.getSymbolIdFromReflection(mod)?.packagePath
      const name = path && names.get(path)
      if (name) mod.name = name
    }
  })
  app.converter.on(Converter.EVENT_RESOLVE_END, (context) => {
    for (const ref of context.project.getReflectionsByKind(ReflectionKind.Property)) {
      const literal = ref.parent
      const table = literal?.parent
      if (ref.hasComment() || !literal?.kindOf(ReflectionKind.TypeLiteral)) continue
      if (!table?.kindOf(ReflectionKind.Variable) || !table.hasComment()) continue
      if (ref.type?.type !== 'literal') continue
      const value = ref.type.value
      const text = typeof value === 'string' ? value : `\`${String(value)}\``
      ref.comment = new Comment([{ kind: 'text', text }])
    }
  })
}
