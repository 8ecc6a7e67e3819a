import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import * as tf from '@tensorflow/tfjs'
import { type CudaAddon, loadCudaAddon } from '../../gpu/cuda-addon.ts'
import {
  CUDA_BACKEND,
  cudaDispatchStats,
  DEFAULT_CUDA_DISPATCH,
  registerCudaBackend,
  setCudaDispatch,
} from '../../gpu/cuda-backend.ts'
import { BackendUnavailableError, chooseBackend } from '../../gpu/index.ts'
import { loadNativeAddon, type NativeAddon } from '../../gpu/native-addon.ts'

/**
 * The `cuda` backend. Where no CUDA device is visible (this project's CI and dev machines carry
 * nvcc but no GPU), what can be checked is: the build records its CUDA outcome, forcing `cuda`
 * fails with the reason, the routing of products between device and CPU (with a stand-in for the
 * CUDA addon), and the SGEMM kernel's source run on a CPU emulation of CUDA's threads. The
 * numerics on a real device (cuda against native) need one: they are skipped with 'no CUDA
 * device' where there is none, an honest skip (nothing about the device was checked), and fail
 * instead of skipping when `TRIAD_REQUIRE_CUDA` is set (`npm run check:cuda`, on a GPU machine).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const native = loadNativeAddon()
const cuda = loadCudaAddon()
const requireDevice = !!process.env.TRIAD_REQUIRE_CUDA
/** The device tests' skip: a device is present, or one is required (then they fail with the reason). */
const deviceSkip = cuda.addon || requireDevice ? false : 'no CUDA device'

function nativeAddon(): NativeAddon {
  assert.ok(native.addon, `the native engine is not built: ${native.reason}`)
  return native.addon
}

function deviceAddon(): CudaAddon {
  assert.ok(cuda.addon, `no usable CUDA device: ${cuda.reason}`)
  return cuda.addon
}

/** Uniform values in [-0.5, 0.5), from a seed. */
function random(n: number, seed: number): Float32Array {
  const out = new Float32Array(n)
  let s = seed >>> 0 || 1
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    out[i] = s / 4294967296 - 0.5
  }
  return out
}

/** The largest |x - y| / max(1, |y|). */
function worstRelative(x: Float32Array, y: Float32Array): number {
  assert.equal(x.length, y.length)
  let worst = 0
  for (let i = 0; i < x.length; i++) {
    const e = Math.abs(x[i]! - y[i]!) / Math.max(1, Math.abs(y[i]!))
    if (!(e <= worst)) worst = e
  }
  return worst
}

interface Case {
  batch: number
  m: number
  n: number
  k: number
  transA: boolean
  transB: boolean
  /** Whether A, B is one matrix broadcast over the batch (stride 0). */
  broadcastA?: boolean
  broadcastB?: boolean
}

/** Runs one case on both addons; @returns the worst relative difference. */
function compare(device: CudaAddon, cpu: NativeAddon, c: Case, seed: number): number {
  const sa = c.broadcastA ? 0 : c.m * c.k
  const sb = c.broadcastB ? 0 : c.k * c.n
  const a = random((c.batch - 1) * sa + c.m * c.k, seed)
  const b = random((c.batch - 1) * sb + c.k * c.n, seed + 1)
  const want = new Float32Array(c.batch * c.m * c.n)
  const got = new Float32Array(c.batch * c.m * c.n).fill(Number.NaN)
  const args = [c.batch, c.m, c.n, c.k, c.transA, c.transB, sa, sb] as const
  cpu.matmul(a, b, want, ...args)
  device.matmul(a, b, got, ...args)
  return worstRelative(got, want)
}

describe('gpu/cuda-backend', () => {
  it('cuda - the native build records the CUDA build: ok with its targets, or the reason it was not built', () => {
    const status = JSON.parse(readFileSync(path.join(root, 'gpu', 'native', 'build', 'status.json'), 'utf8'))
    assert.equal(
      typeof status.cuda?.ok,
      'boolean',
      `status.json has no cuda entry: ${JSON.stringify(status)}`,
    )
    if (status.cuda.ok) {
      assert.match(status.cuda.archs, /sm_\d+/)
      assert.ok(existsSync(path.join(root, 'gpu', 'native', 'cuda', 'build', 'triad_cuda.node')))
    } else assert.ok(status.cuda.reason.length > 0)
    // where nvcc runs (it does on this project's machines) a build that was not skipped must succeed
    const nvcc = spawnSync('nvcc', ['--version'])
    if (nvcc.status === 0 && !/skipped/.test(status.cuda.reason ?? ''))
      assert.equal(status.cuda.ok, true, `nvcc is present but the CUDA build failed: ${status.cuda.reason}`)
  })

  it('cuda - forcing cuda where there is no device fails with BackendUnavailableError and the reason', {
    skip: cuda.addon ? 'a CUDA device is present' : false,
  }, async () => {
    assert.ok(cuda.reason)
    await assert.rejects(chooseBackend({ backend: 'cuda', env: {}, log: () => {} }), (err: unknown) => {
      assert.ok(err instanceof BackendUnavailableError)
      assert.equal(err.backend, 'cuda')
      assert.equal(err.attempts.cuda, cuda.reason!.slice(0, 200))
      assert.match(
        err.message,
        /backend 'cuda' is unavailable \(cuda: (no CUDA driver|no CUDA device|CUDA kernels not built)/,
      )
      return true
    })
    await chooseBackend({ backend: 'native', log: () => {} })
  })

  it('cuda - unforced, cuda is tried first only where a device is visible; a failed one is skipped with its reason', {
    skip: cuda.addon ? 'a CUDA device is present' : false,
  }, async () => {
    const hidden = await chooseBackend({ env: {}, log: () => {}, cudaVisible: () => false })
    assert.equal(hidden.name, 'native')
    assert.deepEqual(hidden.skipped, {})
    const lines: string[] = []
    const visible = await chooseBackend({ env: {}, log: (l) => lines.push(l), cudaVisible: () => true })
    assert.equal(visible.name, 'native')
    assert.deepEqual(Object.keys(visible.skipped), ['cuda'])
    assert.equal(visible.skipped.cuda, cuda.reason!.slice(0, 200))
    assert.match(lines[0]!, /tensor backend native \(.*skipped cuda: /)
  })

  it('cuda - the backend routes BatchMatMul through the addon: large products to the device, small ones to the CPU', async () => {
    const cpu = nativeAddon()
    // a stand-in for the CUDA addon: records each product and computes it with the CPU engine
    const calls: number[][] = []
    const standIn: CudaAddon = {
      init: () => ({
        ok: true,
        reason: '',
        device: 'stand-in',
        computeCapability: '0.0',
        multiprocessors: 0,
        memoryBytes: 0,
        driverVersion: 0,
        runtimeVersion: 0,
        archs: '',
      }),
      matmul: (a, b, c, batch, m, n, k, ta, tb, sa, sb) => {
        calls.push([batch, m, n, k, Number(ta), Number(tb), sa, sb])
        cpu.matmul(a, b, c, batch, m, n, k, ta, tb, sa, sb)
      },
      stats: () => ({ gemms: 0, flops: 0, bytesToDevice: 0, bytesFromDevice: 0, scratchBytes: 0 }),
      release: () => {},
    }
    registerCudaBackend(cpu, standIn, 'cuda-stand-in')
    await chooseBackend({ backend: 'native', log: () => {} })
    const a = tf.randomNormal([3, 256, 256], 0, 1, 'float32', 1)
    const b = tf.randomNormal([256, 256], 0, 1, 'float32', 2)
    const small = tf.randomNormal([4, 8], 0, 1, 'float32', 3)
    const want = tf.matMul(a, b, false, true).dataSync()
    const wantSmall = tf.matMul(small, small, true, false).dataSync()
    assert.ok(await tf.setBackend('cuda-stand-in'))
    try {
      const before = cudaDispatchStats()
      const got = tf.matMul(a, b, false, true)
      const gotSmall = tf.matMul(small, small, true, false)
      // batch 3 of 256^3 (2^25 FLOPs each, 43 FLOPs per byte): device; 8x4 by 4x8: CPU
      assert.deepEqual(calls, [[3, 256, 256, 256, 0, 1, 256 * 256, 0]])
      assert.deepEqual(Array.from(got.dataSync()), Array.from(want))
      assert.deepEqual(Array.from(gotSmall.dataSync()), Array.from(wantSmall))
      const after = cudaDispatchStats()
      assert.equal(after.gpu.gemms - before.gpu.gemms, 3)
      assert.equal(after.cpu.gemms - before.cpu.gemms, 1)
      // decoding through a weight (m = 1, 0.5 FLOP per byte) stays on the CPU however large
      const w = tf.randomNormal([4096, 4096], 0, 1, 'float32', 4)
      const x = tf.randomNormal([1, 4096], 0, 1, 'float32', 5)
      tf.matMul(x, w).dataSync()
      assert.equal(calls.length, 1)
      // with both thresholds at 0 every product goes to the device
      const previous = setCudaDispatch({ minFlops: 0, minFlopsPerByte: 0 })
      try {
        tf.matMul(small, small, true, false).dataSync()
        assert.deepEqual(calls[1], [1, 8, 8, 4, 1, 0, 0, 0])
      } finally {
        setCudaDispatch(previous)
      }
      assert.deepEqual(setCudaDispatch({}), DEFAULT_CUDA_DISPATCH)
      tf.dispose([got, gotSmall, w, x])
    } finally {
      await chooseBackend({ backend: 'native', log: () => {} })
      tf.dispose([a, b, small])
    }
  })

  it('cuda - the SGEMM kernel source, run on a CPU emulation of CUDA threads (no GPU), matches a reference', (t) => {
    const cxx = process.env.CXX || 'g++'
    if (spawnSync(cxx, ['--version']).status !== 0) return t.skip(`no host C++ compiler (${cxx})`)
    const dir = mkdtempSync(path.join(tmpdir(), 'triad-sgemm-emu-'))
    try {
      const exe = path.join(dir, 'sgemm-emulated')
      const src = path.join(root, 'gpu', 'native', 'cuda', 'emulate', 'sgemm-emulated.cc')
      const build = spawnSync(
        cxx,
        ['-std=c++20', '-O1', '-pthread', '-Wno-unknown-pragmas', '-o', exe, src],
        {
          encoding: 'utf8',
        },
      )
      assert.equal(build.status, 0, build.stderr)
      const run = spawnSync(exe, { encoding: 'utf8' })
      assert.equal(run.status, 0, run.stdout + run.stderr)
      assert.match(run.stdout, /^(\d+) of \1 cases match the reference$/m)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('cuda (device) - matmul on the device equals the native engine over shapes, transposes and batches (1e-4)', {
    skip: deviceSkip,
  }, () => {
    const device = deviceAddon()
    const cpu = nativeAddon()
    const shapes = [
      [1, 1, 1],
      [1, 896, 896],
      [16, 4864, 896],
      [64, 64, 64],
      [65, 63, 17],
      [130, 70, 3],
      [7, 9, 0],
      [257, 129, 1031],
      [1024, 1024, 1024],
    ]
    let seed = 1
    for (const [m, n, k] of shapes)
      for (let v = 0; v < 4; v++) {
        const c: Case = { batch: 1, m: m!, n: n!, k: k!, transA: !!(v & 1), transB: !!(v & 2) }
        seed += 2
        const e = compare(device, cpu, c, seed)
        assert.ok(e <= 1e-4, `${JSON.stringify(c)}: worst relative difference ${e}`)
      }
    const batched: Case[] = [
      { batch: 14, m: 16, n: 16, k: 64, transA: false, transB: true },
      { batch: 14, m: 16, n: 64, k: 16, transA: false, transB: false },
      { batch: 5, m: 33, n: 20, k: 19, transA: true, transB: false, broadcastB: true },
      { batch: 5, m: 33, n: 20, k: 19, transA: true, transB: true, broadcastA: true },
      // more matrices than a grid's z dimension holds (65535): launches are split
      { batch: 70000, m: 3, n: 2, k: 4, transA: false, transB: false },
      // more row tiles than a grid's y dimension holds (65535 x 64 rows)
      { batch: 1, m: 65535 * 64 + 100, n: 2, k: 3, transA: true, transB: false },
    ]
    for (const c of batched) {
      seed += 2
      const e = compare(device, cpu, c, seed)
      assert.ok(e <= 1e-4, `${JSON.stringify({ ...c })}: worst relative difference ${e}`)
    }
  })

  it('cuda (device) - tf.matMul on the cuda backend equals native, forward and gradients (1e-4)', {
    skip: deviceSkip,
  }, async (t) => {
    deviceAddon()
    const previous = setCudaDispatch({ minFlops: 0, minFlopsPerByte: 0 })
    try {
      const run = async (backend: string) => {
        await chooseBackend({ backend, log: () => {} })
        return tf.tidy(() => {
          const a = tf.randomNormal([2, 3, 40, 24], 0, 1, 'float32', 11)
          const b = tf.randomNormal([24, 56], 0, 1, 'float32', 12)
          const x = tf.randomNormal([17, 300], 0, 1, 'float32', 13)
          const w = tf.randomNormal([300, 120], 0, 1, 'float32', 14)
          const grads = tf.grads((xx: tf.Tensor, ww: tf.Tensor) => tf.sum(tf.square(tf.matMul(xx, ww))))([
            x,
            w,
          ])
          return [
            tf.matMul(a, b).dataSync(),
            tf.matMul(x, w, false, false).dataSync(),
            tf.matMul(w, x, true, true).dataSync(),
            ...grads.map((g) => g.dataSync()),
          ] as Float32Array[]
        })
      }
      const want = await run('native')
      const before = cudaDispatchStats().gpu.gemms
      const got = await run(CUDA_BACKEND)
      assert.ok(cudaDispatchStats().gpu.gemms > before, 'no product reached the device')
      for (let i = 0; i < want.length; i++) {
        const e = worstRelative(got[i]!, want[i]!)
        assert.ok(e <= 1e-4, `output ${i}: worst relative difference ${e}`)
      }
      const init = deviceAddon().init()
      t.diagnostic(
        `device: ${init.device} (sm ${init.computeCapability}, ${init.multiprocessors} SMs), driver ${init.driverVersion}, built for ${init.archs}`,
      )
    } finally {
      setCudaDispatch(previous)
      await chooseBackend({ backend: 'native', log: () => {} })
    }
  })

  it('cuda (device) - GFLOP/s of the device GEMM, copies included, against the native engine (a report, no bound)', {
    skip: deviceSkip,
  }, (t) => {
    const device = deviceAddon()
    const cpu = nativeAddon()
    for (const n of [1024, 2048, 4096]) {
      const a = random(n * n, 1)
      const b = random(n * n, 2)
      const c = new Float32Array(n * n)
      const time = (addon: { matmul: NativeAddon['matmul'] }, reps: number) => {
        addon.matmul(a, b, c, 1, n, n, n, false, false, 0, 0)
        let best = Number.POSITIVE_INFINITY
        for (let i = 0; i < reps; i++) {
          const s = performance.now()
          addon.matmul(a, b, c, 1, n, n, n, false, false, 0, 0)
          best = Math.min(best, performance.now() - s)
        }
        return (2 * n ** 3) / best / 1e6
      }
      const gpu = time(device, 3)
      const host = n <= 2048 ? time(cpu, 1) : Number.NaN
      t.diagnostic(
        `${n}^3: device ${gpu.toFixed(0)} GFLOP/s (copies included), native ${host.toFixed(0)} GFLOP/s`,
      )
    }
  })
})
