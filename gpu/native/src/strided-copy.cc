#include "strided-copy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "thread-pool.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace triad {

namespace {

/** One axis of a copy: its size, source stride and destination stride (in words). */
struct Axis {
  int64_t n, s, d;
};

/** The source and destination offsets of an index over `axes`, walked in row-major order. */
struct Odometer {
  int r = 0;
  Axis ax[kMaxCopyRank];
  int64_t idx[kMaxCopyRank];
  int64_t s = 0, d = 0;

  void seek(int64_t lin) {
    s = d = 0;
    for (int k = r - 1; k >= 0; k--) {
      idx[k] = lin % ax[k].n;
      lin /= ax[k].n;
      s += idx[k] * ax[k].s;
      d += idx[k] * ax[k].d;
    }
  }

  void next() {
    for (int k = r - 1; k >= 0; k--) {
      idx[k]++;
      s += ax[k].s;
      d += ax[k].d;
      if (idx[k] < ax[k].n) return;
      s -= ax[k].s * ax[k].n;
      d -= ax[k].d * ax[k].n;
      idx[k] = 0;
    }
  }
};

/** Drops size-1 axes, orders by destination stride (largest first), merges axes that stay adjacent. */
int simplify(int rank, const int64_t* shape, const int64_t* ss, const int64_t* ds, Axis* out) {
  Axis ax[kMaxCopyRank];
  int r = 0;
  for (int k = 0; k < rank; k++)
    if (shape[k] != 1) ax[r++] = {shape[k], ss[k], ds[k]};
  std::stable_sort(ax, ax + r, [](const Axis& a, const Axis& b) { return std::llabs(a.d) > std::llabs(b.d); });
  int q = 0;
  for (int k = 0; k < r; k++) {
    if (q > 0 && out[q - 1].s == ax[k].s * ax[k].n && out[q - 1].d == ax[k].d * ax[k].n) {
      out[q - 1] = {out[q - 1].n * ax[k].n, ax[k].s, ax[k].d};
    } else {
      out[q++] = ax[k];
    }
  }
  return q;
}

/** `d[j * ds] = s[j * ss]` for j in [0, n). */
inline void copy_run(const uint32_t* s, int64_t ss, uint32_t* d, int64_t ds, int64_t n) {
  if (ss == 1 && ds == 1) {
    std::memcpy(d, s, static_cast<size_t>(n) * 4);
  } else if (ss == 0) {
    const uint32_t v = *s;
    if (ds == 1)
      std::fill(d, d + n, v);
    else
      for (int64_t j = 0; j < n; j++) d[j * ds] = v;
  } else if (ds == 1) {
    for (int64_t j = 0; j < n; j++) d[j] = s[j * ss];
  } else {
    for (int64_t j = 0; j < n; j++) d[j * ds] = s[j * ss];
  }
}

/** 8x8 transposition: row k of `d` (at k * ds) = column k of the 8 rows of `s` (at k * ss). */
inline void transpose8x8(const uint32_t* s, int64_t ss, uint32_t* d, int64_t ds) {
#if defined(__AVX__)
  const float* f = reinterpret_cast<const float*>(s);
  __m256 r0 = _mm256_loadu_ps(f + 0 * ss), r1 = _mm256_loadu_ps(f + 1 * ss);
  __m256 r2 = _mm256_loadu_ps(f + 2 * ss), r3 = _mm256_loadu_ps(f + 3 * ss);
  __m256 r4 = _mm256_loadu_ps(f + 4 * ss), r5 = _mm256_loadu_ps(f + 5 * ss);
  __m256 r6 = _mm256_loadu_ps(f + 6 * ss), r7 = _mm256_loadu_ps(f + 7 * ss);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  float* o = reinterpret_cast<float*>(d);
  _mm256_storeu_ps(o + 0 * ds, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(o + 1 * ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(o + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(o + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(o + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(o + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(o + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(o + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
#else
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) d[i * ds + j] = s[j * ss + i];
#endif
}

/** `d[i * ds + j] = s[i + j * ss]` for i < ni, j < nj (one cache block of a transposition). */
void transpose_block(const uint32_t* s, int64_t ss, uint32_t* d, int64_t ds, int64_t ni, int64_t nj) {
  int64_t i = 0;
  for (; i + 8 <= ni; i += 8) {
    int64_t j = 0;
    for (; j + 8 <= nj; j += 8) transpose8x8(s + i + j * ss, ss, d + i * ds + j, ds);
    for (; j < nj; j++)
      for (int64_t k = 0; k < 8; k++) d[(i + k) * ds + j] = s[i + k + j * ss];
  }
  for (; i < ni; i++)
    for (int64_t j = 0; j < nj; j++) d[i * ds + j] = s[i + j * ss];
}

/** Block edge of the tiled transposition (64 x 64 words: 16 KiB read, 16 KiB written). */
constexpr int64_t kBlock = 64;

/**
 * The tiled path: axis `t` is contiguous in the source (stride 1), the last axis contiguous in the
 * destination; the other axes are a batch of such 2-D transpositions.
 */
void copy_tiled(const uint32_t* src, uint32_t* dst, const Axis* ax, int q, int t) {
  const Axis inner = ax[q - 1], tax = ax[t];
  Odometer batch;
  int64_t batch_n = 1;
  for (int k = 0; k < q - 1; k++)
    if (k != t) {
      batch.ax[batch.r++] = ax[k];
      batch_n *= ax[k].n;
    }
  const int64_t blocks = (tax.n + kBlock - 1) / kBlock;
  const int64_t units = batch_n * blocks;
  auto body = [&](int64_t begin, int64_t end) {
    Odometer o = batch;
    int64_t b = begin / blocks;
    o.seek(b);
    for (int64_t u = begin; u < end; u++) {
      if (u / blocks != b) {
        b = u / blocks;
        o.next();
      }
      const int64_t i0 = (u % blocks) * kBlock, ni = std::min(kBlock, tax.n - i0);
      for (int64_t j0 = 0; j0 < inner.n; j0 += kBlock)
        transpose_block(src + o.s + i0 + j0 * inner.s, inner.s, dst + o.d + i0 * tax.d + j0, tax.d, ni,
                        std::min(kBlock, inner.n - j0));
    }
  };
  if (batch_n * tax.n * inner.n < kParallelElements)
    body(0, units);
  else
    parallel_range(units, std::max<int64_t>(1, kParallelElements / 2 / (kBlock * inner.n)), body);
}

}  // namespace

void row_major_strides(int rank, const int64_t* shape, int64_t* strides) {
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    strides[k] = s;
    s *= shape[k];
  }
}

void copy_strided(const uint32_t* src, uint32_t* dst, int rank, const int64_t* shape, const int64_t* src_strides,
                  const int64_t* dst_strides) {
  int64_t total = 1;
  for (int k = 0; k < rank; k++) total *= shape[k];
  if (total == 0) return;
  Axis ax[kMaxCopyRank];
  const int q = simplify(rank, shape, src_strides, dst_strides, ax);
  if (q == 0) {
    dst[0] = src[0];
    return;
  }
  const Axis inner = ax[q - 1];
  if (inner.d == 1 && inner.s != 1 && inner.n >= 8)
    for (int t = 0; t < q - 1; t++)
      if (ax[t].s == 1 && ax[t].n >= 8) return copy_tiled(src, dst, ax, q, t);
  if (q == 1) {
    auto body = [&](int64_t b, int64_t e) { copy_run(src + b * inner.s, inner.s, dst + b * inner.d, inner.d, e - b); };
    if (total < kParallelElements * 8)
      body(0, total);
    else
      parallel_range(total, kParallelElements * 4, body);
    return;
  }
  Odometer outer;
  outer.r = q - 1;
  std::copy(ax, ax + q - 1, outer.ax);
  const int64_t rows = total / inner.n;
  auto body = [&](int64_t b, int64_t e) {
    Odometer o = outer;
    o.seek(b);
    for (int64_t i = b; i < e; i++) {
      copy_run(src + o.s, inner.s, dst + o.d, inner.d, inner.n);
      o.next();
    }
  };
  if (total < kParallelElements)
    body(0, rows);
  else
    parallel_range(rows, std::max<int64_t>(1, kParallelElements / 2 / inner.n), body);
}

}  // namespace triad
