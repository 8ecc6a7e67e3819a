// Builds the CUDA engine (`gpu/native/cuda/build/triad_cuda.node`) with nvcc, for
// `gpu/native/build.mjs`. Optional and separate from the CPU engine: it is tried only where nvcc
// is found, it never throws, and its outcome is returned for status.json (`cuda: {ok, reason}`).
// No node-gyp: an N-API addon is a shared library against node_api.h alone (the ABI is stable),
// so nvcc compiles and links it in one command. libcudart is linked statically, so the addon
// needs no CUDA toolkit where it runs, only the driver (libcuda.so.1), which it opens at run time.
// A build whose inputs (sources, flags, nvcc version) are unchanged is kept, not repeated.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
/** Where the CUDA addon is built (outside `gpu/native/build`, which node-gyp's rebuild deletes). */
export const CUDA_BUILD_DIR = path.join(here, 'build')
export const CUDA_ADDON_FILE = path.join(CUDA_BUILD_DIR, 'triad_cuda.node')

/**
 * Default targets: native code for Ampere (sm_80, also run by sm_86/sm_89) and Hopper (sm_90:
 * H100/H200), and PTX for compute_75 that the driver compiles for any other GPU (Blackwell
 * included) on first use. `TRIAD_CUDA_ARCH` replaces the list (space-separated `sm_XY` and
 * `compute_XY`).
 */
export const DEFAULT_CUDA_ARCHS = ['sm_80', 'sm_90', 'compute_75']

/** nvcc from CUDA_HOME/CUDA_PATH, else PATH, else /usr/local/cuda/bin; undefined when none. */
export function findNvcc(env = process.env) {
  const candidates = []
  for (const home of [env.CUDA_HOME, env.CUDA_PATH]) if (home) candidates.push(path.join(home, 'bin', 'nvcc'))
  for (const dir of (env.PATH ?? '').split(path.delimiter)) if (dir) candidates.push(path.join(dir, 'nvcc'))
  candidates.push('/usr/local/cuda/bin/nvcc')
  return candidates.find((p) => existsSync(p))
}

/** The directory holding node_api.h: `<nodedir>/include/node`, else node-gyp's header cache. */
function nodeInclude(nodedir) {
  const dirs = []
  if (nodedir) dirs.push(path.join(nodedir, 'include', 'node'))
  dirs.push(path.join(path.dirname(process.execPath), '..', 'include', 'node'))
  const version = process.versions.node
  for (const cache of [path.join(homedir(), '.cache', 'node-gyp'), path.join(homedir(), '.node-gyp')])
    dirs.push(path.join(cache, version, 'include', 'node'))
  return dirs.find((d) => existsSync(path.join(d, 'node_api.h')))
}

/** nvcc's -gencode flags for `sm_XY` (native code) and `compute_XY` (PTX). @throws on another word. */
function gencode(archs) {
  return archs.flatMap((a) => {
    const m = /^(sm|compute)_(\d+[a-z]?)$/.exec(a)
    if (!m) throw new Error(`TRIAD_CUDA_ARCH: '${a}' is neither sm_XY nor compute_XY`)
    return ['-gencode', `arch=compute_${m[2]},code=${a}`]
  })
}

function firstError(out) {
  return (
    out
      .split('\n')
      .find((l) => /error/i.test(l))
      ?.trim() ?? ''
  )
}

/**
 * Builds the CUDA addon when nvcc is present. Never throws.
 * @param {{nodedir?: string, env?: Record<string, string | undefined>}} options
 * @returns {{ok: boolean, reason?: string, seconds?: number, cached?: boolean, nvcc?: string, archs?: string, addon?: string}}
 */
export function buildCuda(options = {}) {
  const env = options.env ?? process.env
  try {
    if (env.TRIAD_CUDA_SKIP_BUILD)
      return { ok: false, reason: 'build skipped (TRIAD_CUDA_SKIP_BUILD is set)' }
    const nvcc = findNvcc(env)
    if (!nvcc)
      return {
        ok: false,
        reason: 'nvcc not found (CUDA_HOME, PATH, /usr/local/cuda/bin): CUDA kernels not built',
      }
    const include = nodeInclude(options.nodedir)
    if (!include)
      return { ok: false, reason: 'node_api.h not found (the Node headers): CUDA kernels not built' }
    const version = spawnSync(nvcc, ['--version'], { encoding: 'utf8' })
    const release = /release ([\d.]+)/.exec(version.stdout ?? '')?.[1]
    if (version.status !== 0 || !release)
      return {
        ok: false,
        reason: `${nvcc} --version failed: ${(version.stderr || version.error?.message || '').trim().slice(0, 200)}`,
      }
    const archs = env.TRIAD_CUDA_ARCH ? env.TRIAD_CUDA_ARCH.trim().split(/\s+/) : DEFAULT_CUDA_ARCHS
    const sources = [
      ...readdirSync(here)
        .filter((f) => f.endsWith('.cu') || f.endsWith('.cc'))
        .sort()
        .map((f) => path.join(here, f)),
      path.join(here, '..', 'src', 'napi-args.cc'),
    ]
    const headers = [
      ...readdirSync(here)
        .filter((f) => f.endsWith('.h') || f.endsWith('.cuh'))
        .sort()
        .map((f) => path.join(here, f)),
      path.join(here, '..', 'src', 'napi-args.h'),
    ]
    const tmp = `${CUDA_ADDON_FILE}.${process.pid}.tmp`
    const args = [
      '-O3',
      '-std=c++17',
      '--shared',
      '-Xcompiler',
      '-fPIC,-fvisibility=hidden,-fexceptions',
      '-cudart',
      'static',
      '-Xlinker',
      '--exclude-libs,ALL',
      '--threads',
      '0',
      ...gencode(archs),
      `-DTRIAD_CUDA_ARCHS="${archs.join(' ')}"`,
      '-DNODE_GYP_MODULE_NAME=triad_cuda',
      `-I${include}`,
      ...sources,
      '-o',
      tmp,
      '-ldl',
      '-lpthread',
    ]
    const hash = createHash('sha256')
    hash.update(`${version.stdout}\n${args.join(' ').replace(tmp, '')}\n`)
    for (const f of [...sources, ...headers]) hash.update(`${f}\n`).update(readFileSync(f))
    const stamp = hash.digest('hex')
    const stampFile = path.join(CUDA_BUILD_DIR, 'stamp.txt')
    const base = {
      nvcc: release,
      archs: archs.join(' '),
      addon: path.relative(path.join(here, '..'), CUDA_ADDON_FILE),
    }
    if (
      !env.TRIAD_CUDA_REBUILD &&
      existsSync(CUDA_ADDON_FILE) &&
      existsSync(stampFile) &&
      readFileSync(stampFile, 'utf8').trim() === stamp
    )
      return { ok: true, cached: true, seconds: 0, ...base }
    mkdirSync(CUDA_BUILD_DIR, { recursive: true })
    const started = Date.now()
    const run = spawnSync(nvcc, args, { cwd: here, encoding: 'utf8', maxBuffer: 64 << 20, timeout: 900_000 })
    const seconds = Number(((Date.now() - started) / 1000).toFixed(1))
    const out = `${nvcc} ${args.join(' ')}\n${run.stdout ?? ''}\n${run.stderr ?? ''}`
    writeFileSync(path.join(CUDA_BUILD_DIR, 'build.log'), out)
    if (run.status !== 0) {
      rmSync(tmp, { force: true })
      const line =
        firstError(`${run.stdout ?? ''}\n${run.stderr ?? ''}`) ||
        run.error?.message ||
        `nvcc exited with ${run.status ?? run.signal}`
      return { ok: false, reason: `build failed: ${line.slice(0, 300)}`, seconds, ...base }
    }
    renameSync(tmp, CUDA_ADDON_FILE) // a process loading the addon never sees half a file
    writeFileSync(stampFile, `${stamp}\n`)
    return { ok: true, seconds, ...base }
  } catch (err) {
    return {
      ok: false,
      reason: `build failed: ${String(err?.message ?? err)
        .split('\n')[0]
        .slice(0, 300)}`,
    }
  }
}
