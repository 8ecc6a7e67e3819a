// Rotary positions in the rotate-half form (Su et al. 2021, RoFormer, eq. 34; GPT-NeoX layout):
// y = x cos + rotate_half(x) sin, with rotate_half(x) = [x2, x1] and the minus sign of the first
// half already folded into the sin table. The rotation's transpose is itself (a swap of halves),
// so the gradient is the same form: dx = dy cos + swap(dy sin).
#include "exports.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

constexpr int64_t kGrain = 1 << 15;

/**
 * rope(x [n*h*hd], cos [n*hd], sin [n*hd], y, n, h, hd, backward): row i of the tables serves the
 * h heads of token i; backward computes dx from dy (given as x).
 */
napi_value rope(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 8);
    const int64_t n = args.integer(4, "n"), h = args.integer(5, "h"), hd = args.integer(6, "hd");
    const bool backward = args.boolean(7, "backward");
    if (hd % 2 != 0) throw ArgError{"rope: head size must be even"};
    const float* x = args.f32(0, n * h * hd, "x");
    const float* cs = args.f32(1, n * hd, "cos");
    const float* sn = args.f32(2, n * hd, "sin");
    float* y = args.f32(3, n * h * hd, "y");
    const int64_t half = hd / 2;
    parallel_range(n, std::max<int64_t>(1, kGrain / (h * hd)), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) {
        const float* c = cs + i * hd;
        const float* s = sn + i * hd;
        for (int64_t k = 0; k < h; k++) {
          const float* xr = x + (i * h + k) * hd;
          float* yr = y + (i * h + k) * hd;
          if (!backward) {
            for (int64_t j = 0; j < half; j++) yr[j] = xr[j] * c[j] + xr[j + half] * s[j];
            for (int64_t j = half; j < hd; j++) yr[j] = xr[j] * c[j] + xr[j - half] * s[j];
          } else {
            for (int64_t j = 0; j < half; j++) yr[j] = xr[j] * c[j] + xr[j + half] * s[j + half];
            for (int64_t j = half; j < hd; j++) yr[j] = xr[j] * c[j] + xr[j - half] * s[j - half];
          }
        }
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("rope", rope);

}  // namespace
}  // namespace triad
