// `npm run api:update` writes spec/api-snapshot.md: for each entry point of package.json
// `exports` (grudge, grudge/testing, grudge/fastify, grudge/express), every exported name with
// its kind and type, read from the TypeScript sources by the compiler API. test/api.test.ts
// regenerates it in memory and fails on drift, so an accidental export, removal or signature
// change shows up in review as a diff of this file.
//
//   tsx scripts/api-snapshot.ts           write spec/api-snapshot.md
//   tsx scripts/api-snapshot.ts --check   exit 1 (with a diff) if it is out of date
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const SNAPSHOT_PATH = join(root, 'spec', 'api-snapshot.md')

/** One public entry point: its import specifier and the TypeScript source it is built from. */
export interface EntryPoint {
  /** e.g. `grudge/testing` */
  specifier: string
  /** path relative to the package root, e.g. `src/testing/index.ts` */
  source: string
  /** whether the source file exists in this tree */
  exists: boolean
}

/** The entry points declared by package.json `exports`, mapped from their ESM .d.ts to the source. */
export function entryPoints(): EntryPoint[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string
    exports: Record<string, string | { import?: { types?: string } }>
  }
  const out: EntryPoint[] = []
  for (const [key, value] of Object.entries(pkg.exports)) {
    if (typeof value === 'string' || !value.import?.types) continue // ./package.json
    const source = value.import.types.replace(/^\.\/dist\/esm\//, '').replace(/\.d\.ts$/, '.ts')
    const specifier = key === '.' ? pkg.name : `${pkg.name}/${key.slice(2)}`
    out.push({ specifier, source, exists: existsSync(join(root, source)) })
  }
  return out
}

const FLAGS =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType |
  ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope

/** Whether a declaration's docstring carries `@internal` (stripped from the shipped .d.ts by `stripInternal`). */
function isInternal(decl: ts.Node): boolean {
  return ts.getJSDocTags(decl).some((tag) => tag.tagName.text === 'internal')
}

function isHidden(decl: ts.Declaration | undefined): boolean {
  if (!decl) return false
  if (isInternal(decl)) return true
  const flags = ts.getCombinedModifierFlags(decl)
  if (flags & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) return true
  const name = ts.getNameOfDeclaration(decl)
  return name !== undefined && ts.isPrivateIdentifier(name)
}

const flat = (text: string) => text.replace(/\s+/g, ' ').trim()

/** Whether a declaration is grudge's own (not from lib.d.ts or a dependency's types). */
function isOwn(decl: ts.Declaration | undefined): boolean {
  if (!decl) return false
  const file = decl.getSourceFile().fileName
  return file.startsWith(root) && !file.includes('/node_modules/')
}

/** The written type annotation where there is one (keeps alias names), else the checker's type. */
function typeText(checker: ts.TypeChecker, decl: ts.Node | undefined, fallback: () => ts.Type, at: ts.Node): string {
  const node = decl && (decl as { type?: ts.TypeNode }).type
  return node ? flat(node.getText()) : checker.typeToString(fallback(), at, FLAGS)
}

/** `<T>(a: A, b?: B): R` from the declaration's own text where it is annotated. */
function signatureText(checker: ts.TypeChecker, sig: ts.Signature, at: ts.Node): string {
  const decl = sig.declaration
  if (!decl || ts.isJSDocSignature(decl)) return checker.signatureToString(sig, at, FLAGS)
  const tps = decl.typeParameters ? `<${decl.typeParameters.map((p) => flat(p.getText())).join(', ')}>` : ''
  const params = decl.parameters
    .map((p) => {
      const opt = p.questionToken || p.initializer ? '?' : ''
      const type = typeText(checker, p, () => checker.getTypeAtLocation(p), at)
      return `${p.dotDotDotToken ? '...' : ''}${flat(p.name.getText())}${opt}: ${type}`
    })
    .join(', ')
  const ret = typeText(checker, decl, () => sig.getReturnType(), at)
  return `${tps}(${params})${ts.isConstructorDeclaration(decl) ? '' : `: ${ret}`}`
}

function memberLines(checker: ts.TypeChecker, type: ts.Type, at: ts.Node, prefix: string): string[] {
  const lines: string[] = []
  for (const prop of checker.getPropertiesOfType(type)) {
    const decl = prop.valueDeclaration ?? prop.declarations?.[0]
    // Members inherited from lib.d.ts (Error's stack, …) would tie the snapshot to @types/node.
    if (prop.name === 'prototype' || !isOwn(decl) || isHidden(decl)) continue
    const isMethod = decl !== undefined && (ts.isMethodDeclaration(decl) || ts.isMethodSignature(decl))
    if (isMethod) {
      const propType = checker.getTypeOfSymbolAtLocation(prop, at)
      for (const sig of checker.getSignaturesOfType(propType, ts.SignatureKind.Call))
        lines.push(`${prefix}${prop.name}${signatureText(checker, sig, at)}`)
      continue
    }
    const decls = prop.declarations ?? []
    const getterOnly =
      decls.some((d) => ts.isGetAccessorDeclaration(d)) && !decls.some((d) => ts.isSetAccessorDeclaration(d))
    const readonly = getterOnly || decls.some((d) => (ts.getCombinedModifierFlags(d) & ts.ModifierFlags.Readonly) !== 0)
    const optional = prop.flags & ts.SymbolFlags.Optional ? '?' : ''
    const type = typeText(checker, decl, () => checker.getTypeOfSymbolAtLocation(prop, at), at)
    lines.push(`${prefix}${readonly ? 'readonly ' : ''}${prop.name}${optional}: ${type}`)
  }
  return lines
}

function describe(checker: ts.TypeChecker, name: string, exported: ts.Symbol): string[] {
  const sym = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
  const decl = sym.valueDeclaration ?? sym.declarations?.[0]
  if (!decl) return [`unknown ${name}`]
  const lines: string[] = []
  if (sym.flags & ts.SymbolFlags.Class) {
    const cls = decl as ts.ClassDeclaration
    const abstract = ts.getCombinedModifierFlags(cls) & ts.ModifierFlags.Abstract ? 'abstract ' : ''
    const heritage = (cls.heritageClauses ?? []).map((h) => ' ' + h.getText().replace(/\s+/g, ' ')).join('')
    lines.push(`${abstract}class ${name}${heritage}`)
    const staticType = checker.getTypeOfSymbolAtLocation(sym, decl)
    for (const sig of staticType.getConstructSignatures()) {
      if (sig.declaration && isHidden(sig.declaration)) continue
      lines.push(`  constructor${signatureText(checker, sig, decl)}`)
    }
    lines.push(...memberLines(checker, staticType, decl, '  static '))
    lines.push(...memberLines(checker, checker.getDeclaredTypeOfSymbol(sym), decl, '  '))
  } else if (sym.flags & ts.SymbolFlags.Function) {
    const type = checker.getTypeOfSymbolAtLocation(sym, decl)
    for (const sig of type.getCallSignatures()) lines.push(`function ${name}${signatureText(checker, sig, decl)}`)
  } else if (sym.flags & ts.SymbolFlags.Enum) {
    lines.push(`enum ${name}`)
    for (const m of checker.getExportsOfModule(sym))
      lines.push(`  ${m.name} = ${JSON.stringify(checker.getConstantValue(m.valueDeclaration as ts.EnumMember))}`)
  } else if (sym.flags & ts.SymbolFlags.Variable) {
    const list = decl.parent
    const kind = ts.isVariableDeclarationList(list) && list.flags & ts.NodeFlags.Const ? 'const' : 'let'
    let init = ts.isVariableDeclaration(decl) && !decl.type ? decl.initializer : undefined
    const asConst = init !== undefined && ts.isAsExpression(init) && init.type.getText() === 'const'
    while (init && (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init)))
      init = init.expression
    if (init && ts.isObjectLiteralExpression(init)) {
      // A table such as ERROR_CODES: one line per key, so a new key is a one-line diff.
      lines.push(`${kind} ${name}`)
      lines.push(
        ...memberLines(checker, checker.getTypeOfSymbolAtLocation(sym, decl), decl, asConst ? '  readonly ' : '  '),
      )
    } else {
      lines.push(
        `${kind} ${name}: ${typeText(checker, decl, () => checker.getTypeOfSymbolAtLocation(sym, decl), decl)}`,
      )
    }
  } else if (sym.flags & ts.SymbolFlags.Interface) {
    const iface = decl as ts.InterfaceDeclaration
    const tps = iface.typeParameters ? `<${iface.typeParameters.map((p) => p.getText()).join(', ')}>` : ''
    const heritage = (iface.heritageClauses ?? []).map((h) => ' ' + h.getText().replace(/\s+/g, ' ')).join('')
    lines.push(`interface ${name}${tps}${heritage}`)
    const type = checker.getDeclaredTypeOfSymbol(sym)
    for (const sig of type.getCallSignatures()) lines.push(`  ${signatureText(checker, sig, decl)}`)
    lines.push(...memberLines(checker, type, decl, '  '))
  } else if (sym.flags & ts.SymbolFlags.TypeAlias) {
    const alias = decl as ts.TypeAliasDeclaration
    const tps = alias.typeParameters ? `<${alias.typeParameters.map((p) => p.getText()).join(', ')}>` : ''
    lines.push(`type ${name}${tps} = ${alias.type.getText().replace(/\s+/g, ' ')}`)
  } else if (sym.flags & ts.SymbolFlags.Module) {
    lines.push(`namespace ${name}`)
  } else {
    lines.push(`unknown ${name}`)
  }
  // A name exported both as a value and a type (e.g. `const X` + `type X`) lists both.
  if (sym.flags & ts.SymbolFlags.Variable && sym.flags & (ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Interface)) {
    const typeDecl = sym.declarations?.find((d) => ts.isTypeAliasDeclaration(d) || ts.isInterfaceDeclaration(d))
    if (typeDecl) lines.push(`type ${name} (also a type): ${typeDecl.getText().replace(/\s+/g, ' ')}`)
  }
  return lines
}

/** The snapshot text and the entry points whose sources are absent from this tree. */
export function snapshot(): { text: string; missing: EntryPoint[] } {
  const entries = entryPoints()
  const present = entries.filter((e) => e.exists)
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      },
    },
  )
  if (!config) throw new Error('cannot read tsconfig.json')
  const program = ts.createProgram(
    present.map((e) => join(root, e.source)),
    config.options,
  )
  const checker = program.getTypeChecker()
  const out: string[] = [
    '# Public API snapshot',
    '',
    '<!-- Generated by `npm run api:update` (scripts/api-snapshot.ts); do not edit by hand.',
    '     test/api.test.ts fails when this file and the sources disagree. -->',
    '',
    'Every name exported by each entry point of `package.json` `exports`, with its kind and type.',
    'A change here is a change to what users can import: review it like one.',
  ]
  for (const entry of entries) {
    out.push('', `## ${entry.specifier}`, '', `Source: \`${entry.source}\``, '')
    if (!entry.exists) {
      out.push('(source not present in this tree)')
      continue
    }
    const file = program.getSourceFile(join(root, entry.source))
    const moduleSym = file && checker.getSymbolAtLocation(file)
    const exports = moduleSym ? checker.getExportsOfModule(moduleSym) : []
    const resolve = (s: ts.Symbol) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s)
    const blocks = exports
      .filter((s) => {
        // an @internal declaration is not part of the API even when a barrel re-exports it
        const decl = resolve(s).valueDeclaration ?? resolve(s).declarations?.[0]
        return !decl || !isInternal(decl)
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((s) => {
        // `export default x` where x is also exported by name: say so instead of listing x twice.
        const same = s.name === 'default' && exports.find((o) => o !== s && resolve(o) === resolve(s))
        return same ? `default = ${same.name}` : describe(checker, s.name, s).join('\n')
      })
    out.push('```ts', blocks.length ? blocks.join('\n') : '// (no exports)', '```')
  }
  return { text: out.join('\n') + '\n', missing: entries.filter((e) => !e.exists) }
}

/** A small line diff (expected vs actual) for the drift message. */
export function lineDiff(expected: string, actual: string): string {
  const a = expected.split('\n')
  const b = actual.split('\n')
  const inA = new Set(a)
  const inB = new Set(b)
  const lines = [
    ...a.filter((l) => !inB.has(l)).map((l) => `- ${l}`),
    ...b.filter((l) => !inA.has(l)).map((l) => `+ ${l}`),
  ]
  return lines.length ? lines.join('\n') : '(only the order of lines differs)'
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { text, missing } = snapshot()
  for (const m of missing)
    console.warn(`api-snapshot: ${m.specifier}: ${m.source} does not exist yet; listed as absent`)
  if (process.argv.includes('--check')) {
    const old = existsSync(SNAPSHOT_PATH) ? readFileSync(SNAPSHOT_PATH, 'utf8') : ''
    if (old !== text) {
      console.error(
        `spec/api-snapshot.md is out of date (- file, + sources):\n${lineDiff(old, text)}\nRun: npm run api:update`,
      )
      process.exit(1)
    }
    console.log('spec/api-snapshot.md is up to date')
  } else {
    writeFileSync(SNAPSHOT_PATH, text)
    console.log(`wrote ${SNAPSHOT_PATH}`)
  }
}
