// The tiled SGEMM kernel of the CUDA engine: device code only, so the same source also compiles
// on the CPU under emulate/cuda-emulation.h (each CUDA thread a host thread, __syncthreads a
// barrier), which is how the tiling and bounds logic is tested on machines without a GPU.
//
// C = op(A) op(B), row-major float32, op(X) = X or X^T, with leading dimensions (elements between
// rows as stored) and batch strides; blockIdx.z is the batch. Each block computes a BM x BN tile
// of C from BK-deep slabs of A and B staged in shared memory; each of its THREADS threads keeps a
// TM x TN register tile of accumulators. A thread's TM rows are BM / TM apart and its TN columns
// BN / TN apart, so a warp reads consecutive shared-memory columns (no bank conflicts) and writes
// consecutive columns of C (coalesced). Slabs are loaded along the stored contiguous dimension
// (coalesced for either transpose) and padded by one column so the transposing stores into shared
// memory do not collide on a bank. Loads past the matrix edges read zero; stores past them are
// skipped, so any m, n, k (k = 0 included: C is zeroed) and any alignment work.
#pragma once

namespace triad {
namespace cuda {

constexpr int BM = 64;
constexpr int BN = 64;
constexpr int BK = 16;
constexpr int TM = 4;
constexpr int TN = 4;
/** Threads of a block: one per TM x TN register tile of the BM x BN block tile. */
constexpr int THREADS = (BM / TM) * (BN / TN);
static_assert((BM * BK) % THREADS == 0 && (BN * BK) % THREADS == 0, "slab loads must divide evenly");

/** Operands of one launch; pointers are device pointers, sizes and strides in elements. */
struct SgemmParams {
  const float* a;
  const float* b;
  float* c;
  int m, n, k;
  /** Elements between consecutive stored rows: of A ([m, k], or [k, m] when transposed), B, C. */
  long long lda, ldb, ldc;
  /** Elements between consecutive matrices of the batch (0 broadcasts one matrix). */
  long long stride_a, stride_b, stride_c;
};

template <bool TA, bool TB>
__global__ void __launch_bounds__(THREADS) sgemm_tiled(SgemmParams p) {
  __shared__ float As[BK][BM + 1];
  __shared__ float Bs[BK][BN + 1];
  const float* __restrict__ a = p.a + static_cast<long long>(blockIdx.z) * p.stride_a;
  const float* __restrict__ b = p.b + static_cast<long long>(blockIdx.z) * p.stride_b;
  float* __restrict__ c = p.c + static_cast<long long>(blockIdx.z) * p.stride_c;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;
  const int t = threadIdx.x;
  const int tx = t % (BN / TN);
  const int ty = t / (BN / TN);

  float acc[TM][TN];
#pragma unroll
  for (int r = 0; r < TM; r++)
#pragma unroll
    for (int s = 0; s < TN; s++) acc[r][s] = 0.f;

  for (int k0 = 0; k0 < p.k; k0 += BK) {
    // A slab: BM rows x BK depth, read along the stored contiguous dimension
#pragma unroll
    for (int l = 0; l < BM * BK / THREADS; l++) {
      const int idx = t + l * THREADS;
      const int i = TA ? idx % BM : idx / BK;
      const int kk = TA ? idx / BM : idx % BK;
      const int gi = row0 + i, gk = k0 + kk;
      float v = 0.f;
      if (gi < p.m && gk < p.k) v = TA ? a[gk * p.lda + gi] : a[gi * p.lda + gk];
      As[kk][i] = v;
    }
    // B slab: BK depth x BN columns
#pragma unroll
    for (int l = 0; l < BN * BK / THREADS; l++) {
      const int idx = t + l * THREADS;
      const int j = TB ? idx / BK : idx % BN;
      const int kk = TB ? idx % BK : idx / BN;
      const int gj = col0 + j, gk = k0 + kk;
      float v = 0.f;
      if (gj < p.n && gk < p.k) v = TB ? b[gj * p.ldb + gk] : b[gk * p.ldb + gj];
      Bs[kk][j] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk++) {
      float av[TM], bv[TN];
#pragma unroll
      for (int r = 0; r < TM; r++) av[r] = As[kk][ty + r * (BM / TM)];
#pragma unroll
      for (int s = 0; s < TN; s++) bv[s] = Bs[kk][tx + s * (BN / TN)];
#pragma unroll
      for (int r = 0; r < TM; r++)
#pragma unroll
        for (int s = 0; s < TN; s++) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < TM; r++) {
    const int gi = row0 + ty + r * (BM / TM);
    if (gi >= p.m) continue;
#pragma unroll
    for (int s = 0; s < TN; s++) {
      const int gj = col0 + tx + s * (BN / TN);
      if (gj < p.n) c[gi * p.ldc + gj] = acc[r][s];
    }
  }
}

/**
 * Splits one product into launches whose grids stay within `max_grid` blocks in y (row tiles) and
 * z (batch), CUDA's limit being 65535, and calls `launch(params, grid_x, grid_y, grid_z)` for
 * each with the operand pointers moved to its first row and matrix. `trans_a` says how A is
 * stored (rows of op(A) are columns of a transposed A).
 */
template <typename Launch>
inline void plan_launches(const SgemmParams& base, long long batch, bool trans_a, long long max_grid,
                          Launch&& launch) {
  const long long row_tiles = (base.m + BM - 1) / BM;
  const long long col_tiles = (base.n + BN - 1) / BN;
  for (long long z0 = 0; z0 < batch; z0 += max_grid) {
    for (long long y0 = 0; y0 < row_tiles; y0 += max_grid) {
      SgemmParams p = base;
      const long long rows0 = y0 * BM;
      const long long rows = base.m - rows0 < max_grid * BM ? base.m - rows0 : max_grid * BM;
      p.m = static_cast<int>(rows);
      p.a = base.a + z0 * base.stride_a + (trans_a ? rows0 : rows0 * base.lda);
      p.b = base.b + z0 * base.stride_b;
      p.c = base.c + z0 * base.stride_c + rows0 * base.ldc;
      launch(p, col_tiles, row_tiles - y0 < max_grid ? row_tiles - y0 : max_grid,
             batch - z0 < max_grid ? batch - z0 : max_grid);
    }
  }
}

}  // namespace cuda
}  // namespace triad
