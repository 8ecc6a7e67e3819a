import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's root folder. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** Every `.ts` file under `dir` (relative to the repository's root), recursively, as absolute paths. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name))
}
