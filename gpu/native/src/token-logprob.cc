// Log-probability of a chosen token per row of logits, log softmax(z)[y] = z_y - logsumexp(z), and
// its gradient dz = dlogp (onehot(y) - softmax(z)); no [rows, vocab] intermediate is kept.
#include <cmath>
#include <limits>

#include "exports.h"
#include "fast-exp.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

/** Max and log-sum-exp of one row. */
inline float row_lse(const float* z, int64_t v) {
  if (v == 0) return -std::numeric_limits<float>::infinity();
  const float mx = row_max(z, v);
  if (!std::isfinite(mx)) return mx;
  return mx + static_cast<float>(std::log(exp_shifted_sum(z, mx, v)));
}

/** tokenLogprob(logits [rows*v], targets int32 [rows], out [rows], rows, v); a target outside [0, v) gives NaN. */
napi_value token_logprob(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 5);
    const int64_t rows = args.integer(3, "rows"), v = args.integer(4, "vocab");
    const float* z = args.f32(0, rows * v, "logits");
    const int32_t* y = args.i32(1, rows, "targets");
    float* out = args.f32(2, rows, "out");
    parallel_range(rows, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, v)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const float* zr = z + r * v;
        const int32_t t = y[r];
        out[r] = (t < 0 || t >= v) ? std::numeric_limits<float>::quiet_NaN() : zr[t] - row_lse(zr, v);
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("tokenLogprob", token_logprob);

/** tokenLogprobGrad(dlogp [rows], logits, targets, dlogits [rows*v], rows, v). */
napi_value token_logprob_grad(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 6);
    const int64_t rows = args.integer(4, "rows"), v = args.integer(5, "vocab");
    const float* dl = args.f32(0, rows, "dlogp");
    const float* z = args.f32(1, rows * v, "logits");
    const int32_t* y = args.i32(2, rows, "targets");
    float* dz = args.f32(3, rows * v, "dlogits");
    parallel_range(rows, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, v)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const float* zr = z + r * v;
        float* dr = dz + r * v;
        const float lse = row_lse(zr, v);
        const float g = dl[r];
        exp_shifted(zr, lse, dr, v);  // softmax(z)
        for (int64_t j = 0; j < v; j++) dr[j] *= -g;  // -dlogp softmax(z)
        const int32_t t = y[r];
        if (t >= 0 && t < v) dr[t] += g;  // + dlogp onehot(y)
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("tokenLogprobGrad", token_logprob_grad);

/**
 * tokenEntropy(logits [rows*v], out [rows], rows, v): H = -sum_j p_j log p_j of each row's
 * softmax, computed as lse - sum_j p_j z_j (p = exp(z - lse)), one pass after the row's lse.
 */
napi_value token_entropy(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const int64_t rows = args.integer(2, "rows"), v = args.integer(3, "vocab");
    const float* z = args.f32(0, rows * v, "logits");
    float* out = args.f32(1, rows, "out");
    parallel_range(rows, std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(1, v)), [&](int64_t r0, int64_t r1) {
      float buf[kExpChunk];
      for (int64_t r = r0; r < r1; r++) {
        const float* zr = z + r * v;
        const float lse = row_lse(zr, v);
        if (!std::isfinite(lse)) {
          out[r] = std::numeric_limits<float>::quiet_NaN();
          continue;
        }
        double pz = 0;  // sum_j p_j z_j
        for (int64_t j = 0; j < v; j += kExpChunk) {
          const int64_t m = std::min<int64_t>(kExpChunk, v - j);
          exp_shifted(zr + j, lse, buf, m);
          for (int64_t i = 0; i < m; i++) buf[i] *= zr[j + i];
          pz += lane_sum(buf, m);
        }
        out[r] = static_cast<float>(static_cast<double>(lse) - pz);
      }
    });
    return undefined_value(env);
  });
}
TRIAD_EXPORT("tokenEntropy", token_entropy);

}  // namespace
}  // namespace triad
