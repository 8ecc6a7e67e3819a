// RMSNorm over the last axis and its gradient (Zhang & Sennrich 2019, eq. 4):
// y = x r g with r = 1 / sqrt(mean(x^2) + eps), over rows of `d` values.
#include <cmath>
#include <vector>

#include "exports.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

constexpr int64_t kGrainElements = 1 << 15;

/** rmsNorm(x [rows*d], g [d], y [rows*d], rows, d, eps) */
napi_value rms_norm(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 6);
    const int64_t rows = args.integer(3, "rows"), d = args.integer(4, "d");
    const float eps = static_cast<float>(args.number(5, "eps"));
    const float* x = args.f32(0, rows * d, "x");
    const float* g = args.f32(1, d, "g");
    float* y = args.f32(2, rows * d, "y");
    parallel_range(rows, std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, d)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const float* xr = x + r * d;
        float* yr = y + r * d;
        float ss = 0;
        for (int64_t j = 0; j < d; j++) ss += xr[j] * xr[j];
        const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);  // r = 1/RMS(x)
        for (int64_t j = 0; j < d; j++) yr[j] = xr[j] * inv * g[j];            // y = x r g
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("rmsNorm", rms_norm);

/**
 * rmsNormGrad(dy, x, g, dx, dg, rows, d, eps): with u = dy g,
 * dx = r u - x r^3 (u . x) / d, dg = sum over rows of dy x r.
 */
napi_value rms_norm_grad(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 8);
    const int64_t rows = args.integer(5, "rows"), d = args.integer(6, "d");
    const float eps = static_cast<float>(args.number(7, "eps"));
    const float* dy = args.f32(0, rows * d, "dy");
    const float* x = args.f32(1, rows * d, "x");
    const float* g = args.f32(2, d, "g");
    float* dx = args.f32(3, rows * d, "dx");
    float* dg = args.f32(4, d, "dg");
    const int threads = ThreadPool::instance().threads();
    std::vector<float> partial(static_cast<size_t>(threads) * d, 0.0f);
    const int64_t chunks = std::min<int64_t>(threads, std::max<int64_t>(1, rows * d / kGrainElements));
    ThreadPool::instance().parallel_for(chunks, [&](int64_t c) {
      const int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
      float* dgp = partial.data() + c * d;
      for (int64_t r = r0; r < r1; r++) {
        const float* xr = x + r * d;
        const float* dyr = dy + r * d;
        float* dxr = dx + r * d;
        float ss = 0, ux = 0;
        for (int64_t j = 0; j < d; j++) {
          ss += xr[j] * xr[j];
          ux += dyr[j] * g[j] * xr[j];
        }
        const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
        const float coef = inv * inv * inv * ux / static_cast<float>(d);
        for (int64_t j = 0; j < d; j++) {
          dxr[j] = inv * dyr[j] * g[j] - xr[j] * coef;  // dx = r u - x r^3 (u.x)/d
          dgp[j] += dyr[j] * xr[j] * inv;                // dg += dy x r
        }
      }
    });
    for (int64_t j = 0; j < d; j++) {
      float s = 0;
      for (int64_t c = 0; c < chunks; c++) s += partial[c * d + j];
      dg[j] = s;
    }
    return undefined_value(env);
  });
}
TRIAD_EXPORT("rmsNormGrad", rms_norm_grad);

}  // namespace
}  // namespace triad
