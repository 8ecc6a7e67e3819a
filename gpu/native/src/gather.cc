// Gather (rows of a tensor at int32 indices, any axis, batch dims) and its gradient, the scatter-add
// UnsortedSegmentSum.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "exports.h"
#include "napi-args.h"
#include "strided-copy.h"
#include "thread-pool.h"
#include "word-args.h"

namespace triad {

namespace {

/**
 * gather(x, indices, out, batch, outer, dim, slice, n): out[b, o, i, s] = x[b, o, indices[b, i], s]
 * with x [batch, outer, dim, slice], indices [batch, n] Int32Array, out [batch, outer, n, slice];
 * x and out Float32Array or Int32Array (raw words). Throws an Error naming the first index outside
 * [0, dim) (the cpu backend's message), before writing anything.
 */
napi_value gather(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 8);
    const int64_t batch = args.integer(3, "batch"), outer = args.integer(4, "outer"), dim = args.integer(5, "dim"),
                  slice = args.integer(6, "slice"), n = args.integer(7, "n");
    if (batch < 0 || outer < 0 || dim < 0 || slice < 0 || n < 0) throw ArgError{"gather: negative size"};
    const uint32_t* x = words_arg(env, args.raw(0), batch * outer * dim * slice, "x");
    const int32_t* idx = args.i32(1, batch * n, "indices");
    uint32_t* out = words_arg(env, args.raw(2), batch * outer * n * slice, "out");
    for (int64_t i = 0; i < batch * n; i++)
      if (idx[i] < 0 || idx[i] >= dim)
        throw std::runtime_error("GatherV2: the index value " + std::to_string(idx[i]) + " is not in [0, " +
                                 std::to_string(dim - 1) + "]");
    const int64_t rows = batch * outer * n;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; row++) {
        const int64_t i = row % n, bo = row / n, b = bo / outer;
        const uint32_t* from = x + (bo * dim + idx[b * n + i]) * slice;
        uint32_t* to = out + row * slice;
        if (slice == 1)
          *to = *from;
        else
          std::copy(from, from + slice, to);
      }
    };
    if (rows * slice < kParallelElements)
      body(0, rows);
    else
      parallel_range(rows, std::max<int64_t>(1, kParallelElements / 2 / std::max<int64_t>(1, slice)), body);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("gather", gather);

/**
 * unsortedSegmentSum(x, ids, out, n, inner, segments): out [segments, inner] = 0, then
 * out[ids[i], :] += x[i, :] for i < n in order (ids outside [0, segments) dropped); x Float32Array
 * [n, inner], ids Int32Array [n], out Float32Array. The same float32 additions in the same order as
 * a sequential loop; threads take disjoint column ranges.
 */
napi_value unsorted_segment_sum(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 6);
    const int64_t n = args.integer(3, "n"), inner = args.integer(4, "inner"), segments = args.integer(5, "segments");
    if (n < 0 || inner < 0 || segments < 0) throw ArgError{"unsortedSegmentSum: negative size"};
    const float* x = args.f32(0, n * inner, "x");
    const int32_t* ids = args.i32(1, n, "ids");
    float* out = args.f32(2, segments * inner, "out");
    std::fill(out, out + segments * inner, 0.0f);
    auto body = [&](int64_t c0, int64_t c1) {
      for (int64_t i = 0; i < n; i++) {
        const int64_t s = ids[i];
        if (s < 0 || s >= segments) continue;
        float* o = out + s * inner;
        const float* xi = x + i * inner;
        for (int64_t c = c0; c < c1; c++) o[c] += xi[c];
      }
    };
    if (n * inner < kParallelElements || inner < 64)
      body(0, inner);
    else
      parallel_range(inner, 32, body);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("unsortedSegmentSum", unsorted_segment_sum);

}  // namespace
}  // namespace triad
