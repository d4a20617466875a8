// The transpiler behind tap's TypeScript loader (tsconfig.tap.json → "ts-node" → "transpiler"):
// esbuild's transform instead of TypeScript's transpileModule. tap's loader (ts-node) already
// runs transpile-only (no type check: `npm run typecheck` does that once for the whole tree),
// so both turn one file's TypeScript into JavaScript without looking at other files; esbuild
// does it in native code. Measured 2026-12-02 (CPU seconds, user + sys, of one test process
// under tap's loader): test/plugins/fastify.test.ts 11.7 → 6.1, test/sketch/sketch.test.ts
// 6.7 → 3.9, an empty test 2.2 → 1.5 (CONTRIBUTING.md, "How long the tests take").
//
// The interface is ts-node's documented one for third-party transpilers (ts-node docs,
// "Transpilers"; its own swc transpiler is built the same way): a CommonJS module exporting
// `create({ service, nodeModuleEmitKind })` → `{ transpile(code, { fileName }) }` →
// `{ outputText, sourceMapText }`. ts-node appends the source map inline, so stack traces and
// coverage point at the .ts lines as before.
'use strict'
const { transformSync } = require('esbuild')

/** TypeScript's ScriptTarget numbers → esbuild targets (typescript/lib/typescript.d.ts). */
const TARGETS = { 9: 'es2022', 10: 'es2023', 11: 'es2024', 99: 'esnext' }

exports.create = function create({ service, nodeModuleEmitKind }) {
  const o = service.config.options
  const target = TARGETS[o.target]
  if (target === undefined) throw new Error(`ts-node-esbuild: no esbuild target for TypeScript target ${o.target}`)
  // the compiler options that change what a per-file transpile emits (esbuild's tsconfigRaw)
  const tsconfigRaw = {
    compilerOptions: {
      target,
      useDefineForClassFields: o.useDefineForClassFields,
      verbatimModuleSyntax: o.verbatimModuleSyntax,
      experimentalDecorators: o.experimentalDecorators,
    },
  }
  // which module system node will load the file as: ts-node passes it for `module: NodeNext`
  // (from package.json "type", .mts/.cts), else it is the `module` option (1 = CommonJS)
  const format =
    nodeModuleEmitKind === 'nodecjs' || (nodeModuleEmitKind === undefined && o.module === 1) ? 'cjs' : 'esm'
  return {
    transpile(code, { fileName }) {
      const r = transformSync(code, {
        loader: fileName.endsWith('.tsx') ? 'tsx' : 'ts',
        format,
        target,
        tsconfigRaw,
        sourcefile: fileName,
        sourcemap: 'external',
        sourcesContent: false,
      })
      return { outputText: r.code, sourceMapText: r.map }
    },
  }
}
