// Slicing, splitting and concatenation of float32 or int32 tensors (32-bit words), through the
// strided-copy engine; the TypeScript kernels express Slice, StridedSlice, Tile and PadV2 as one
// strided copy each, SplitV and Concat as one call over all parts.
#include <string>

#include "exports.h"
#include "napi-args.h"
#include "strided-copy.h"
#include "word-args.h"

namespace triad {

namespace {

/** Throws unless every index of a view (`offset` + strides over `shape`) lies in [0, len). */
void check_view(int r, const int64_t* shape, const int64_t* strides, int64_t offset, int64_t len, const char* name) {
  int64_t lo = offset, hi = offset;
  for (int k = 0; k < r; k++) {
    if (shape[k] == 0) return;
    const int64_t ext = (shape[k] - 1) * strides[k];
    (ext < 0 ? lo : hi) += ext;
  }
  if (lo < 0 || hi >= len)
    throw ArgError{std::string(name) + ": the view reaches [" + std::to_string(lo) + ", " + std::to_string(hi) +
                   "], outside the " + std::to_string(len) + " elements"};
}

/**
 * stridedCopy(src, srcOffset, dst, dstOffset, shape, srcStrides, dstStrides): for every index i of
 * shape, dst[dstOffset + i . dstStrides] = src[srcOffset + i . srcStrides]; src and dst Float32Array
 * or Int32Array (raw words), shape and strides Int32Array of one length (<= 16); strides may be
 * negative, a source stride 0 repeats.
 */
napi_value strided_copy(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 7);
    const int64_t src_offset = args.integer(1, "srcOffset"), dst_offset = args.integer(3, "dstOffset");
    const std::vector<int64_t> shape = int_list(env, args.raw(4), "shape");
    const std::vector<int64_t> ss = int_list(env, args.raw(5), "srcStrides");
    const std::vector<int64_t> ds = int_list(env, args.raw(6), "dstStrides");
    const int r = static_cast<int>(shape.size());
    if (ss.size() != shape.size() || ds.size() != shape.size())
      throw ArgError{"srcStrides, dstStrides: expected " + std::to_string(r) + " strides each"};
    if (r > kMaxCopyRank) throw ArgError{"shape: rank above " + std::to_string(kMaxCopyRank)};
    for (int64_t n : shape)
      if (n < 0) throw ArgError{"shape: negative size"};
    const int64_t src_len = typed_length(env, args.raw(0), "src"), dst_len = typed_length(env, args.raw(2), "dst");
    check_view(r, shape.data(), ss.data(), src_offset, src_len, "src");
    check_view(r, shape.data(), ds.data(), dst_offset, dst_len, "dst");
    const uint32_t* src = words_arg(env, args.raw(0), 0, "src");
    uint32_t* dst = words_arg(env, args.raw(2), 0, "dst");
    copy_strided(src + src_offset, dst + dst_offset, r, shape.data(), ss.data(), ds.data());
    return undefined_value(env);
  });
}
TRIAD_EXPORT("stridedCopy", strided_copy);

/** Column offsets of the parts of a [rows, sum(widths)] matrix; checks each part's length. */
std::vector<int64_t> part_columns(napi_env env, napi_value parts, const std::vector<int64_t>& widths, int64_t rows,
                                  std::vector<uint32_t*>& pointers) {
  const uint32_t n = array_length(env, parts, "parts");
  if (n != widths.size())
    throw ArgError{"widths: expected " + std::to_string(n) + " widths, got " + std::to_string(widths.size())};
  std::vector<int64_t> columns(n + 1, 0);
  pointers.resize(n);
  for (uint32_t k = 0; k < n; k++) {
    if (widths[k] < 0) throw ArgError{"widths: negative width"};
    pointers[k] = words_arg(env, array_element(env, parts, k, "parts"), rows * widths[k], "parts[k]");
    columns[k + 1] = columns[k] + widths[k];
  }
  return columns;
}

/**
 * concat(parts, widths, out, rows): out [rows, sum(widths)] = the parts [rows, widths[k]] side by
 * side; parts an array of Float32Array or Int32Array, widths Int32Array.
 */
napi_value concat(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const std::vector<int64_t> widths = int_list(env, args.raw(1), "widths");
    const int64_t rows = args.integer(3, "rows");
    if (rows < 0) throw ArgError{"rows: negative"};
    std::vector<uint32_t*> parts;
    const std::vector<int64_t> columns = part_columns(env, args.raw(0), widths, rows, parts);
    const int64_t width = columns.back();
    uint32_t* out = words_arg(env, args.raw(2), rows * width, "out");
    for (size_t k = 0; k < parts.size(); k++) {
      const int64_t shape[2] = {rows, widths[k]}, ss[2] = {widths[k], 1}, ds[2] = {width, 1};
      copy_strided(parts[k], out + columns[k], 2, shape, ss, ds);
    }
    return undefined_value(env);
  });
}
TRIAD_EXPORT("concat", concat);

/**
 * split(x, rows, parts, widths): the column blocks of x [rows, sum(widths)] into parts [rows,
 * widths[k]]; x and parts Float32Array or Int32Array, widths Int32Array.
 */
napi_value split(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const int64_t rows = args.integer(1, "rows");
    if (rows < 0) throw ArgError{"rows: negative"};
    const std::vector<int64_t> widths = int_list(env, args.raw(3), "widths");
    std::vector<uint32_t*> parts;
    const std::vector<int64_t> columns = part_columns(env, args.raw(2), widths, rows, parts);
    const int64_t width = columns.back();
    const uint32_t* x = words_arg(env, args.raw(0), rows * width, "x");
    for (size_t k = 0; k < parts.size(); k++) {
      const int64_t shape[2] = {rows, widths[k]}, ss[2] = {width, 1}, ds[2] = {widths[k], 1};
      copy_strided(x + columns[k], parts[k], 2, shape, ss, ds);
    }
    return undefined_value(env);
  });
}
TRIAD_EXPORT("split", split);

}  // namespace
}  // namespace triad
