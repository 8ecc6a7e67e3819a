// Builds the native engine (`triad_native.node`) with node-gyp while `npm ci` installs triad.
// It never fails the install: on a failed build it writes the reason to build/status.json, and
// the backend choice then skips `native` with that reason and falls back to wasm. Nothing is
// downloaded: node-gyp builds against the Node headers npm is configured with (nodedir).
// Then, where nvcc is found, the CUDA engine (gpu/native/cuda/build-cuda.mjs, a separate addon):
// its outcome is status.json's `cuda` ({ok, reason, ...}) and it never affects the CPU engine's.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const statusFile = path.join(here, 'build', 'status.json')

function writeStatus(status, cuda) {
  mkdirSync(path.dirname(statusFile), { recursive: true })
  writeFileSync(statusFile, `${JSON.stringify({ ...status, cuda, at: new Date().toISOString() }, null, 2)}\n`)
}

/** Builds the CUDA engine where nvcc is found (gpu/native/cuda); never throws. @returns its status. */
async function buildCudaEngine(nodedir) {
  let cuda
  try {
    const { buildCuda } = await import('./cuda/build-cuda.mjs')
    cuda = buildCuda({ nodedir })
  } catch (err) {
    cuda = {
      ok: false,
      reason: `build script failed: ${String(err?.message ?? err)
        .split('\n')[0]
        .slice(0, 300)}`,
    }
  }
  if (cuda.ok)
    console.log(
      `triad: CUDA kernels ${cuda.cached ? 'unchanged, kept' : `built in ${cuda.seconds} s`} (${cuda.archs}, nvcc ${cuda.nvcc})`,
    )
  else console.log(`triad: CUDA kernels not built: ${cuda.reason}`)
  return cuda
}

function nodeGyp() {
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp))
    return process.env.npm_config_node_gyp
  try {
    return createRequire(import.meta.url).resolve('node-gyp/bin/node-gyp.js')
  } catch {}
  const bundled = path.join(
    path.dirname(process.execPath),
    '..',
    'lib',
    'node_modules',
    'npm',
    'node_modules',
    'node-gyp',
    'bin',
    'node-gyp.js',
  )
  return existsSync(bundled) ? bundled : undefined
}

if (process.env.TRIAD_NATIVE_SKIP_BUILD) {
  writeStatus(
    { ok: false, reason: 'build skipped (TRIAD_NATIVE_SKIP_BUILD is set)' },
    { ok: false, reason: 'build skipped (TRIAD_NATIVE_SKIP_BUILD is set)' },
  )
  console.log('triad: native engine build skipped (TRIAD_NATIVE_SKIP_BUILD)')
  process.exit(0)
}
const gyp = nodeGyp()
if (!gyp) {
  writeStatus(
    { ok: false, reason: 'node-gyp not found (npm ships it; is npm installed with Node?)' },
    { ok: false, reason: 'not built: the CPU engine it extends was not (node-gyp not found)' },
  )
  console.log('triad: native engine not built: node-gyp not found; tensors will run on wasm')
  process.exit(0)
}
const args = [gyp, 'rebuild', '--jobs', 'max']
// the headers of the running Node: npm's setting, else the install prefix when it carries them
const prefix = path.resolve(path.dirname(process.execPath), '..')
const nodedir =
  process.env.npm_config_nodedir ??
  (existsSync(path.join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined)
if (nodedir) args.push(`--nodedir=${nodedir}`)
console.log('triad: building the native engine (gpu/native) ...')
const started = Date.now()
const run = spawnSync(process.execPath, args, { cwd: here, encoding: 'utf8', maxBuffer: 64 << 20 })
const seconds = Number(((Date.now() - started) / 1000).toFixed(1))
if (run.status === 0) {
  console.log(`triad: native engine built in ${seconds} s`)
  writeStatus({ ok: true, seconds }, await buildCudaEngine(nodedir))
} else {
  const out = `${run.stdout ?? ''}\n${run.stderr ?? ''}`
  const line =
    out
      .split('\n')
      .find((l) => /error/i.test(l) && !/^gyp info/.test(l))
      ?.trim() ??
    run.error?.message ??
    `node-gyp exited with ${run.status}`
  writeStatus(
    { ok: false, reason: `build failed: ${line.slice(0, 300)}`, seconds },
    await buildCudaEngine(nodedir),
  )
  writeFileSync(path.join(here, 'build', 'build.log'), out)
  console.log(
    `triad: native engine not built (${line.slice(0, 200)}); see gpu/native/build/build.log; tensors will run on wasm`,
  )
}
