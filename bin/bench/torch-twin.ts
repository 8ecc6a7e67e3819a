/**
 * The PyTorch twin of the benchmarks (`bin/bench/torch-twin.py`): the same model, batch and
 * optimizer run by PyTorch in a child process of the same command, so that each benchmark can
 * print `speedupOverTorch = torch time / triad time` (above 1: triad is faster). PyTorch is never
 * a dependency: it is looked for (`--torch <python>`, else `.venv-bench/bin/python`, else
 * `python3`), and without it a benchmark prints its own figures and `torch: null` with the reason.
 *
 * Also the benchmarks' shared `--backend` / `--threads` handling (`benchBackend`).
 */
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  type BackendChoice,
  BackendName,
  chooseBackend,
  type FullTransformerConfig,
} from '../../gpu/index.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
/** The twin script. */
export const TWIN_SCRIPT = path.join(here, 'torch-twin.py')
/** The benchmarks' own virtual environment (git-ignored; see docs in `torch-twin.py`). */
export const BENCH_VENV_PYTHON = path.resolve(here, '..', '..', '.venv-bench', 'bin', 'python')

/** A Python that imports torch, or why there is none. */
export type TorchPython = { python: string; version: string } | { python?: undefined; reason: string }

/** `python -c 'import torch'`: the torch version, or the reason it failed (one line). */
function torchVersion(python: string): { version: string } | { reason: string } {
  const r = spawnSync(python, ['-c', 'import torch; print(torch.__version__)'], {
    encoding: 'utf8',
    timeout: 120_000,
  })
  if (r.error) return { reason: `${python}: ${r.error.message}` }
  if (r.status !== 0) {
    const last = r.stderr.trim().split('\n').at(-1) ?? `exit ${r.status}`
    return { reason: `${python} cannot import torch (${last})` }
  }
  return { version: r.stdout.trim() }
}

/**
 * Finds a Python with torch: `option` when given (and only it), else `.venv-bench/bin/python` at
 * the repository root when present, else `python3` when it imports torch.
 * @returns the interpreter and torch's version, or the reason none was found.
 */
export function findTorchPython(option?: string): TorchPython {
  const candidates = option
    ? [option]
    : [...(existsSync(BENCH_VENV_PYTHON) ? [BENCH_VENV_PYTHON] : []), 'python3']
  const reasons: string[] = []
  for (const python of candidates) {
    const v = torchVersion(python)
    if ('version' in v) return { python, version: v.version }
    reasons.push(v.reason)
  }
  return {
    reason: `${reasons.join('; ')}${option ? '' : ' (install it for benchmarks with `python3 -m venv --system-site-packages .venv-bench && .venv-bench/bin/pip install torch`, or pass --torch <python>)'}`,
  }
}

/** One task of the twin (see `torch-twin.py` for each kind's fields). */
export type TwinTask = { kind: 'generate' | 'lora' | 'sft' | 'grpo'; reps: number } & Record<string, unknown>

/** One task's result: median wall and CPU milliseconds, and the kind's own figures. */
export type TwinResult = { kind: string; wallMs: number; cpuMs: number; tokensPerSecond?: number } & Record<
  string,
  unknown
>

/** What the twin printed: torch's version, its threads, its peak resident memory (bytes), results in task order. */
export interface TwinOutput {
  torch: string
  threads: number
  gqaKernel: boolean
  peakRssBytes: number
  results: TwinResult[]
}

/**
 * Runs the twin on `tasks` with `threads` torch threads and triad's full model config; resolves
 * with its output, or rejects with its last stderr line when it fails.
 */
export function runTorchTwin(
  python: string,
  config: FullTransformerConfig,
  threads: number,
  tasks: TwinTask[],
): Promise<TwinOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [TWIN_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
    })
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString()
    })
    child.on('error', reject)
    child.on('close', (code) => {
      if (code !== 0) {
        const last = err.trim().split('\n').at(-1) ?? ''
        reject(new Error(`torch twin exited ${code}: ${last}`))
        return
      }
      try {
        resolve(JSON.parse(out) as TwinOutput)
      } catch (e) {
        reject(new Error(`torch twin printed no JSON: ${(e as Error).message}`))
      }
    })
    child.stdin.end(JSON.stringify({ threads, seed: 0, config, tasks }))
  })
}

/**
 * The twin's figures for a benchmark: finds torch (`option`), runs `tasks` and logs progress on
 * stderr. @returns the output, or `{reason}` when torch is absent or the twin failed.
 */
export async function torchTwin(
  option: string | undefined,
  config: FullTransformerConfig,
  threads: number,
  tasks: TwinTask[],
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<({ python: string } & TwinOutput) | { reason: string }> {
  const found = findTorchPython(option)
  if (found.python === undefined) {
    log(`torch twin skipped: ${found.reason}`)
    return { reason: found.reason }
  }
  log(`torch twin: ${found.python} (torch ${found.version}, ${threads} threads)`)
  try {
    return { python: found.python, ...(await runTorchTwin(found.python, config, threads, tasks)) }
  } catch (err) {
    log(`torch twin failed: ${(err as Error).message}`)
    return { reason: (err as Error).message }
  }
}

/** `torch / triad` of two durations in ms, 3 digits (above 1: triad is faster); null without torch. */
export function speedupOverTorch(torchMs: number | undefined, triadMs: number | undefined): number | null {
  if (torchMs === undefined || triadMs === undefined || !(triadMs > 0)) return null
  return Number((torchMs / triadMs).toFixed(3))
}

/** The thread counts of a benchmark: asked for, and what the backend runs with (the twin's too). */
export interface BenchThreads {
  /** `--threads`, else every core (`os.availableParallelism()`). */
  requested: number
  /** Threads the backend's kernels use. */
  backend: number
  /** Why `backend` differs from `requested`, when it does. */
  note?: string
}

/**
 * Chooses the tensor backend of a benchmark (`backend` forces one, else `TRIAD_BACKEND`, else the
 * best available) and its thread count (`threads`, default every core), which `chooseBackend`
 * sets on the native engine's pool; the wasm backend runs one thread under Node (its threaded
 * build needs a browser's cross-origin isolation) and the pure-JS cpu backend one; tfjs-node
 * sizes its own pool. The twin is given the backend's count.
 * @throws ThreadCountError (from `chooseBackend`) for more threads than cores.
 */
export async function benchBackend(options: {
  backend?: string
  threads?: number
}): Promise<{ choice: BackendChoice; threads: BenchThreads }> {
  const choice = await chooseBackend({ backend: options.backend, threads: options.threads, log: () => {} })
  const requested = options.threads ?? os.availableParallelism()
  process.stderr.write(`triad: tensor backend ${choice.name}${choice.forced ? ' (forced)' : ''}\n`)
  if (choice.threads !== undefined) return { choice, threads: { requested, backend: choice.threads } }
  if (choice.name === BackendName.Wasm || choice.name === BackendName.Cpu)
    return {
      choice,
      threads: {
        requested,
        backend: 1,
        ...(requested === 1
          ? {}
          : { note: `the ${choice.name} backend runs one thread under Node; torch is given the same` }),
      },
    }
  return {
    choice,
    threads: { requested, backend: requested, note: `${choice.name} sizes its own thread pool` },
  }
}
