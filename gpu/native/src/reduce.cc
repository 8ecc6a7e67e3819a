// Reductions of float32 and int32 tensors seen as [outer, r, inner] (the TypeScript kernel folds any
// set of axes into that, transposing first when the reduced axes are not one block): Sum, Mean and
// Prod accumulate in double (the cpu backend accumulates in JavaScript numbers), Max and Min
// propagate NaN as the cpu backend does, ArgMax and ArgMin take the first extreme.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "exports.h"
#include "napi-args.h"
#include "strided-copy.h"
#include "thread-pool.h"

namespace triad {

namespace {

/** What storing a JavaScript number into an Int32Array does (ECMAScript ToInt32). */
inline int32_t to_int32(double d) {
  if (!std::isfinite(d)) return 0;
  const double t = std::trunc(d);
  if (t >= -2147483648.0 && t <= 2147483647.0) return static_cast<int32_t>(t);
  double m = std::fmod(t, 4294967296.0);
  if (m < 0) m += 4294967296.0;
  return static_cast<int32_t>(static_cast<uint32_t>(m));
}

template <typename O>
inline O store(double a) {
  if constexpr (std::is_same_v<O, int32_t>)
    return to_int32(a);
  else
    return static_cast<O>(a);
}

// Each reduction: its accumulator type A, the accumulator a run starts from (given the run's first
// element), one step, the merge of two partial accumulators, and the stored result.
template <typename T>
struct SumOp {
  using A = double;
  static A start(const T*) { return 0.0; }
  static A step(A a, T v) { return a + static_cast<double>(v); }
  static A merge(A a, A b) { return a + b; }
  template <typename O>
  static O finish(A a, int64_t) {
    return store<O>(a);
  }
};

template <typename T>
struct MeanOp : SumOp<T> {
  template <typename O>
  static O finish(typename SumOp<T>::A a, int64_t r) {
    return static_cast<O>(a / static_cast<double>(r));
  }
};

template <typename T>
struct ProdOp {
  using A = double;
  static A start(const T*) { return 1.0; }
  static A step(A a, T v) { return a * static_cast<double>(v); }
  static A merge(A a, A b) { return a * b; }
  template <typename O>
  static O finish(A a, int64_t) {
    return store<O>(a);
  }
};

/** Max: a NaN anywhere gives NaN (the cpu backend's `isNaN(v) || v > max`). */
template <typename T>
struct MaxOp {
  using A = T;
  static A start(const T* first) { return *first; }
  static A step(A a, T v) { return (v > a || v != v) ? v : a; }
  static A merge(A a, A b) { return step(a, b); }
  template <typename O>
  static O finish(A a, int64_t) {
    return a;
  }
};

template <typename T>
struct MinOp {
  using A = T;
  static A start(const T* first) { return *first; }
  static A step(A a, T v) { return (v < a || v != v) ? v : a; }
  static A merge(A a, A b) { return step(a, b); }
  template <typename O>
  static O finish(A a, int64_t) {
    return a;
  }
};

/** One contiguous run `x[0..n)` reduced, in 16 interleaved lanes (vectorized). */
template <class P, typename T>
typename P::A reduce_run(const T* x, int64_t n) {
  using A = typename P::A;
  constexpr int L = 16;
  A a = P::start(x);
  int64_t j = 0;
  if (n >= 2 * L) {
    A lane[L];
    for (int l = 0; l < L; l++) lane[l] = P::start(x);
    for (; j + L <= n; j += L)
      for (int l = 0; l < L; l++) lane[l] = P::step(lane[l], x[j + l]);
    a = lane[0];
    for (int l = 1; l < L; l++) a = P::merge(a, lane[l]);
  }
  for (; j < n; j++) a = P::step(a, x[j]);
  return a;
}

/** Columns per block of a reduction with inner > 1. */
constexpr int64_t kColumns = 256;

/** acc[c - c0] = reduction over rows [j0, j1) of column c of slab `o` (x [outer, r, inner]). */
template <class P, typename T>
void reduce_cells(const T* x, int64_t r, int64_t inner, int64_t o, int64_t c0, int64_t c1, int64_t j0, int64_t j1,
                  typename P::A* acc) {
  const T* base = x + o * r * inner;
  if (inner == 1) {
    acc[0] = reduce_run<P>(base + j0, j1 - j0);
    return;
  }
  const int64_t w = c1 - c0;
  for (int64_t c = 0; c < w; c++) acc[c] = P::start(base + j0 * inner + c0 + c);
  for (int64_t j = j0; j < j1; j++) {
    const T* row = base + j * inner + c0;
    for (int64_t c = 0; c < w; c++) acc[c] = P::step(acc[c], row[c]);
  }
}

template <class P, typename T, typename O>
void reduce(const T* x, O* out, int64_t outer, int64_t r, int64_t inner) {
  using A = typename P::A;
  const int64_t cells = outer * inner, total = cells * r;
  const int threads = ThreadPool::instance().threads();
  if (total >= 2 * kParallelElements && threads > 1 && cells <= 4096 && r >= 4 * threads) {
    // few outputs over long runs: each thread reduces a range of r into partials, merged in order
    const int64_t chunks = threads;
    std::vector<A> part(static_cast<size_t>(chunks * cells));
    parallel_range(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; k++) {
        const int64_t j0 = r * k / chunks, j1 = r * (k + 1) / chunks;
        for (int64_t o = 0; o < outer; o++) reduce_cells<P>(x, r, inner, o, 0, inner, j0, j1, &part[k * cells + o * inner]);
      }
    });
    for (int64_t cell = 0; cell < cells; cell++) {
      A a = part[cell];
      for (int64_t k = 1; k < chunks; k++) a = P::merge(a, part[k * cells + cell]);
      out[cell] = P::template finish<O>(a, r);
    }
    return;
  }
  const int64_t blocks = (inner + kColumns - 1) / kColumns, units = outer * blocks;
  auto body = [&](int64_t b, int64_t e) {
    A acc[kColumns];
    for (int64_t u = b; u < e; u++) {
      const int64_t o = u / blocks, c0 = (u % blocks) * kColumns, c1 = std::min(inner, c0 + kColumns);
      reduce_cells<P>(x, r, inner, o, c0, c1, 0, r, acc);
      for (int64_t c = c0; c < c1; c++) out[o * inner + c] = P::template finish<O>(acc[c - c0], r);
    }
  };
  if (total < kParallelElements)
    body(0, units);
  else
    parallel_range(units, std::max<int64_t>(1, kParallelElements / 2 / std::max<int64_t>(1, r * std::min(inner, kColumns))),
                   body);
}

/** ArgMax (`Max`) or ArgMin: the index along r of the first extreme (the first element when NaN). */
template <bool Max, typename T>
void arg_reduce(const T* x, int32_t* out, int64_t outer, int64_t r, int64_t inner) {
  const int64_t blocks = (inner + kColumns - 1) / kColumns, units = outer * blocks;
  auto body = [&](int64_t b, int64_t e) {
    T best[kColumns];
    int32_t at[kColumns];
    for (int64_t u = b; u < e; u++) {
      const int64_t o = u / blocks, c0 = (u % blocks) * kColumns, w = std::min(inner, c0 + kColumns) - c0;
      const T* base = x + o * r * inner + c0;
      for (int64_t c = 0; c < w; c++) {
        best[c] = base[c];
        at[c] = 0;
      }
      for (int64_t j = 1; j < r; j++) {
        const T* row = base + j * inner;
        for (int64_t c = 0; c < w; c++) {
          const T v = row[c];
          const bool better = Max ? v > best[c] : v < best[c];
          best[c] = better ? v : best[c];
          at[c] = better ? static_cast<int32_t>(j) : at[c];
        }
      }
      std::copy(at, at + w, out + o * inner + c0);
    }
  };
  const int64_t total = outer * r * inner;
  if (total < kParallelElements)
    body(0, units);
  else
    parallel_range(units, std::max<int64_t>(1, kParallelElements / 2 / std::max<int64_t>(1, r * std::min(inner, kColumns))),
                   body);
}

enum Op { kSum = 0, kMean = 1, kMax = 2, kMin = 3, kProd = 4, kArgMax = 5, kArgMin = 6 };

template <typename T>
void dispatch(const Args& args, const T* x, int64_t op, int64_t outer, int64_t r, int64_t inner) {
  const int64_t cells = outer * inner;
  auto out_t = [&]() -> T* {
    if constexpr (std::is_same_v<T, float>)
      return args.f32(1, cells, "out");
    else
      return args.i32(1, cells, "out");
  };
  switch (op) {
    case kSum:
      return reduce<SumOp<T>>(x, out_t(), outer, r, inner);
    case kMean:
      return reduce<MeanOp<T>>(x, args.f32(1, cells, "out"), outer, r, inner);
    case kMax:
      return reduce<MaxOp<T>>(x, out_t(), outer, r, inner);
    case kMin:
      return reduce<MinOp<T>>(x, out_t(), outer, r, inner);
    case kProd:
      return reduce<ProdOp<T>>(x, out_t(), outer, r, inner);
    case kArgMax:
      return arg_reduce<true>(x, args.i32(1, cells, "out"), outer, r, inner);
    case kArgMin:
      return arg_reduce<false>(x, args.i32(1, cells, "out"), outer, r, inner);
  }
}

/**
 * reduce(x, out, outer, r, inner, op, isInt): out[o, i] = reduction over j of x[o, j, i], x [outer,
 * r, inner] Float32Array (Int32Array when isInt), out [outer, inner]; op 0 Sum, 1 Mean, 2 Max,
 * 3 Min, 4 Prod (out like x; Mean's out Float32Array), 5 ArgMax, 6 ArgMin (out Int32Array).
 * Max, Min, ArgMax and ArgMin need r >= 1.
 */
napi_value reduce_export(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 7);
    const int64_t outer = args.integer(2, "outer"), r = args.integer(3, "r"), inner = args.integer(4, "inner"),
                  op = args.integer(5, "op");
    const bool is_int = args.boolean(6, "isInt");
    if (outer < 0 || r < 0 || inner < 0) throw ArgError{"reduce: negative size"};
    if (op < kSum || op > kArgMin) throw ArgError{"op: expected 0 to 6, got " + std::to_string(op)};
    if (r == 0 && (op == kMax || op == kMin || op == kArgMax || op == kArgMin))
      throw ArgError{"r: Max, Min, ArgMax and ArgMin need at least one element"};
    if (is_int)
      dispatch<int32_t>(args, args.i32(0, outer * r * inner, "x"), op, outer, r, inner);
    else
      dispatch<float>(args, args.f32(0, outer * r * inner, "x"), op, outer, r, inner);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("reduce", reduce_export);

/** Values per block of sumSquares: each block's sum is one task of the pool. */
constexpr int64_t kSquaresBlock = 1 << 16;

/**
 * sumSquares(x Float32Array, n) -> number: sum of x[i]^2 over [0, n), each block of kSquaresBlock
 * values summed in float lanes and the blocks added in double (the squared L2 norm that gradient
 * clipping takes over all parameters).
 */
napi_value sum_squares(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 2);
    const int64_t n = args.integer(1, "n");
    if (n < 0) throw ArgError{"sumSquares: negative size"};
    const float* x = args.f32(0, n, "x");
    const int64_t blocks = (n + kSquaresBlock - 1) / kSquaresBlock;
    std::vector<double> partial(blocks, 0.0);
    parallel_range(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; b++) {
        const int64_t j0 = b * kSquaresBlock, j1 = std::min(n, j0 + kSquaresBlock);
        float lane[16] = {};
        int64_t j = j0;
        for (; j + 16 <= j1; j += 16)
          for (int l = 0; l < 16; l++) lane[l] += x[j + l] * x[j + l];
        double s = 0;
        for (int l = 0; l < 16; l++) s += lane[l];
        for (; j < j1; j++) s += static_cast<double>(x[j]) * x[j];
        partial[b] = s;
      }
    });
    double total = 0;
    for (double s : partial) total += s;
    napi_value v;
    napi_create_double(env, total, &v);
    return v;
  });
}
TRIAD_EXPORT("sumSquares", sum_squares);

}  // namespace
}  // namespace triad
