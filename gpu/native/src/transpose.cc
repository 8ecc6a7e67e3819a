// Transpose: any permutation of a float32 or int32 tensor, through the strided-copy engine (the
// swap of the two last axes takes its 8x8-tiled path; [b, t, h, d] -> [b, h, t, d] copies d-runs).
#include <string>

#include "exports.h"
#include "napi-args.h"
#include "strided-copy.h"
#include "word-args.h"

namespace triad {

namespace {

/**
 * transpose(x, out, shape, perm): out = x with its axes permuted, `out.shape[k] = shape[perm[k]]`;
 * x and out Float32Array or Int32Array of prod(shape) elements; shape and perm Int32Array (rank <= 16).
 */
napi_value transpose(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const std::vector<int64_t> shape = int_list(env, args.raw(2), "shape");
    const std::vector<int64_t> perm = int_list(env, args.raw(3), "perm");
    const int r = static_cast<int>(shape.size());
    if (static_cast<int>(perm.size()) != r)
      throw ArgError{"perm: expected " + std::to_string(r) + " axes, got " + std::to_string(perm.size())};
    if (r > kMaxCopyRank) throw ArgError{"shape: rank above " + std::to_string(kMaxCopyRank)};
    bool seen[kMaxCopyRank] = {};
    int64_t total = 1;
    for (int k = 0; k < r; k++) {
      if (perm[k] < 0 || perm[k] >= r || seen[perm[k]]) throw ArgError{"perm: not a permutation"};
      seen[perm[k]] = true;
      if (shape[k] < 0) throw ArgError{"shape: negative size"};
      total *= shape[k];
    }
    const uint32_t* x = words_arg(env, args.raw(0), total, "x");
    uint32_t* out = words_arg(env, args.raw(1), total, "out");
    int64_t in_strides[kMaxCopyRank], out_shape[kMaxCopyRank], src_strides[kMaxCopyRank], dst_strides[kMaxCopyRank];
    row_major_strides(r, shape.data(), in_strides);
    for (int k = 0; k < r; k++) {
      out_shape[k] = shape[perm[k]];
      src_strides[k] = in_strides[perm[k]];
    }
    row_major_strides(r, out_shape, dst_strides);
    copy_strided(x, out, r, out_shape, src_strides, dst_strides);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("transpose", transpose);

}  // namespace
}  // namespace triad
