/**
 * Unknown option names. A misspelt option (`{ level: 4 }` for `levels`) would otherwise be
 * ignored and the default used in silence; constructors and factories call
 * {@link checkKnownOptions} once, at construction, with the names their options interface
 * declares, so a typo throws like any other invalid option.
 */
import { GrudgeError } from './errors.js'

/** Every key of `T`, required, mapped to `true`: the argument of {@link optionKeys}. */
export type OptionNames<T> = { readonly [K in keyof Required<T>]: true }

/**
 * The option names of an options interface `T`, as a frozen runtime list. The argument is
 * an object literal typed with every key of `T` required, so the compiler refuses a list
 * that misses a key of `T` or names one `T` lacks: an option added to the interface must
 * be added to its list in the same change.
 * @param keys `{ name: true, … }`, one entry per key of `T`
 * @returns the keys, in the order written
 */
export function optionKeys<T>(keys: OptionNames<T>): readonly string[] {
  return Object.freeze(Object.keys(keys))
}

/**
 * Throw when `options` has an own enumerable key that is not in `known`, also when its
 * value is `undefined` (a typo is a typo). Only the top level is read: nested objects are
 * values (a decay, a hasher, a clock, a client) unless the caller checks them with their
 * own list. Call it at construction only; it allocates.
 * @param options the options object (anything else is left to the caller's type checks)
 * @param known the accepted names, e.g. from {@link optionKeys}
 * @param prefix option path prefix for the message, e.g. `limit.` or `config.grudge.`
 * @throws {GrudgeError} `ERR_GRUDGE_OPTION_INVALID` naming the full path of the first
 * unknown key, with the closest known name when one is within edit distance 2 (case-insensitive)
 */
export function checkKnownOptions(options: unknown, known: readonly string[], prefix = ''): void {
  if (typeof options !== 'object' || options === null) return
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue
    const near = closestName(key, known)
    const hint = near !== undefined ? `did you mean "${near}"?` : `known options: ${known.join(', ')}`
    throw new GrudgeError('ERR_GRUDGE_OPTION_INVALID', `option "${prefix}${key}": unknown option (${hint})`)
  }
}

/**
 * The known name closest to `name` by {@link editDistance} (case-insensitive), if it is at
 * most 2 edits away; the first one listed on a tie.
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  const lower = name.toLowerCase()
  let best: string | undefined
  let bestDistance = 3
  for (const k of known) {
    const d = editDistance(lower, k.toLowerCase())
    if (d < bestDistance) {
      best = k
      bestDistance = d
    }
  }
  return best
}

/**
 * Optimal-string-alignment distance: the fewest insertions, deletions, substitutions and
 * swaps of two adjacent characters turning `a` into `b` (Levenshtein with transpositions,
 * Damerau 1964), so `burts` is 1 from `burst`.
 */
export function editDistance(a: string, b: string): number {
  // three rolling rows of the dynamic programme: i − 2, i − 1 and i
  let before = new Array<number>(b.length + 1).fill(0)
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j)
  let cur = new Array<number>(b.length + 1).fill(0)
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2] + 1)
      cur[j] = d
    }
    ;[before, prev, cur] = [prev, cur, before]
  }
  return prev[b.length]
}
