import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import * as tf from '@tensorflow/tfjs'
import { activateCudaBackend } from './cuda-backend.ts'
import {
  BackendActivationError,
  BackendUnavailableError,
  ThreadCountError,
  UnknownBackendError,
} from './errors.ts'
import { loadNativeAddon, NATIVE_DIR_ENV } from './native-addon.ts'
import { NATIVE_BACKEND } from './native-backend.ts'
import { registerNativeBackend } from './register-native-backend.ts'

/**
 * Tensor backends, best first (docs/design.md, Policy model). `native` is triad's own engine
 * (`native-backend.ts`, compiled by `npm ci`); `tfjs-node-gpu` and `tfjs-node` are optional
 * dependencies (they download libtensorflow while installing); `wasm` ships inside its npm package
 * and is the fallback where the native ones are absent; `cpu` is pure JavaScript.
 */
export const BackendName = {
  Native: 'native',
  TfjsNodeGpu: 'tfjs-node-gpu',
  TfjsNode: 'tfjs-node',
  Wasm: 'wasm',
  Cpu: 'cpu',
  /**
   * The native engine with its matrix products on a CUDA device (`cuda-backend.ts`; built where
   * nvcc is). Not in `BACKEND_ORDER`: an unforced choice tries it first where a device is visible.
   */
  Cuda: 'cuda',
} as const
export type BackendName = (typeof BackendName)[keyof typeof BackendName]

/** The order in which `chooseBackend` tries the backends when none is forced. */
export const BACKEND_ORDER: readonly BackendName[] = [
  BackendName.Native,
  BackendName.TfjsNodeGpu,
  BackendName.TfjsNode,
  BackendName.Wasm,
  BackendName.Cpu,
]

/** Environment variable that forces a backend (one of `BackendName`). */
export const BACKEND_ENV = 'TRIAD_BACKEND'

/**
 * Environment variable setting the native engine's threads (a positive integer up to the cores, or
 * `auto` for all of them); the `threads` option wins over it.
 */
export const THREADS_ENV = 'TRIAD_THREADS'

/** Cores this process may run on: `os.availableParallelism()` (it honours the CPU affinity mask). */
export function machineCores(): number {
  return os.availableParallelism()
}

/**
 * A thread setting as a count: `undefined`, `''` and `auto` are all the cores; a number, or the text
 * of one (an environment variable), must be an integer from 1 to `cores`.
 * @param setting the setting's name for the error (`threads`, `TRIAD_THREADS`, `model.threads.learner`).
 * @throws ThreadCountError for anything else (0, -1, 2.5, `many`, or more than `cores`).
 */
export function resolveThreads(
  asked: number | string | undefined,
  cores: number = machineCores(),
  setting = 'threads',
): number {
  if (asked === undefined || asked === 'auto' || asked === '') return cores
  const n = typeof asked === 'string' && /^\s*\d+\s*$/.test(asked) ? Number(asked) : asked
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > cores)
    throw new ThreadCountError(setting, asked, cores)
  return n
}

/**
 * Checks, before anything starts, the compute settings a run's processes on this machine will read:
 * `TRIAD_BACKEND` of `env` (a backend name), `TRIAD_THREADS` and each of `threads` (a setting's
 * name to its value: 1 to this machine's cores, or `auto`). Loads nothing: a run that would fail
 * on them is refused before its run directory is made, not after its roles restart.
 * @throws UnknownBackendError for a `TRIAD_BACKEND` that is not a backend's name.
 * @throws ThreadCountError for a thread count that is not 1 to the cores.
 */
export function checkBackendSettings(
  threads: Readonly<Record<string, number | string | undefined>> = {},
  env: NodeJS.ProcessEnv = process.env,
): void {
  const forced = env[BACKEND_ENV] || undefined
  if (forced !== undefined && !isBackendName(forced))
    throw new UnknownBackendError(forced, [...BACKEND_ORDER, BackendName.Cuda])
  resolveThreads(env[THREADS_ENV], machineCores(), THREADS_ENV)
  for (const [setting, value] of Object.entries(threads)) resolveThreads(value, machineCores(), setting)
}

/** What `chooseBackend` chose. Record it with every run. */
export interface BackendChoice {
  /** Our name of the backend. */
  name: BackendName
  /** The name tfjs knows it by (`tensorflow` for both native packages). */
  tfBackend: string
  /** Whether it was forced by the setting or the environment variable. */
  forced: boolean
  /** Why each better backend was skipped, by name (empty when the first one worked). */
  skipped: Record<string, string>
  /**
   * Threads of the native engine's pool (the caller's thread included), set by this choice; only
   * for `native`: the other backends do not take the setting (wasm and cpu compute on one core,
   * tfjs-node sizes libtensorflow's own pool).
   */
  threads?: number
}

/** Options of `chooseBackend`. */
export interface ChooseBackendOptions {
  /** Force this backend (a recipe or CLI setting); wins over the environment variable. */
  backend?: BackendName | string
  /** Environment to read `TRIAD_BACKEND` from; default `process.env`. */
  env?: Record<string, string | undefined>
  /** Where the choice is printed; default one line on stderr. Pass `() => {}` to silence. */
  log?: (line: string) => void
  /**
   * Whether a CUDA device is visible (then an unforced choice tries `cuda` first, and `tfjs-node-gpu`
   * at all); default: `/dev/nvidiactl` exists.
   */
  cudaVisible?: () => boolean
  /**
   * Threads of the native engine's pool: 1 to the machine's cores (`machineCores()`), or `auto` for
   * all of them; wins over `TRIAD_THREADS`; default all cores. One pool serves the whole process
   * (its worker threads too): the last choice sets it. Checked whichever backend is chosen.
   */
  threads?: number | 'auto'
}

const require = createRequire(import.meta.url)

/** Directory holding the wasm backend's `.wasm` files (Node needs it spelled out). */
export function wasmDistDir(): string {
  const pkg = require.resolve('@tensorflow/tfjs-backend-wasm/package.json')
  return `${path.join(path.dirname(pkg), 'dist')}${path.sep}`
}

let wasmPathsSet = false

/**
 * Loads and activates one backend.
 * @throws BackendActivationError with the reason when it cannot (what `activateCudaBackend` throws
 *   for cuda).
 */
async function activate(
  name: BackendName,
  cudaVisible: () => boolean,
  native: { dir?: string; threads: number },
): Promise<string> {
  switch (name) {
    case BackendName.Native: {
      const { addon, reason } = loadNativeAddon({ dir: native.dir })
      if (!addon) throw new BackendActivationError(name, reason ?? '')
      registerNativeBackend(addon)
      if (!(await tf.setBackend(NATIVE_BACKEND)))
        throw new BackendActivationError(name, 'native backend failed to initialise')
      addon.setThreads(native.threads)
      return NATIVE_BACKEND
    }
    case BackendName.Cuda: {
      const { addon, reason } = loadNativeAddon({ dir: native.dir })
      if (!addon)
        throw new BackendActivationError(name, `the native engine it runs on is unavailable: ${reason}`)
      const { tfBackend } = await activateCudaBackend(addon)
      addon.setThreads(native.threads)
      return tfBackend
    }
    case BackendName.TfjsNodeGpu:
      if (!cudaVisible()) throw new BackendActivationError(name, 'no CUDA device visible')
      await import('@tensorflow/tfjs-node-gpu' as string)
      if (!(await tf.setBackend('tensorflow')))
        throw new BackendActivationError(name, 'tensorflow backend failed to initialise')
      return 'tensorflow'
    case BackendName.TfjsNode:
      await import('@tensorflow/tfjs-node' as string)
      if (!(await tf.setBackend('tensorflow')))
        throw new BackendActivationError(name, 'tensorflow backend failed to initialise')
      return 'tensorflow'
    case BackendName.Wasm: {
      const wasm = await import('@tensorflow/tfjs-backend-wasm')
      if (!wasmPathsSet) {
        wasm.setWasmPaths(wasmDistDir())
        wasmPathsSet = true
      }
      if (!(await tf.setBackend('wasm')))
        throw new BackendActivationError(name, 'wasm backend failed to initialise')
      return 'wasm'
    }
    case BackendName.Cpu:
      if (!(await tf.setBackend('cpu')))
        throw new BackendActivationError(name, 'cpu backend failed to initialise')
        // Silence its one-time "install tfjs-node" banner: the choice is printed by us.
      ;(tf.backend() as unknown as { firstUse?: boolean }).firstUse = false
      return 'cpu'
  }
}

function isBackendName(name: string): name is BackendName {
  return (BACKEND_ORDER as readonly string[]).includes(name) || name === BackendName.Cuda
}

function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err)
  return msg.split('\n')[0]!.slice(0, 200)
}

/** `N thread(s)` for the native backend's line and record; nothing for the others. */
function threadsOf(name: BackendName, threads: number): { note: string[]; record: { threads?: number } } {
  if (name !== BackendName.Native) return { note: [], record: {} }
  return { note: [`${threads} thread${threads === 1 ? '' : 's'}`], record: { threads } }
}

/**
 * Chooses, activates, prints and returns the tensor backend.
 *
 * A forced backend (the `backend` option, else `TRIAD_BACKEND`) is used or fails loudly; otherwise
 * the first of `BACKEND_ORDER` that loads wins. The line printed names the backend, `forced` when
 * it was, the native engine's threads, and why each better backend was skipped (a failed native
 * build says its reason there: `skipped native: build failed: ...`). The native addon comes from
 * `TRIAD_NATIVE_DIR` of `env` when set (`native-addon.ts`). Calling it again re-activates the asked
 * backend (cheap once loaded) and sets the threads again.
 *
 * @throws ThreadCountError when `threads` (else `TRIAD_THREADS`) is not 1 to the machine's cores
 *   (before any backend is loaded).
 * @throws UnknownBackendError when the forced name is not a `BackendName`.
 * @throws BackendUnavailableError when the forced backend (or, unforced, every backend) fails.
 */
export async function chooseBackend(options: ChooseBackendOptions = {}): Promise<BackendChoice> {
  const env = options.env ?? process.env
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const cudaVisible = options.cudaVisible ?? (() => existsSync('/dev/nvidiactl'))
  const threads =
    options.threads !== undefined
      ? resolveThreads(options.threads, machineCores(), 'threads')
      : resolveThreads(env[THREADS_ENV], machineCores(), THREADS_ENV)
  const native = { dir: env[NATIVE_DIR_ENV] || undefined, threads }
  const forcedName = options.backend ?? (env[BACKEND_ENV] || undefined)
  if (forcedName !== undefined) {
    if (!isBackendName(forcedName))
      throw new UnknownBackendError(forcedName, [...BACKEND_ORDER, BackendName.Cuda])
    try {
      const tfBackend = await activate(forcedName, cudaVisible, native)
      const { note, record } = threadsOf(forcedName, threads)
      log(`triad: tensor backend ${forcedName} (${['forced', ...note].join(', ')})`)
      return { name: forcedName, tfBackend, forced: true, skipped: {}, ...record }
    } catch (err) {
      throw new BackendUnavailableError(forcedName, { [forcedName]: reason(err) }, { cause: err })
    }
  }
  const skipped: Record<string, string> = {}
  // cuda first where a device is visible (its activation then checks that the addon finds it)
  for (const name of cudaVisible() ? [BackendName.Cuda, ...BACKEND_ORDER] : BACKEND_ORDER) {
    try {
      const tfBackend = await activate(name, cudaVisible, native)
      const { note, record } = threadsOf(name, threads)
      const notes = [...note]
      if (Object.keys(skipped).length)
        notes.push(
          `skipped ${Object.entries(skipped)
            .map(([n, r]) => `${n}: ${r}`)
            .join('; ')}`,
        )
      log(`triad: tensor backend ${name}${notes.length ? ` (${notes.join(', ')})` : ''}`)
      return { name, tfBackend, forced: false, skipped, ...record }
    } catch (err) {
      skipped[name] = reason(err)
    }
  }
  throw new BackendUnavailableError('any', skipped)
}
