import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The folder triad runs from (the package root). */
const root = fileURLToPath(new URL('../..', import.meta.url))

/**
 * Which code of triad this process runs, for results that are compared across sittings (an
 * ablation table filled in over days): the git commit of the checkout (`git rev-parse HEAD`, 40 hex
 * digits), with `+dirty` when tracked files differ from it; outside a git checkout (an npm install)
 * `triad@<version>` from package.json. Read once per call; never throws (`unknown` when neither
 * can be read).
 */
export function codeVersion(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', ['-C', root, ...args], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim()
    const commit = git('rev-parse', 'HEAD')
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== ''
    return `${commit}${dirty ? '+dirty' : ''}`
  } catch {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version?: string
      }
      return pkg.version ? `triad@${pkg.version}` : 'unknown'
    } catch {
      return 'unknown'
    }
  }
}

/**
 * A `codeVersion` as people write a commit, for lines a person reads: a commit's first 12 hex
 * digits (`+dirty` kept); `triad@<version>` and `unknown` as they are.
 */
export function shortCodeVersion(code: string): string {
  const m = /^([0-9a-f]{40})(\+dirty)?$/.exec(code)
  return m ? `${m[1]!.slice(0, 12)}${m[2] ?? ''}` : code
}
