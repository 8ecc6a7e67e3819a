// Softmax over the last axis of a float32 tensor: per row the max, exp(x - max) (the vectorized
// expf of fast-exp.h, relative error about 1e-7), their sum, and the division, as the cpu backend's
// kernel computes it (max, sub, exp, sum, div).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "exports.h"
#include "fast-exp.h"
#include "napi-args.h"
#include "strided-copy.h"
#include "thread-pool.h"

namespace triad {

namespace {

/** One row: y = exp(x - max x) / sum; the sum in double, as the cpu backend's. */
void softmax_row(const float* x, float* y, int64_t n) {
  const float m = row_max(x, n);
  exp_shifted(x, m, y, n);
  const float sum = static_cast<float>(lane_sum(y, n));
  for (int64_t k = 0; k < n; k++) y[k] = y[k] / sum;
}

/**
 * softmax(x, out, rows, cols): out[i, :] = exp(x[i, :] - max) / sum exp(x[i, :] - max), x and out
 * Float32Array [rows, cols].
 */
napi_value softmax(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const int64_t rows = args.integer(2, "rows"), cols = args.integer(3, "cols");
    if (rows < 0 || cols < 0) throw ArgError{"softmax: negative size"};
    const float* x = args.f32(0, rows * cols, "x");
    float* out = args.f32(1, rows * cols, "out");
    if (cols == 0) return undefined_value(env);
    auto body = [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) softmax_row(x + i * cols, out + i * cols, cols);
    };
    // exp costs about 10 cycles a value: a lower threshold than data movement
    if (rows * cols < kParallelElements / 4)
      body(0, rows);
    else
      parallel_range(rows, std::max<int64_t>(1, kParallelElements / 8 / cols), body);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("softmax", softmax);

}  // namespace
}  // namespace triad
