// The data-movement engine: a copy between two strided views of 32-bit words (float32 and int32
// alike), which transposes, slices, splits, concatenates, tiles and pads. Axes are simplified first
// (size-1 axes dropped, adjacent axes that stay adjacent merged), then one of three loops runs:
// contiguous runs (memcpy), an 8x8-tiled 2-D transposition when the source's and the destination's
// contiguous axes differ, or a plain strided loop.
#pragma once
#include <cstdint>

namespace triad {

/** Most axes a strided copy takes (a tile of rank 8 is a copy of rank 16). */
constexpr int kMaxCopyRank = 16;

/** Elements below which a data-movement or reduction kernel runs on the calling thread alone. */
constexpr int64_t kParallelElements = 32768;

/**
 * For every index `i` of `shape` (`rank` axes, rank <= kMaxCopyRank):
 * `dst[sum_k i_k dst_strides[k]] = src[sum_k i_k src_strides[k]]`, 32-bit words; strides may be
 * negative or 0 (a source stride of 0 repeats). Destinations must not overlap each other. Runs on the
 * thread pool above kParallelElements words.
 */
void copy_strided(const uint32_t* src, uint32_t* dst, int rank, const int64_t* shape, const int64_t* src_strides,
                  const int64_t* dst_strides);

/** Row-major strides of `shape` (`rank` axes) into `strides`. */
void row_major_strides(int rank, const int64_t* shape, int64_t* strides);

}  // namespace triad
