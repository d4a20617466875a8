// `npm run docs`: the API reference from the docstrings, into docs/api (gitignored).
// Validation is strict: a public symbol without a docstring, a broken {@link} or a type that
// is used but not exported fails the build (treatWarningsAsErrors).
import { existsSync } from 'node:fs'

// One per package.json `exports` entry; an adapter whose source has not landed yet is left out.
const entryPoints = [
  'src/index.ts',
  'src/testing/index.ts',
  'plugins/fastify/index.ts',
  'plugins/express/index.ts',
].filter((f) => existsSync(f))

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  entryPoints,
  plugin: ['./scripts/typedoc-plugin.mjs'],
  out: 'docs/api',
  tsconfig: 'tsconfig.build.json',
  excludePrivate: true,
  excludeProtected: false,
  excludeInternal: true,
  readme: 'none',
  // Source links need a git remote, which a fresh or offline clone may not have.
  disableSources: true,
  // TypeDoc's default list plus Constructor: every public class, function, method, property,
  // accessor, type and constructor carries a docstring. Parameters are described in their
  // function's docstring (@param), so they are not required one by one.
  requiredToBeDocumented: [
    'Enum',
    'EnumMember',
    'Variable',
    'Function',
    'Class',
    'Interface',
    'Property',
    'Method',
    'Accessor',
    'TypeAlias',
    'Constructor',
  ],
  validation: { notExported: true, invalidLink: true, notDocumented: true },
  treatWarningsAsErrors: true,
}
