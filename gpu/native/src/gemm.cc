// triad's own single-precision GEMM: the Goto/BLIS blocking (Goto & van de Geijn 2008, "Anatomy of
// high-performance matrix multiplication"): B is packed in KC x NC blocks (kept in L3), A in MC x KC
// blocks (kept in L2) of MR-row panels, and an MR x NR register-blocked microkernel multiplies one
// A panel by one B panel (kept in L1). Vectors are GCC vector extensions, so one source compiles
// to AVX-512, AVX2 or SSE with -march=native. Two shapes skip the packing that would cost more than
// the product: few rows of A times a plain B (decoding through a weight: a row-streaming kernel),
// and few rows times a transposed B (decoding through the output head: a dot-product kernel).
#include <algorithm>
#include <array>
#include <utility>
#include <cstring>
#include <vector>

#include "gemm.h"
#include "thread-pool.h"

namespace triad {

namespace {

#if defined(__AVX512F__)
constexpr int V = 16;
constexpr int MR = 12;
constexpr const char* kSimd = "avx512";
#elif defined(__AVX2__)
constexpr int V = 8;
constexpr int MR = 6;
constexpr const char* kSimd = "avx2";
#else
constexpr int V = 4;
constexpr int MR = 4;
constexpr const char* kSimd = "sse";
#endif
constexpr int NR = 2 * V;
constexpr int64_t KC = 256;
constexpr int64_t MC = MR * (V == 16 ? 20 : 20);
constexpr int64_t NC = 2048;

typedef float vf __attribute__((vector_size(V * 4)));
typedef float vfu __attribute__((vector_size(V * 4), aligned(4)));

inline vf load(const float* p) { return *reinterpret_cast<const vfu*>(p); }
inline void store(float* p, vf v) { *reinterpret_cast<vfu*>(p) = v; }
inline vf splat(float x) { return vf{} + x; }
inline float hsum(vf v) {
  float s = 0;
  for (int i = 0; i < V; i++) s += v[i];
  return s;
}

/**
 * C[R x cols] (+)= Apanel[kc x MR] Bpanel[kc x NR]: the packed A panel holds MR values per k step;
 * B holds NR values per k step `ldb` floats apart (NR when packed, the row stride when read in place).
 */
template <int R>
void micro(int64_t kc, const float* __restrict pa, const float* __restrict pb, int64_t ldb, float* c, int64_t ldc,
           bool add, int cols) {
  vf acc0[R], acc1[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) acc0[r] = acc1[r] = vf{};
  for (int64_t p = 0; p < kc; p++) {
    const vf b0 = load(pb), b1 = load(pb + V);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      const vf a = splat(pa[r]);
      acc0[r] += a * b0;
      acc1[r] += a * b1;
    }
    pa += MR;
    pb += ldb;
  }
  if (cols == NR) {
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
      float* row = c + r * ldc;
      if (add) {
        store(row, load(row) + acc0[r]);
        store(row + V, load(row + V) + acc1[r]);
      } else {
        store(row, acc0[r]);
        store(row + V, acc1[r]);
      }
    }
    return;
  }
  alignas(64) float tmp[NR];
  for (int r = 0; r < R; r++) {
    store(tmp, acc0[r]);
    store(tmp + V, acc1[r]);
    float* row = c + r * ldc;
    if (add)
      for (int j = 0; j < cols; j++) row[j] += tmp[j];
    else
      std::memcpy(row, tmp, cols * sizeof(float));
  }
}

using MicroFn = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t, bool, int);

template <int... Rs>
constexpr std::array<MicroFn, sizeof...(Rs)> micro_table(std::integer_sequence<int, Rs...>) {
  return {&micro<Rs + 1>...};
}
const auto kMicro = micro_table(std::make_integer_sequence<int, MR>{});

inline float a_at(const GemmArgs& g, int64_t i, int64_t p) {
  return g.trans_a ? g.a[p * g.m + i] : g.a[i * g.k + p];
}

/** Packs rows [i0, i0+mc) x k [p0, p0+kc) of A into MR-row panels, zero-padded. */
void pack_a(const GemmArgs& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += MR) {
    float* panel = out + ir * kc;
    const int rows = static_cast<int>(std::min<int64_t>(MR, mc - ir));
    if (!g.trans_a) {
      for (int r = 0; r < MR; r++) {
        if (r < rows) {
          const float* src = g.a + (i0 + ir + r) * g.k + p0;
          for (int64_t p = 0; p < kc; p++) panel[p * MR + r] = src[p];
        } else {
          for (int64_t p = 0; p < kc; p++) panel[p * MR + r] = 0;
        }
      }
    } else {
      for (int64_t p = 0; p < kc; p++) {
        const float* src = g.a + (p0 + p) * g.m + i0 + ir;
        float* dst = panel + p * MR;
        for (int r = 0; r < rows; r++) dst[r] = src[r];
        for (int r = rows; r < MR; r++) dst[r] = 0;
      }
    }
  }
}

/** Packs one NR-column panel of B (k [p0, p0+kc), columns [j0, j0+cols)), zero-padded. */
void pack_b_panel(const GemmArgs& g, int64_t p0, int64_t kc, int64_t j0, int cols, float* out) {
  if (!g.trans_b) {
    for (int64_t p = 0; p < kc; p++) {
      const float* src = g.b + (p0 + p) * g.n + j0;
      float* dst = out + p * NR;
      std::memcpy(dst, src, cols * sizeof(float));
      for (int j = cols; j < NR; j++) dst[j] = 0;
    }
  } else {
    for (int j = 0; j < NR; j++) {
      if (j < cols) {
        const float* src = g.b + (j0 + j) * g.k + p0;
        for (int64_t p = 0; p < kc; p++) out[p * NR + j] = src[p];
      } else {
        for (int64_t p = 0; p < kc; p++) out[p * NR + j] = 0;
      }
    }
  }
}

thread_local std::vector<float> tl_pack_a;
thread_local std::vector<float> tl_edge_b;
thread_local std::vector<float> tl_pack_b;

/** Rows of A at most which a plain B is read in place rather than packed. */
constexpr int64_t kInPlaceRows = 4 * MR;

void gemm_packed(const GemmArgs& g) {
  ThreadPool& pool = ThreadPool::instance();
  const int threads = pool.threads();
  const bool in_place = !g.trans_b && g.m <= kInPlaceRows;
  for (int64_t jc = 0; jc < g.n; jc += NC) {
    const int64_t nc = std::min(NC, g.n - jc);
    const int64_t npanels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < g.k; pc += KC) {
      const int64_t kc = std::min(KC, g.k - pc);
      const bool add = g.accumulate || pc > 0;
      float* packed_b = nullptr;
      if (!in_place) {
        tl_pack_b.resize(static_cast<size_t>(npanels * NR * kc));
        packed_b = tl_pack_b.data();
        float* pb = packed_b;
        parallel_range(npanels, 4, [&](int64_t b0, int64_t b1) {
          for (int64_t jp = b0; jp < b1; jp++) {
            const int cols = static_cast<int>(std::min<int64_t>(NR, nc - jp * NR));
            pack_b_panel(g, pc, kc, jc + jp * NR, cols, pb + jp * NR * kc);
          }
        });
      }
      const int64_t mblocks = (g.m + MC - 1) / MC;
      int64_t groups = std::max<int64_t>(1, (4 * threads + mblocks - 1) / mblocks);
      groups = std::min<int64_t>(groups, std::max<int64_t>(1, npanels / 2));
      if (threads == 1) groups = 1;
      pool.parallel_for(mblocks * groups, [&](int64_t task) {
        const int64_t ib = task / groups, grp = task % groups;
        const int64_t ic = ib * MC;
        const int64_t mc = std::min(MC, g.m - ic);
        const int64_t panels_a = (mc + MR - 1) / MR;
        tl_pack_a.resize(static_cast<size_t>(panels_a * MR * kc));
        float* pa = tl_pack_a.data();
        pack_a(g, ic, mc, pc, kc, pa);
        const int64_t jp0 = npanels * grp / groups, jp1 = npanels * (grp + 1) / groups;
        for (int64_t jp = jp0; jp < jp1; jp++) {
          const int64_t j = jc + jp * NR;
          const int cols = static_cast<int>(std::min<int64_t>(NR, nc - jp * NR));
          const float* pb;
          int64_t ldb;
          if (!in_place) {
            pb = packed_b + jp * NR * kc;
            ldb = NR;
          } else if (cols == NR) {
            pb = g.b + pc * g.n + j;
            ldb = g.n;
          } else {
            tl_edge_b.resize(static_cast<size_t>(NR * kc));
            pack_b_panel(g, pc, kc, j, cols, tl_edge_b.data());
            pb = tl_edge_b.data();
            ldb = NR;
          }
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const int rows = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            kMicro[rows - 1](kc, pa + ir * kc, pb, ldb, g.c + (ic + ir) * g.n + j, g.n, add, cols);
          }
        }
      });
    }
  }
}

/** Rows (m) up to which a product with a plain B streams B's rows (gemm_rows) instead of packing B. */
constexpr int64_t kRowStreamRows = 2;  // measured: docs/native-engine.md, "The GEMM"

/** Few rows times a plain B: C[i, :] (+)= sum_p A[i, p] B[p, :], streaming B's rows once. */
void gemm_rows(const GemmArgs& g) {
  // columns of C a task keeps in L1: m rows of them in about 32 KiB, 4 to 64 vectors wide
  const int64_t chunk = std::min<int64_t>(64 * V, std::max<int64_t>(4 * V, 8192 / std::max<int64_t>(1, g.m) / V * V));
  const int64_t chunks = (g.n + chunk - 1) / chunk;
  ThreadPool::instance().parallel_for(chunks, [&](int64_t ch) {
    const int64_t j0 = ch * chunk, cols = std::min(chunk, g.n - j0);
    const int64_t vcols = cols / V * V;
    for (int64_t i = 0; i < g.m; i++) {
      float* c = g.c + i * g.n + j0;
      if (!g.accumulate) std::memset(c, 0, cols * sizeof(float));
    }
    // four rows of B per pass over C's chunk: one load and store of C for four FMAs
    const int64_t k4 = g.k / 4 * 4;
    for (int64_t p = 0; p < k4; p += 4) {
      const float* b0 = g.b + p * g.n + j0;
      const float* b1 = b0 + g.n;
      const float* b2 = b1 + g.n;
      const float* b3 = b2 + g.n;
      for (int64_t i = 0; i < g.m; i++) {
        const float s0 = a_at(g, i, p), s1 = a_at(g, i, p + 1), s2 = a_at(g, i, p + 2), s3 = a_at(g, i, p + 3);
        const vf a0 = splat(s0), a1 = splat(s1), a2 = splat(s2), a3 = splat(s3);
        float* c = g.c + i * g.n + j0;
        for (int64_t j = 0; j < vcols; j += V)
          store(c + j, load(c + j) + a0 * load(b0 + j) + a1 * load(b1 + j) + a2 * load(b2 + j) + a3 * load(b3 + j));
        for (int64_t j = vcols; j < cols; j++) c[j] += s0 * b0[j] + s1 * b1[j] + s2 * b2[j] + s3 * b3[j];
      }
    }
    for (int64_t p = k4; p < g.k; p++) {
      const float* b = g.b + p * g.n + j0;
      for (int64_t i = 0; i < g.m; i++) {
        const float av = a_at(g, i, p);
        const vf a = splat(av);
        float* c = g.c + i * g.n + j0;
        for (int64_t j = 0; j < vcols; j += V) store(c + j, load(c + j) + a * load(b + j));
        for (int64_t j = vcols; j < cols; j++) c[j] += av * b[j];
      }
    }
  });
}

/** Few rows times a transposed B (B stored n x k): C[i, j] (+)= dot(A[i, :], B[j, :]). */
void gemm_dots(const GemmArgs& g) {
  constexpr int JB = 4, IB = 4;
  const int64_t k = g.k, vk = k / V * V;
  std::vector<float> at;
  const float* a = g.a;
  if (g.trans_a) {  // rows of A contiguous for the dots
    at.resize(static_cast<size_t>(g.m * k));
    for (int64_t p = 0; p < k; p++)
      for (int64_t i = 0; i < g.m; i++) at[i * k + p] = g.a[p * g.m + i];
    a = at.data();
  }
  const int64_t jblocks = (g.n + JB - 1) / JB;
  parallel_range(jblocks, 16, [&](int64_t jb0, int64_t jb1) {
    for (int64_t jb = jb0; jb < jb1; jb++) {
      const int64_t j0 = jb * JB;
      const int jn = static_cast<int>(std::min<int64_t>(JB, g.n - j0));
      for (int64_t i0 = 0; i0 < g.m; i0 += IB) {
        const int in = static_cast<int>(std::min<int64_t>(IB, g.m - i0));
        vf acc[IB][JB];
        for (int i = 0; i < IB; i++)
          for (int j = 0; j < JB; j++) acc[i][j] = vf{};
        if (in == IB && jn == JB) {
          for (int64_t p = 0; p < vk; p += V) {
            vf bv[JB];
#pragma GCC unroll 4
            for (int j = 0; j < JB; j++) bv[j] = load(g.b + (j0 + j) * k + p);
#pragma GCC unroll 4
            for (int i = 0; i < IB; i++) {
              const vf av = load(a + (i0 + i) * k + p);
#pragma GCC unroll 4
              for (int j = 0; j < JB; j++) acc[i][j] += av * bv[j];
            }
          }
        } else {
          for (int64_t p = 0; p < vk; p += V)
            for (int i = 0; i < in; i++) {
              const vf av = load(a + (i0 + i) * k + p);
              for (int j = 0; j < jn; j++) acc[i][j] += av * load(g.b + (j0 + j) * k + p);
            }
        }
        for (int i = 0; i < in; i++)
          for (int j = 0; j < jn; j++) {
            float s = hsum(acc[i][j]);
            const float* ar = a + (i0 + i) * k;
            const float* br = g.b + (j0 + j) * k;
            for (int64_t p = vk; p < k; p++) s += ar[p] * br[p];
            float* c = g.c + (i0 + i) * g.n + j0 + j;
            *c = g.accumulate ? *c + s : s;
          }
      }
    }
  });
}

}  // namespace

const char* gemm_simd() { return kSimd; }

void gemm_own(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {
    if (!g.accumulate) std::memset(g.c, 0, g.m * g.n * sizeof(float));
    return;
  }
  if (g.trans_b && g.m <= 32) return gemm_dots(g);
  if (!g.trans_b && g.m <= kRowStreamRows) return gemm_rows(g);
  gemm_packed(g);
}

void gemm_batched(GemmImpl impl, int64_t batch, const float* a, int64_t stride_a, const float* b,
                  int64_t stride_b, float* c, int64_t stride_c, int64_t m, int64_t n, int64_t k, bool trans_a,
                  bool trans_b) {
  const bool blas =
      blas_available() && (impl == GemmImpl::Blas || (impl == GemmImpl::Auto && m > kAutoOwnRows));
  const GemmArgs first{a, b, c, m, n, k, trans_a, trans_b, false};
  auto at = [&](int64_t i) {
    GemmArgs g = first;
    g.a = a + i * stride_a;
    g.b = b + i * stride_b;
    g.c = c + i * stride_c;
    return g;
  };
  // Many small products: one product per task, each on one thread (nested loops run serially, and
  // the BLAS keeps one thread).
  const int64_t flops = 2 * m * n * k;
  if (batch > 1 && flops < (int64_t{1} << 22)) {
    ThreadPool::instance().parallel_for(batch, [&](int64_t i) {
      const GemmArgs g = at(i);
      if (blas)
        gemm_blas(g);
      else
        gemm_own(g);
    });
    return;
  }
  for (int64_t i = 0; i < batch; i++) {
    const GemmArgs g = at(i);
    if (blas)
      gemm_blas_parallel(g);
    else
      gemm_own(g);
  }
}

}  // namespace triad
