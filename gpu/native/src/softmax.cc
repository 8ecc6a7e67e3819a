// Softmax over the last axis of a float32 tensor: per row the max, exp(x - max) (a vectorizable
// Cephes-style expf, about 1 ulp), their sum in double, and the division, as the cpu backend's
// kernel computes it (max, sub, exp, sum, div).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "exports.h"
#include "napi-args.h"
#include "strided-copy.h"
#include "thread-pool.h"

namespace triad {

namespace {

/** e^x in float32 (Cephes expf: relative error about 1e-7); 0 below -87.3, NaN for NaN. */
inline float exp_f32(float x) {
  const float hi = 88.3762626647949f, lo = -87.3365447504f;
  const float xc = std::min(std::max(x, lo), hi);
  const float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * z + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  float e = y * scale;
  e = x < lo ? 0.0f : e;
  e = x > hi ? INFINITY : e;
  return x != x ? x : e;
}

/** One row: y = exp(x - max x) / sum. */
void softmax_row(const float* x, float* y, int64_t n) {
  constexpr int L = 16;
  float m = x[0];
  int64_t j = 0;
  if (n >= 2 * L) {
    float lane[L];
    for (int l = 0; l < L; l++) lane[l] = x[0];
    for (; j + L <= n; j += L)
      for (int l = 0; l < L; l++) {
        const float v = x[j + l];
        lane[l] = (v > lane[l] || v != v) ? v : lane[l];
      }
    for (int l = 0; l < L; l++) m = (lane[l] > m || lane[l] != lane[l]) ? lane[l] : m;
  }
  for (; j < n; j++) m = (x[j] > m || x[j] != x[j]) ? x[j] : m;
  double lanes[L] = {};
  j = 0;
  for (; j + L <= n; j += L)
    for (int l = 0; l < L; l++) {
      const float e = exp_f32(x[j + l] - m);
      y[j + l] = e;
      lanes[l] += e;
    }
  double s = 0;
  for (int l = 0; l < L; l++) s += lanes[l];
  for (; j < n; j++) {
    const float e = exp_f32(x[j] - m);
    y[j] = e;
    s += e;
  }
  const float sum = static_cast<float>(s);
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
