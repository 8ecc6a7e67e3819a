// The CUDA engine's host API: device discovery and batched SGEMM on host memory. Plain C++ (no
// CUDA headers), so the N-API glue compiles without them.
#pragma once
#include <cstdint>
#include <string>

namespace triad {
namespace cuda {

/** What `cuda_init` found: a usable device, or the one-line reason there is none. */
struct CudaInit {
  bool ok = false;
  std::string reason;
  std::string device;
  int major = 0, minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;
  /** cudaDriverGetVersion / cudaRuntimeGetVersion, e.g. 13000 for 13.0 (0 when unknown). */
  int driver_version = 0, runtime_version = 0;
};

/**
 * Finds device 0 (of those CUDA_VISIBLE_DEVICES shows), once per process: the driver library
 * must load, cudaGetDeviceCount must find a device, and a small product run on it must match
 * the host's. Never throws; on a machine without a driver or device `ok` is false and `reason`
 * says which call failed and with what.
 */
const CudaInit& cuda_init();

/** Architectures the kernels were compiled for (set by the build), e.g. "sm_80 sm_90 compute_75". */
const char* cuda_archs();

/** Counters since the process started, for benchmarks. */
struct CudaStats {
  int64_t gemms = 0;
  double flops = 0;
  int64_t bytes_to_device = 0, bytes_from_device = 0;
  /** Device memory held for operands (grown on demand, kept for reuse). */
  int64_t scratch_bytes = 0;
};
CudaStats cuda_stats();

/**
 * `batch` row-major products `c[i] = op(a[i]) op(b[i])` on the device, operands in host memory:
 * op(a[i]) is m x k (stored k x m when trans_a), op(b[i]) k x n (n x k when trans_b), c[i] m x n
 * at i * m * n; a[i] starts at i * stride_a elements (0 broadcasts one matrix), b[i] at
 * i * stride_b. Copies A and B to the device, runs the tiled kernel, copies C back (synchronous).
 * Serialised by a mutex (one stream, reused device buffers).
 * @throws std::runtime_error naming the failed CUDA call, or when `cuda_init` failed.
 */
void cuda_gemm_batched(int64_t batch, const float* a, int64_t stride_a, const float* b, int64_t stride_b,
                       float* c, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b);

/** Frees the device buffers kept between products. */
void cuda_release();

}  // namespace cuda
}  // namespace triad
