// ESLint flat config: @eslint/js recommended + typescript-eslint's type-aware rules
// (recommendedTypeChecked), over src, plugins, test, examples and scripts.
// Formatting is Prettier's job (.prettierrc.json); no stylistic rules here.
// Every rule switched off or relaxed below says why.
import js from '@eslint/js'
import { defineConfig } from 'eslint/config'
import tseslint from 'typescript-eslint'

export default defineConfig(
  {
    ignores: [
      'dist/**',
      'coverage/**',
      '.tap/**',
      'docs/**',
      'node_modules/**',
      'bench-results/**',
      'test-artifacts/**',
    ],
  },
  // Lint every TypeScript and JavaScript file left after the ignores: src, plugins, test, examples, scripts.
  { files: ['**/*.ts', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The project service finds tsconfig.json for each file, so rules see the real types.
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A floating promise in a rate limiter is a request that never answers: keep it an error,
      // but allow `void promise` as the explicit "fire and forget" marker.
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      // `_`-prefixed names mark parameters kept for an interface's shape.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Numbers and bigints in template strings are how every error message says "received …";
      // objects and unknowns still fail (they would print [object Object]).
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `import type` keeps type-only imports out of both builds (verbatim in ESM and CJS).
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'separate-type-imports' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // tap's `t.test(...)` returns a promise the runner already awaits; tests need not `await` each.
      '@typescript-eslint/no-floating-promises': 'off',
      // `async (t) => { … }` is tap's way to end a subtest without `t.end()`, awaiting or not.
      '@typescript-eslint/require-await': 'off',
      // Tests poke at values parsed from JSON, child-process output and fixtures, which are `any` by nature.
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    // Untyped JS files (this config, build scripts) get no type-aware rules.
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    // Node's globals for plain JS (TypeScript files get them from @types/node instead); listed
    // by hand because the `globals` package is not a dependency.
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
  },
  {
    // CommonJS for tools that `require()` their plugins (scripts/ts-node-esbuild.cjs, ts-node's transpiler)
    files: ['**/*.cjs'],
    // `require()` is how a CommonJS file imports; the rule is for TypeScript and ESM files.
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', exports: 'writable', module: 'writable' },
    },
  },
)
