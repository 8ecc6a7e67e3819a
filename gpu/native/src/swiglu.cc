// The gated MLP's activation, silu(gate) * up (Shazeer 2020, eq. 6), and its gradient.
#include <algorithm>
#include <cmath>

#include "exports.h"
#include "fast-exp.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

constexpr int64_t kGrain = 1 << 15;

/** s[k] = sigmoid(g[k]) = 1 / (1 + e^-g) for k in [0, n) (s may alias nothing of g). */
inline void sigmoid_into(const float* g, float* s, int64_t n) {
  for (int64_t k = 0; k < n; k++) s[k] = -g[k];
  exp_shifted(s, 0.0f, s, n);
  for (int64_t k = 0; k < n; k++) s[k] = 1.0f / (1.0f + s[k]);
}

/** swiglu(gate [n], up [n], out [n], n): out = gate sigmoid(gate) up. */
napi_value swiglu(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const int64_t n = args.integer(3, "n");
    const float* gate = args.f32(0, n, "gate");
    const float* up = args.f32(1, n, "up");
    float* out = args.f32(2, n, "out");
    parallel_range(n, kGrain, [&](int64_t i0, int64_t i1) {
      float s[kExpChunk];
      for (int64_t c = i0; c < i1; c += kExpChunk) {
        const int64_t m = std::min(kExpChunk, i1 - c);
        sigmoid_into(gate + c, s, m);
        for (int64_t k = 0; k < m; k++) out[c + k] = gate[c + k] * s[k] * up[c + k];
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("swiglu", swiglu);

/**
 * swigluGrad(dh, gate, up, dgate, dup, n): with s = sigmoid(g),
 * dgate = dh up s (1 + g (1 - s)), dup = dh g s.
 */
napi_value swiglu_grad(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 6);
    const int64_t n = args.integer(5, "n");
    const float* dh = args.f32(0, n, "dh");
    const float* gate = args.f32(1, n, "gate");
    const float* up = args.f32(2, n, "up");
    float* dgate = args.f32(3, n, "dgate");
    float* dup = args.f32(4, n, "dup");
    parallel_range(n, kGrain, [&](int64_t i0, int64_t i1) {
      float sg[kExpChunk];
      for (int64_t c = i0; c < i1; c += kExpChunk) {
        const int64_t m = std::min(kExpChunk, i1 - c);
        sigmoid_into(gate + c, sg, m);
        for (int64_t k = 0; k < m; k++) {
          const int64_t i = c + k;
          const float g = gate[i], s = sg[k];
          dgate[i] = dh[i] * up[i] * s * (1.0f + g * (1.0f - s));  // d silu(g)/dg = s (1 + g (1 - s))
          dup[i] = dh[i] * g * s;
        }
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("swigluGrad", swiglu_grad);

}  // namespace
}  // namespace triad
