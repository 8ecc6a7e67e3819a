// The CUDA engine's host side: finding a device (with a reason when there is none) and batched
// SGEMM on host memory through the tiled kernel of sgemm-kernel.cuh.
//
// Operands are copied host -> device, multiplied, and the product copied back on every call:
// simple and correct, and worth it only for products with many FLOPs per byte moved (the
// TypeScript side sends smaller ones to the CPU GEMM). Keeping weights resident on the device
// (keyed by host pointer, size and a generation bumped by every writer) is the next step; it
// needs every in-place writer of a tensor (native AdamW, for one) to bump that generation.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda-gemm.h"
#include "sgemm-kernel.cuh"

#ifndef TRIAD_CUDA_ARCHS
#define TRIAD_CUDA_ARCHS ""
#endif

namespace triad {
namespace cuda {

namespace {

std::string describe(cudaError_t e) {
  return std::to_string(static_cast<int>(e)) + " (" + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + " returned " + describe(e));
}

/** A device buffer grown geometrically and kept for the next product. */
struct Scratch {
  float* ptr = nullptr;
  size_t floats = 0;
  float* get(size_t need) {
    if (need <= floats) return ptr;
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    floats = 0;
    const size_t grow = std::max(need, need + need / 4);
    check(cudaMalloc(reinterpret_cast<void**>(&ptr), grow * sizeof(float)),
          ("cudaMalloc of " + std::to_string(grow * sizeof(float)) + " bytes").c_str());
    floats = grow;
    return ptr;
  }
  void release() {
    if (ptr) cudaFree(ptr);
    ptr = nullptr;
    floats = 0;
  }
};

std::mutex gemm_mutex;
Scratch scratch_a, scratch_b, scratch_c;
CudaStats stats;

/** Launches the kernel on device operands, in grids within CUDA's 65535-block y/z limit. */
void launch(const SgemmParams& base, int64_t batch, bool ta, bool tb) {
  plan_launches(base, batch, ta, 65535, [&](const SgemmParams& p, long long gx, long long gy, long long gz) {
    const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz));
    if (ta && tb)
      sgemm_tiled<true, true><<<grid, THREADS>>>(p);
    else if (ta)
      sgemm_tiled<true, false><<<grid, THREADS>>>(p);
    else if (tb)
      sgemm_tiled<false, true><<<grid, THREADS>>>(p);
    else
      sgemm_tiled<false, false><<<grid, THREADS>>>(p);
    check(cudaGetLastError(), "sgemm_tiled launch");
  });
}

void gemm_locked(int64_t batch, const float* a, int64_t stride_a, const float* b, int64_t stride_b, float* c,
                 int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
    throw std::runtime_error("CUDA gemm: a dimension exceeds 2^31 - 1");
  const size_t na = static_cast<size_t>((batch - 1) * stride_a + m * k);
  const size_t nb = static_cast<size_t>((batch - 1) * stride_b + k * n);
  const size_t nc = static_cast<size_t>(batch * m * n);
  float* da = scratch_a.get(std::max<size_t>(na, 1));
  float* db = scratch_b.get(std::max<size_t>(nb, 1));
  float* dc = scratch_c.get(nc);
  check(cudaMemcpy(da, a, na * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy A to device");
  check(cudaMemcpy(db, b, nb * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy B to device");
  SgemmParams p{};
  p.a = da;
  p.b = db;
  p.c = dc;
  p.m = static_cast<int>(m);
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.lda = ta ? m : k;
  p.ldb = tb ? k : n;
  p.ldc = n;
  p.stride_a = stride_a;
  p.stride_b = stride_b;
  p.stride_c = m * n;
  launch(p, batch, ta, tb);
  check(cudaMemcpy(c, dc, nc * sizeof(float), cudaMemcpyDeviceToHost), "sgemm_tiled run / cudaMemcpy C to host");
  stats.gemms += batch;
  stats.flops += 2.0 * static_cast<double>(batch) * m * n * k;
  stats.bytes_to_device += static_cast<int64_t>((na + nb) * sizeof(float));
  stats.bytes_from_device += static_cast<int64_t>(nc * sizeof(float));
  stats.scratch_bytes = static_cast<int64_t>((scratch_a.floats + scratch_b.floats + scratch_c.floats) * sizeof(float));
}

/** Runs a 37 x 29 x 41 product in all four transposes (batch 2, B broadcast) against the host. */
std::string self_test() {
  const int64_t m = 37, n = 29, k = 41, batch = 2;
  std::vector<float> a(batch * m * k), b(k * n), c(batch * m * n), ref(batch * m * n);
  uint32_t s = 12345;
  auto rnd = [&] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(s >> 8) / 16777216.f - 0.5f;
  };
  for (float& x : a) x = rnd();
  for (float& x : b) x = rnd();
  for (int variant = 0; variant < 4; variant++) {
    const bool ta = variant & 1, tb = variant & 2;
    for (int64_t z = 0; z < batch; z++)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = 0;
          for (int64_t p = 0; p < k; p++)
            acc += static_cast<double>(ta ? a[z * m * k + p * m + i] : a[z * m * k + i * k + p]) *
                   (tb ? b[j * k + p] : b[p * n + j]);
          ref[z * m * n + i * n + j] = static_cast<float>(acc);
        }
    gemm_locked(batch, a.data(), m * k, b.data(), 0, c.data(), m, n, k, ta, tb);
    for (size_t i = 0; i < c.size(); i++)
      if (!(std::fabs(c[i] - ref[i]) <= 1e-4f))
        return "self-test product (transA " + std::to_string(ta) + ", transB " + std::to_string(tb) +
               ") differs from the host's at element " + std::to_string(i) + ": " + std::to_string(c[i]) +
               " against " + std::to_string(ref[i]);
  }
  return "";
}

CudaInit discover() {
  CudaInit r;
  // the driver library first, for a clearer reason than the runtime's on a machine without one
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) {
    const char* why = dlerror();
    r.reason = std::string("no CUDA driver: libcuda.so.1 cannot be loaded (") + (why ? why : "unknown") +
               "); is the NVIDIA driver installed?";
    return r;
  }
  cudaRuntimeGetVersion(&r.runtime_version);
  cudaDriverGetVersion(&r.driver_version);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    r.reason = "no CUDA device: cudaGetDeviceCount returned " + describe(e) + "; driver supports CUDA " +
               std::to_string(r.driver_version / 1000) + "." + std::to_string(r.driver_version % 1000 / 10) +
               ", the kernels were built for " + std::to_string(r.runtime_version / 1000) + "." +
               std::to_string(r.runtime_version % 1000 / 10);
    return r;
  }
  if (count == 0) {
    r.reason = "no CUDA device: cudaGetDeviceCount found 0 devices";
    return r;
  }
  cudaDeviceProp prop{};
  cudaError_t pe = cudaSetDevice(0);
  if (pe == cudaSuccess) pe = cudaGetDeviceProperties(&prop, 0);
  if (pe != cudaSuccess) {
    r.reason = "CUDA device 0 unusable: cudaSetDevice/cudaGetDeviceProperties returned " + describe(pe);
    return r;
  }
  r.device = prop.name;
  r.major = prop.major;
  r.minor = prop.minor;
  r.multiprocessors = prop.multiProcessorCount;
  r.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  try {
    const std::string bad = self_test();
    const int64_t held = stats.scratch_bytes;
    stats = CudaStats{};  // the counters report the caller's products, not the self-test's
    stats.scratch_bytes = held;
    if (!bad.empty()) {
      r.reason = "CUDA device " + r.device + ": " + bad;
      return r;
    }
  } catch (const std::exception& ex) {
    r.reason = "CUDA device " + r.device + " (sm_" + std::to_string(r.major) + std::to_string(r.minor) +
               ", kernels built for " + TRIAD_CUDA_ARCHS + "): self-test failed: " + ex.what();
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace

const CudaInit& cuda_init() {
  static const CudaInit init = [] {
    std::lock_guard<std::mutex> lock(gemm_mutex);
    return discover();
  }();
  return init;
}

const char* cuda_archs() { return TRIAD_CUDA_ARCHS; }

CudaStats cuda_stats() {
  std::lock_guard<std::mutex> lock(gemm_mutex);
  return stats;
}

void cuda_gemm_batched(int64_t batch, const float* a, int64_t stride_a, const float* b, int64_t stride_b,
                       float* c, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  const CudaInit& init = cuda_init();
  if (!init.ok) throw std::runtime_error(init.reason);
  std::lock_guard<std::mutex> lock(gemm_mutex);
  gemm_locked(batch, a, stride_a, b, stride_b, c, m, n, k, trans_a, trans_b);
}

void cuda_release() {
  std::lock_guard<std::mutex> lock(gemm_mutex);
  scratch_a.release();
  scratch_b.release();
  scratch_c.release();
  stats.scratch_bytes = 0;
}

}  // namespace cuda
}  // namespace triad
