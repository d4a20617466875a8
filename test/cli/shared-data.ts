// Locates the real logs of ../shared/data (next to the repository in CI; absent in a user's
// clone). GRUDGE_SHARED_DATA overrides the directory.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join, resolve } from 'node:path'

/** The repository root. */
export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)))

/** The shared data directory, or undefined with the reason in {@link missingDataReason}. */
export const sharedData: string | undefined = (() => {
  const candidates = [process.env.GRUDGE_SHARED_DATA, join(repoRoot, '..', 'shared', 'data'), join(repoRoot, '..', '..', 'shared', 'data')]
  for (const c of candidates) if (c && existsSync(join(c, 'access.log')) && existsSync(join(c, 'auth.log'))) return c
  return undefined
})()

/** Why tests that need the real logs skip. */
export const missingDataReason = `real logs not found: ${join(repoRoot, '..', 'shared', 'data')} has no access.log and auth.log (a clone without ../shared; CI has it; or set GRUDGE_SHARED_DATA)`
