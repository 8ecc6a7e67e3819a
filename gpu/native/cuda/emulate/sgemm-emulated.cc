// Runs sgemm-kernel.cuh on the CPU (cuda-emulation.h) over shapes, transposes, batch strides and
// split grids, against a double-precision reference; prints one line per failure and a summary,
// and exits 1 on any failure. Built and run by test/gpu/cuda-backend.test.ts with the host C++
// compiler (no CUDA toolkit or GPU needed).
#include "cuda-emulation.h"
// clang-format off
#include "../sgemm-kernel.cuh"
// clang-format on

#include <cstdint>
#include <cstdio>
#include <vector>

using namespace triad::cuda;

namespace {

uint32_t seed = 7;
float rnd() {
  seed = seed * 1664525u + 1013904223u;
  return static_cast<float>(seed >> 8) / 16777216.f - 0.5f;
}

/** One case; `max_grid` below 65535 forces the split launches. @returns whether it matched. */
bool run_case(int batch, int m, int n, int k, bool ta, bool tb, bool broadcast_b, long long max_grid) {
  const long long sa = static_cast<long long>(m) * k;
  const long long sb = broadcast_b ? 0 : static_cast<long long>(k) * n;
  std::vector<float> a((batch - 1) * sa + m * k + 1), b((batch - 1) * sb + k * n + 1);
  for (float& x : a) x = rnd();
  for (float& x : b) x = rnd();
  std::vector<float> c(static_cast<size_t>(batch) * m * n + 1, 12345.f);  // a sentinel past the end
  SgemmParams base{};
  base.a = a.data();
  base.b = b.data();
  base.c = c.data();
  base.m = m;
  base.n = n;
  base.k = k;
  base.lda = ta ? m : k;
  base.ldb = tb ? k : n;
  base.ldc = n;
  base.stride_a = sa;
  base.stride_b = sb;
  base.stride_c = static_cast<long long>(m) * n;
  plan_launches(base, batch, ta, max_grid, [&](const SgemmParams& p, long long gx, long long gy, long long gz) {
    cuda_emulation::launch(static_cast<unsigned>(gx), static_cast<unsigned>(gy), static_cast<unsigned>(gz), THREADS,
                           [&] {
                             if (ta && tb)
                               sgemm_tiled<true, true>(p);
                             else if (ta)
                               sgemm_tiled<true, false>(p);
                             else if (tb)
                               sgemm_tiled<false, true>(p);
                             else
                               sgemm_tiled<false, false>(p);
                           });
  });
  bool ok = c.back() == 12345.f;
  double worst = 0;
  for (int z = 0; z < batch; z++)
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) {
        double ref = 0;
        for (int p = 0; p < k; p++) {
          const float av = ta ? a[z * sa + static_cast<long long>(p) * m + i] : a[z * sa + static_cast<long long>(i) * k + p];
          const float bv = tb ? b[z * sb + static_cast<long long>(j) * k + p] : b[z * sb + static_cast<long long>(p) * n + j];
          ref += static_cast<double>(av) * bv;
        }
        const double err = std::fabs(c[(static_cast<size_t>(z) * m + i) * n + j] - ref);
        if (!(err <= worst)) worst = err;
      }
  ok = ok && worst <= 1e-4;
  if (!ok)
    std::printf("FAIL batch %d m %d n %d k %d transA %d transB %d broadcastB %d maxGrid %lld: max error %g%s\n", batch,
                m, n, k, ta, tb, broadcast_b, max_grid, worst, c.back() == 12345.f ? "" : ", wrote past C");
  return ok;
}

}  // namespace

int main() {
  int cases = 0, failed = 0;
  const int sizes[][3] = {{1, 1, 1},  {1, 64, 64}, {64, 64, 16}, {65, 63, 17}, {3, 130, 70},
                          {130, 5, 33}, {7, 9, 0},  {1, 200, 96}, {100, 1, 40}, {64, 128, 48}};
  for (const auto& s : sizes)
    for (int v = 0; v < 4; v++) {
      cases++;
      if (!run_case(1, s[0], s[1], s[2], v & 1, v & 2, false, 65535)) failed++;
    }
  // batches: own matrices, a broadcast B, and launches split in y and z (max grid 2)
  for (int v = 0; v < 4; v++) {
    cases += 3;
    if (!run_case(3, 33, 20, 19, v & 1, v & 2, false, 65535)) failed++;
    if (!run_case(4, 17, 40, 25, v & 1, v & 2, true, 65535)) failed++;
    if (!run_case(5, 150, 30, 21, v & 1, v & 2, v & 1, 2)) failed++;
  }
  std::printf("%d of %d cases match the reference\n", cases - failed, cases);
  return failed ? 1 : 0;
}
