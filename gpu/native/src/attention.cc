// Scaled dot-product attention in one pass, forward only (Vaswani et al. 2017, eq. 1; the
// 1/sqrt(d_k) already folded into q), for the passes that take no gradient: generation over a KV
// cache above all, where the unfused form pays two batched products of one query row each (a
// horizontal sum per key and a thread task per head) and a softmax between them. Per key/value
// group and query row: the scores q . k_j + mask_j, the softmax as the softmax kernel computes it
// (max, expf of fast-exp.h, the sum in double, one division), then the weighted sum of the values.
// Grouped-query: the query rows of a group are stacked (`heads / kvHeads` query heads of `steps`
// rows each), so keys and values are read once per group (Ainslie et al. 2023).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "exports.h"
#include "fast-exp.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {

namespace {

/** dot(a, b) over n floats: sixteen lanes at a time, the tail scalar. */
inline float dot(const float* a, const float* b, int64_t n) {
  v16f acc = {};
  int64_t p = 0;
  for (; p + kExpLanes <= n; p += kExpLanes) {
    v16f x, y;
    std::memcpy(&x, a + p, sizeof x);
    std::memcpy(&y, b + p, sizeof y);
    acc += x * y;
  }
  // the sixteen lanes added as a tree (four shuffles), not one after another
  typedef float v8f __attribute__((vector_size(32)));
  typedef float v4f __attribute__((vector_size(16)));
  const v8f h8 = __builtin_shufflevector(acc, acc, 0, 1, 2, 3, 4, 5, 6, 7) +
                 __builtin_shufflevector(acc, acc, 8, 9, 10, 11, 12, 13, 14, 15);
  const v4f h4 = __builtin_shufflevector(h8, h8, 0, 1, 2, 3) + __builtin_shufflevector(h8, h8, 4, 5, 6, 7);
  float s = (h4[0] + h4[2]) + (h4[1] + h4[3]);
  for (; p < n; p++) s += a[p] * b[p];
  return s;
}

thread_local std::vector<float> tl_scores;
thread_local std::vector<float> tl_out;

/**
 * attention(q, k, v, mask, out, groups, rows, keys, headDim, steps, maskBatch, kvHeads):
 * out[r, i, :] = softmax(q[r, i, :] k[r]^T + mask[b(r), i mod steps, :]) v[r], with q and out
 * Float32Array [groups, rows, headDim], k and v [groups, keys, headDim], mask (additive)
 * [maskBatch, steps, keys], b(r) = floor(r / kvHeads) when maskBatch > 1, else 0.
 */
napi_value attention(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 12);
    const int64_t groups = args.integer(5, "groups"), rows = args.integer(6, "rows");
    const int64_t keys = args.integer(7, "keys"), hd = args.integer(8, "headDim");
    const int64_t steps = args.integer(9, "steps"), mask_batch = args.integer(10, "maskBatch");
    const int64_t kv_heads = args.integer(11, "kvHeads");
    if (groups < 0 || rows < 0 || keys < 1 || hd < 1 || steps < 1 || mask_batch < 1 || kv_heads < 1)
      throw ArgError{"attention: sizes must be positive"};
    if (rows % steps != 0) throw ArgError{"attention: rows must be a multiple of steps"};
    if (mask_batch > 1 && mask_batch * kv_heads != groups)
      throw ArgError{"attention: maskBatch * kvHeads must equal groups"};
    const float* q = args.f32(0, groups * rows * hd, "q");
    const float* k = args.f32(1, groups * keys * hd, "k");
    const float* v = args.f32(2, groups * keys * hd, "v");
    const float* mask = args.f32(3, mask_batch * steps * keys, "mask");
    float* out = args.f32(4, groups * rows * hd, "out");
    auto body = [&](int64_t t0, int64_t t1) {
      tl_scores.resize(static_cast<size_t>(keys));
      tl_out.resize(static_cast<size_t>(hd));
      float* s = tl_scores.data();
      float* o = tl_out.data();
      for (int64_t task = t0; task < t1; task++) {
        const int64_t r = task / rows, i = task % rows;
        const float* qi = q + task * hd;
        const float* kr = k + r * keys * hd;
        const float* vr = v + r * keys * hd;
        const float* m = mask + ((mask_batch > 1 ? r / kv_heads : 0) * steps + i % steps) * keys;
        for (int64_t j = 0; j < keys; j++) s[j] = dot(qi, kr + j * hd, hd) + m[j];
        const float mx = row_max(s, keys);
        exp_shifted(s, mx, s, keys);
        const float sum = static_cast<float>(lane_sum(s, keys));
        std::fill(o, o + hd, 0.0f);
        for (int64_t j = 0; j < keys; j++) {
          const float w = s[j] / sum;
          if (w == 0.0f) continue;  // a blocked key (mask -1e9) adds exactly nothing
          const float* vj = vr + j * hd;
          for (int64_t p = 0; p < hd; p++) o[p] += w * vj[p];
        }
        std::memcpy(out + task * hd, o, hd * sizeof(float));
      }
    };
    const int64_t tasks = groups * rows;
    // about 4 flops a key and head dimension per task: spread once there are a few such tasks
    const int64_t per_task = 4 * keys * hd;
    if (tasks * per_task < (int64_t{1} << 16))
      body(0, tasks);
    else
      parallel_range(tasks, std::max<int64_t>(1, (int64_t{1} << 15) / per_task), body);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("attention", attention);

}  // namespace
}  // namespace triad
