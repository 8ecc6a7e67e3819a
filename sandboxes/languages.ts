import { existsSync, readFileSync } from 'node:fs'
import type { SandboxLanguage } from '../protocols/index.ts'

/**
 * How each language is compiled and run inside a sandbox. Paths are absolute so that no `PATH`
 * lookup happens inside the sandbox. Commands and environment values may hold placeholders, filled
 * per job by `languageCommands`:
 * - `{workdir}`: the job's work dir (absolute);
 * - `{heap_mb}`: half the job's memory limit, MiB (the JVM's `-Xmx`, leaving the other half for
 *   the JVM's own code, metaspace, thread stacks and the program's native memory);
 * - `{cpus}`: the job's CPU limit rounded up to whole cores (at least 1), so that the JVM and Go
 *   size their thread pools to the cores the job may use, not to the host's.
 */
export interface LanguageSpec {
  /** File the code is written to, relative to the work dir. */
  readonly source: string
  /** Compile command (argv), or undefined for interpreted languages. */
  readonly compile?: readonly string[]
  /** Run command (argv). */
  readonly run: readonly string[]
  /** Environment added to the sandbox's own for both steps (compile and run). */
  readonly env?: Readonly<Record<string, string>>
  /**
   * Smallest `memory_limit_MB` (MiB) the language is served with: 1.5 to 2 times the peak resident
   * memory of its compiler or interpreter on a small program, measured with Debian 12's toolchains
   * (python 8 MiB, bash 3, node 42, g++ 66, javac 63, go build 47, rustc 140, the TypeScript
   * transpile 93), at least 16; a smaller ask is refused (HTTP 422) instead of failing in an OOM
   * kill. `test/sandboxes/languages.test.ts` runs each new language at exactly its minimum.
   */
  readonly minMemoryMB: number
  /** Debian 12 packages that bring the toolchain onto the host's /usr (`.ci/services.sh`
   *  installs them; the image bind-mounts /usr). */
  readonly packages: readonly string[]
  /** Paths besides the commands' programs that the toolchain needs. */
  readonly needs?: readonly string[]
}

/**
 * TypeScript is transpiled, not type-checked, as `tsx` and `ts-node --transpile-only` run it: a
 * syntax error fails the compile step, a type error does not (Debian ships no `@types/node`, so a
 * type check would refuse every program that reads stdin with `require('fs')`). This script, run by
 * node with Debian's TypeScript (`node-typescript`), writes `main.js` or prints the diagnostics.
 */
const TYPESCRIPT_TRANSPILE: string = readFileSync(
  new URL('./typescript-transpile.cjs', import.meta.url),
  'utf8',
)

/**
 * The language table. Read-only; unknown names are refused by the request schema (HTTP 422).
 * Compile time is bounded by the request's `compile_timeout` (SandboxFusion's default, 10 s): a
 * small program's compile took here 0.9 s (javac), 0.4 s (go build, Go 1.19 ships its standard
 * library compiled, so the per-job cache starts warm enough), 0.3 s (rustc -O), 0.4 s (TypeScript)
 * and 0.5 s (g++ with iostream) of one core. Compilers run under the job's own memory, pids and
 * CPU limits; `minMemoryMB` keeps the memory above what they need.
 */
export const LANGUAGES: Readonly<Record<SandboxLanguage, LanguageSpec>> = {
  python: { source: 'main.py', run: ['/usr/bin/python3', 'main.py'], minMemoryMB: 16, packages: ['python3'] },
  bash: { source: 'main.sh', run: ['/bin/bash', 'main.sh'], minMemoryMB: 16, packages: ['bash'] },
  nodejs: { source: 'main.js', run: ['/usr/bin/node', 'main.js'], minMemoryMB: 64, packages: ['nodejs'] },
  cpp: {
    source: 'main.cpp',
    compile: ['/usr/bin/g++', '-O2', '-std=c++17', '-o', 'main', 'main.cpp'],
    run: ['./main'],
    minMemoryMB: 128,
    packages: ['g++'],
  },
  java: {
    // The public class must be `Main` (the file is Main.java), as in SandboxFusion.
    source: 'Main.java',
    compile: [
      '/usr/bin/javac',
      '-J-Xmx{heap_mb}m',
      '-J-XX:+UseSerialGC',
      '-J-XX:TieredStopAtLevel=1',
      '-J-XX:ActiveProcessorCount={cpus}',
      '-encoding',
      'UTF-8',
      'Main.java',
    ],
    run: [
      '/usr/bin/java',
      '-Xmx{heap_mb}m',
      '-XX:+UseSerialGC',
      '-XX:ActiveProcessorCount={cpus}',
      '-XX:ReservedCodeCacheSize=64m',
      '-XX:CompressedClassSpaceSize=64m',
      '-cp',
      '.',
      'Main',
    ],
    minMemoryMB: 128,
    packages: ['default-jdk-headless'],
  },
  go: {
    source: 'main.go',
    compile: ['/usr/bin/go', 'build', '-o', 'main', 'main.go'],
    run: ['./main'],
    env: {
      // the build cache lives in the work dir (wiped after the job); /usr is read-only
      GOCACHE: '{workdir}/.cache/go-build',
      GOPATH: '{workdir}/.go',
      GOMAXPROCS: '{cpus}',
      GOFLAGS: '-p={cpus}',
    },
    minMemoryMB: 128,
    packages: ['golang-go'],
  },
  rust: {
    source: 'main.rs',
    compile: ['/usr/bin/rustc', '-O', '--edition', '2021', '-o', 'main', 'main.rs'],
    run: ['./main'],
    minMemoryMB: 256,
    packages: ['rustc'],
  },
  typescript: {
    source: 'main.ts',
    compile: ['/usr/bin/node', '-e', TYPESCRIPT_TRANSPILE, 'main.ts', 'main.js'],
    run: ['/usr/bin/node', 'main.js'],
    minMemoryMB: 192,
    packages: ['node-typescript', 'nodejs'],
    needs: ['/usr/share/nodejs/typescript/lib/typescript.js'],
  },
}

/**
 * Environment of every job, before the language's own: OpenMP and OpenBLAS (numpy's BLAS) start one
 * thread per core of the job, not per core of the host (a 64-core host would start 64 threads at
 * `import numpy`, over a pids limit of 64).
 */
export const THREAD_ENV: Readonly<Record<string, string>> = {
  OMP_NUM_THREADS: '{cpus}',
  OPENBLAS_NUM_THREADS: '{cpus}',
}

/** The commands and environment of one job of a language, placeholders filled. */
export interface LanguageCommands {
  source: string
  compile: string[] | null
  run: string[]
  env: Record<string, string>
}

/**
 * Fills a language's placeholders for one job.
 * @param o.memoryMB the job's memory limit, MiB; o.cpus its CPU limit, cores; o.workdir its work dir.
 */
export function languageCommands(
  language: SandboxLanguage,
  o: { memoryMB: number; cpus: number; workdir: string },
): LanguageCommands {
  const spec = LANGUAGES[language]
  const values: Record<string, string> = {
    workdir: o.workdir,
    heap_mb: String(Math.max(8, Math.floor(o.memoryMB / 2))),
    cpus: String(Math.max(1, Math.ceil(o.cpus))),
  }
  const fill = (s: string) => s.replace(/\{(workdir|heap_mb|cpus)\}/g, (_, k: string) => values[k]!)
  // the transpile script is passed whole: its text is not a template
  const fillArgv = (argv: readonly string[]) => argv.map((a) => (a === TYPESCRIPT_TRANSPILE ? a : fill(a)))
  return {
    source: spec.source,
    compile: spec.compile ? fillArgv(spec.compile) : null,
    run: fillArgv(spec.run),
    env: Object.fromEntries(Object.entries({ ...THREAD_ENV, ...spec.env }).map(([k, v]) => [k, fill(v)])),
  }
}

/**
 * The toolchain paths of a language missing on this host (its commands' programs and `needs`).
 * @returns absolute paths, empty when the language can run.
 */
export function missingToolchain(language: SandboxLanguage): string[] {
  const spec = LANGUAGES[language]
  const paths = [spec.compile?.[0], spec.run[0], ...(spec.needs ?? [])].filter(
    (p): p is string => p?.startsWith('/') === true,
  )
  return paths.filter((p) => !existsSync(p))
}

let installed: ReadonlySet<SandboxLanguage> | undefined

/**
 * The languages whose toolchain is on this host (`missingToolchain` empty), looked up once per
 * process: restart the server after installing a toolchain.
 */
export function installedLanguages(): ReadonlySet<SandboxLanguage> {
  installed ??= new Set(
    (Object.keys(LANGUAGES) as SandboxLanguage[]).filter((l) => missingToolchain(l).length === 0),
  )
  return installed
}
