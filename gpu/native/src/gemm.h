// Single-precision matrix products, row-major: C = op(A) op(B), op(X) = X or X^T.
#pragma once
#include <cstdint>

namespace triad {

/** One product's operands. A is m x k (k x m stored when trans_a), B k x n (n x k when trans_b). */
struct GemmArgs {
  const float* a;
  const float* b;
  float* c;
  int64_t m, n, k;
  bool trans_a, trans_b;
  /** Overwrite C (false) or add to it (true). */
  bool accumulate;
};

/**
 * Which GEMM serves products: triad's packed microkernel, a dynamically loaded BLAS, or `Auto`
 * (the default): the BLAS for products of more than kAutoOwnRows rows where one loaded, triad's
 * row-streaming and dot-product kernels for fewer (generation's m = batch; measured faster there,
 * docs/native-engine.md).
 */
enum class GemmImpl { Own = 0, Blas = 1, Auto = 2 };

/** Rows (m) at or below which `Auto` keeps a product on triad's own kernels. */
constexpr int64_t kAutoOwnRows = 16;

/** C = op(A) op(B) with triad's own packed, threaded microkernel. */
void gemm_own(const GemmArgs& g);

/** Name of the SIMD instruction set the microkernel was compiled for (avx512, avx2, scalar). */
const char* gemm_simd();

/**
 * `batch` products with element strides between consecutive A, B and C matrices (a stride of 0
 * broadcasts one matrix to every product).
 */
void gemm_batched(GemmImpl impl, int64_t batch, const float* a, int64_t stride_a, const float* b,
                  int64_t stride_b, float* c, int64_t stride_c, int64_t m, int64_t n, int64_t k,
                  bool trans_a, bool trans_b);

/** Loads cblas_sgemm from a system OpenBLAS (libopenblas.so.0) if one is installed; returns its path or "". */
const char* blas_load();
/** Whether `blas_load` found a BLAS. */
bool blas_available();
/** Sets the BLAS library's own thread count (triad keeps it at 1: its pool splits the work). */
void blas_set_threads(int n);
/** C = op(A) op(B) through the loaded BLAS (cblas_sgemm, row-major), on the calling thread. */
void gemm_blas(const GemmArgs& g);
/** C = op(A) op(B) through the loaded BLAS, split over triad's thread pool by blocks of C's rows. */
void gemm_blas_parallel(const GemmArgs& g);

}  // namespace triad
