// Shared by the unknown-option tests of every entry point (not a test file itself: tap runs
// test/**/*.test.ts only).

/** `s` as a regular expression matching exactly `s`. */
function exactly(s: string): RegExp {
  return new RegExp('^' + s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$')
}

/**
 * The error an unknown option throws, as a `t.throws` / `t.rejects` pattern: code
 * `ERR_GRUDGE_OPTION_INVALID` and exactly the message naming `path` and suggesting
 * `suggestion` (or listing the known names when `suggestion` is undefined).
 */
export function unknownOption(
  path: string,
  suggestion: string | undefined,
  known?: readonly string[],
): { name: string; code: string; message: RegExp } {
  const hint = suggestion !== undefined ? `did you mean "${suggestion}"?` : `known options: ${(known ?? []).join(', ')}`
  return {
    name: 'GrudgeError',
    code: 'ERR_GRUDGE_OPTION_INVALID',
    message: exactly(`option "${path}": unknown option (${hint})`),
  }
}

/** An options object with a key its type does not declare, typed as `T` (what a JavaScript caller can pass). */
export function typo<T>(options: Record<string, unknown>): T {
  return options as unknown as T
}
