import type { SandboxLanguage } from '../protocols/index.ts'

/**
 * How each language is compiled and run inside a sandbox. Paths are absolute so that no `PATH`
 * lookup happens inside the sandbox. `{src}` is the source file name and `{bin}` the compiled
 * program, both relative to the job's work dir.
 */
export interface LanguageSpec {
  /** File the code is written to, relative to the work dir. */
  readonly source: string
  /** Compile command (argv), or undefined for interpreted languages. */
  readonly compile?: readonly string[]
  /** Run command (argv). */
  readonly run: readonly string[]
}

/** The language table. Read-only; a failed lookup lists the valid names (see `languageSpec`). */
export const LANGUAGES: Readonly<Record<SandboxLanguage, LanguageSpec>> = {
  python: { source: 'main.py', run: ['/usr/bin/python3', 'main.py'] },
  bash: { source: 'main.sh', run: ['/bin/bash', 'main.sh'] },
  nodejs: { source: 'main.js', run: ['/usr/bin/node', 'main.js'] },
  cpp: {
    source: 'main.cpp',
    compile: ['/usr/bin/g++', '-O2', '-std=c++17', '-o', 'main', 'main.cpp'],
    run: ['./main'],
  },
}
