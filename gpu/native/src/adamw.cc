// The AdamW update in place (Loshchilov & Hutter 2019, Algorithm 2, decoupled weight decay):
// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2; p = p (1 - lr wd) - lr (m / bias1) / (sqrt(v / bias2) + eps),
// with g the gradient times the global clip scale.
#include <cmath>

#include "exports.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

/** adamw(p, m, v, g, n, lr, beta1, beta2, eps, decay, bias1, bias2, clipScale): p, m, v updated in place. */
napi_value adamw(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 13);
    const int64_t n = args.integer(4, "n");
    float* p = args.f32(0, n, "p");
    float* m = args.f32(1, n, "m");
    float* v = args.f32(2, n, "v");
    const float* g = args.f32(3, n, "g");
    const float lr = static_cast<float>(args.number(5, "lr")), b1 = static_cast<float>(args.number(6, "beta1")),
                b2 = static_cast<float>(args.number(7, "beta2")), eps = static_cast<float>(args.number(8, "eps")),
                decay = static_cast<float>(args.number(9, "decay")), bias1 = static_cast<float>(args.number(10, "bias1")),
                bias2 = static_cast<float>(args.number(11, "bias2")), clip = static_cast<float>(args.number(12, "clipScale"));
    const float keep = 1.0f - lr * decay;
    parallel_range(n, 1 << 15, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) {
        const float gi = g[i] * clip;
        const float mi = b1 * m[i] + (1.0f - b1) * gi;
        const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * keep - lr * ((mi / bias1) / (std::sqrt(vi / bias2) + eps));
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("adamw", adamw);

}  // namespace
}  // namespace triad
