// Just enough of CUDA's execution model, on the CPU, to run a kernel source for testing on a
// machine without a GPU: every thread of a block is a host thread, `__shared__` variables are
// function-local statics (so one block runs at a time, its threads sharing them), and
// `__syncthreads()` is a barrier across the block's threads. It checks the kernel's indexing,
// tiling, bounds and barrier placement; it says nothing about the code nvcc generates, speed, or
// the device itself.
#pragma once
#include <barrier>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

namespace cuda_emulation {
inline thread_local dim3 thread_idx, block_idx;
inline std::barrier<>* block_barrier = nullptr;

/**
 * Runs `kernel()` over a grid of `gx * gy * gz` blocks of `threads` threads, one block at a time;
 * `kernel` reads threadIdx/blockIdx as CUDA code does.
 */
inline void launch(unsigned gx, unsigned gy, unsigned gz, unsigned threads, const std::function<void()>& kernel) {
  std::barrier<> barrier(threads);
  block_barrier = &barrier;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; t++)
    pool.emplace_back([&, t] {
      thread_idx = dim3{t, 0, 0};
      for (unsigned z = 0; z < gz; z++)
        for (unsigned y = 0; y < gy; y++)
          for (unsigned x = 0; x < gx; x++) {
            block_idx = dim3{x, y, z};
            kernel();
            barrier.arrive_and_wait();  // the block ends before the next one reuses shared memory
          }
    });
  for (auto& th : pool) th.join();
  block_barrier = nullptr;
}
}  // namespace cuda_emulation

#define threadIdx (::cuda_emulation::thread_idx)
#define blockIdx (::cuda_emulation::block_idx)
inline void __syncthreads() { ::cuda_emulation::block_barrier->arrive_and_wait(); }
