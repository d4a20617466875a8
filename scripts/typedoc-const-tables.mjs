// TypeDoc plugin for `npm run docs`. An `as const` lookup table (ERROR_CODES, FAMILY,
// HASHER_IDS, …) is documented once on the constant; its entries are data, and for
// ERROR_CODES the value *is* the documentation. So an entry of a documented table without its
// own docstring gets its literal value as its comment, instead of failing `notDocumented`.
// Anything else undocumented still fails the docs build.
import { Comment, Converter, ReflectionKind } from 'typedoc'

/** @param {import('typedoc').Application} app */
export function load(app) {
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
