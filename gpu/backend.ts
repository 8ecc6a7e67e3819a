import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import * as tf from '@tensorflow/tfjs'
import { BackendUnavailableError, UnknownBackendError } from './errors.ts'
import { loadNativeAddon } from './native-addon.ts'
import { NATIVE_BACKEND, registerNativeBackend } from './native-backend.ts'

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
}

/** Options of `chooseBackend`. */
export interface ChooseBackendOptions {
  /** Force this backend (a recipe or CLI setting); wins over the environment variable. */
  backend?: BackendName | string
  /** Environment to read `TRIAD_BACKEND` from; default `process.env`. */
  env?: Record<string, string | undefined>
  /** Where the choice is printed; default one line on stderr. Pass `() => {}` to silence. */
  log?: (line: string) => void
  /** Whether a CUDA device is visible; default: `/dev/nvidiactl` exists. */
  cudaVisible?: () => boolean
}

const require = createRequire(import.meta.url)

/** Directory holding the wasm backend's `.wasm` files (Node needs it spelled out). */
export function wasmDistDir(): string {
  const pkg = require.resolve('@tensorflow/tfjs-backend-wasm/package.json')
  return `${path.join(path.dirname(pkg), 'dist')}${path.sep}`
}

let wasmPathsSet = false

/** Loads and activates one backend; throws with the reason when it cannot. */
async function activate(name: BackendName, cudaVisible: () => boolean): Promise<string> {
  switch (name) {
    case BackendName.Native: {
      const { addon, reason } = loadNativeAddon()
      if (!addon) throw new Error(reason)
      registerNativeBackend(addon)
      if (!(await tf.setBackend(NATIVE_BACKEND))) throw new Error('native backend failed to initialise')
      return NATIVE_BACKEND
    }
    case BackendName.TfjsNodeGpu:
      if (!cudaVisible()) throw new Error('no CUDA device visible')
      await import('@tensorflow/tfjs-node-gpu' as string)
      if (!(await tf.setBackend('tensorflow'))) throw new Error('tensorflow backend failed to initialise')
      return 'tensorflow'
    case BackendName.TfjsNode:
      await import('@tensorflow/tfjs-node' as string)
      if (!(await tf.setBackend('tensorflow'))) throw new Error('tensorflow backend failed to initialise')
      return 'tensorflow'
    case BackendName.Wasm: {
      const wasm = await import('@tensorflow/tfjs-backend-wasm')
      if (!wasmPathsSet) {
        wasm.setWasmPaths(wasmDistDir())
        wasmPathsSet = true
      }
      if (!(await tf.setBackend('wasm'))) throw new Error('wasm backend failed to initialise')
      return 'wasm'
    }
    case BackendName.Cpu:
      if (!(await tf.setBackend('cpu')))
        throw new Error('cpu backend failed to initialise')
        // Silence its one-time "install tfjs-node" banner: the choice is printed by us.
      ;(tf.backend() as unknown as { firstUse?: boolean }).firstUse = false
      return 'cpu'
  }
}

function isBackendName(name: string): name is BackendName {
  return (BACKEND_ORDER as readonly string[]).includes(name)
}

function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err)
  return msg.split('\n')[0]!.slice(0, 200)
}

/**
 * Chooses, activates, prints and returns the tensor backend.
 *
 * A forced backend (the `backend` option, else `TRIAD_BACKEND`) is used or fails loudly; otherwise
 * the first of `BACKEND_ORDER` that loads wins. Calling it again re-activates the asked backend
 * (cheap once loaded).
 *
 * @throws UnknownBackendError when the forced name is not a `BackendName`.
 * @throws BackendUnavailableError when the forced backend (or, unforced, every backend) fails.
 */
export async function chooseBackend(options: ChooseBackendOptions = {}): Promise<BackendChoice> {
  const env = options.env ?? process.env
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
  const cudaVisible = options.cudaVisible ?? (() => existsSync('/dev/nvidiactl'))
  const forcedName = options.backend ?? (env[BACKEND_ENV] || undefined)
  if (forcedName !== undefined) {
    if (!isBackendName(forcedName)) throw new UnknownBackendError(forcedName, BACKEND_ORDER)
    try {
      const tfBackend = await activate(forcedName, cudaVisible)
      log(`triad: tensor backend ${forcedName} (forced)`)
      return { name: forcedName, tfBackend, forced: true, skipped: {} }
    } catch (err) {
      throw new BackendUnavailableError(forcedName, { [forcedName]: reason(err) }, { cause: err })
    }
  }
  const skipped: Record<string, string> = {}
  for (const name of BACKEND_ORDER) {
    try {
      const tfBackend = await activate(name, cudaVisible)
      const why = Object.keys(skipped).length
        ? ` (skipped ${Object.entries(skipped)
            .map(([n, r]) => `${n}: ${r}`)
            .join('; ')})`
        : ''
      log(`triad: tensor backend ${name}${why}`)
      return { name, tfBackend, forced: false, skipped }
    } catch (err) {
      skipped[name] = reason(err)
    }
  }
  throw new BackendUnavailableError('any', skipped)
}
