// Shared pieces of the elementwise kernels (elementwise-binary.cc, elementwise-unary.cc): typed
// arrays of any element type read from JavaScript, the element-count thresholds above which a loop
// is spread over the pool, and double-precision exp/expm1/log/log1p written as plain branch-free
// arithmetic on 8-lane vectors (glibc's are scalar calls, which no loop vectorizes).
//
// Why double: the tfjs cpu backend computes every float32 op in JavaScript doubles (Math.exp,
// Math.log, 1 / (1 + Math.exp(-x)), ...) and rounds once when it stores into a Float32Array. These
// functions are accurate to a few double ulps, so the float32 they round to is the cpu backend's
// except when the exact value lies within ~1e-15 (relative) of a float32 rounding boundary.
#pragma once
#include <node_api.h>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "napi-args.h"

namespace triad {
namespace ew {

/** A typed array from JavaScript: its element type, length (elements) and memory (not copied). */
struct View {
  napi_typedarray_type type;
  int64_t length;
  void* data;
};

/** Reads argument `i` of `args` as a typed array of any element type. */
inline View view(const Args& args, size_t i, const char* name) {
  bool is = false;
  napi_is_typedarray(args.env(), args.raw(i), &is);
  if (!is) throw ArgError{std::string(name) + ": expected a typed array"};
  napi_typedarray_type t;
  size_t length;
  void* data;
  napi_value buffer;
  size_t offset;
  napi_get_typedarray_info(args.env(), args.raw(i), &t, &length, &data, &buffer, &offset);
  return View{t, static_cast<int64_t>(length), data};
}

/** The name of an element type, for error messages. */
inline const char* type_name(napi_typedarray_type t) {
  switch (t) {
    case napi_float32_array:
      return "Float32Array";
    case napi_int32_array:
      return "Int32Array";
    case napi_uint8_array:
      return "Uint8Array";
    default:
      return "an unsupported typed array";
  }
}

/** Elements below which a cheap loop (add, compare) runs on the caller's thread alone. */
constexpr int64_t kCheapGrain = 32768;
/** Elements below which a transcendental loop (exp, log, pow) runs on the caller's thread alone. */
constexpr int64_t kCostlyGrain = 4096;

// ---- double-precision math on 8 lanes (GCC vector extensions: zmm with AVX-512, else split) ----

/** 8 float32 lanes. */
using f32x8 = float __attribute__((vector_size(32)));
/** 8 float64 lanes. */
using f64x8 = double __attribute__((vector_size(64)));
/** 8 int64 lanes (also the type of an f64x8 comparison: -1 true, 0 false). */
using i64x8 = int64_t __attribute__((vector_size(64)));

/** Every lane `v`. */
inline f64x8 splat(double v) { return f64x8{v, v, v, v, v, v, v, v}; }
/** float32 -> float64 lanes (exact). */
inline f64x8 widen(f32x8 v) { return __builtin_convertvector(v, f64x8); }
/** float64 -> float32 lanes, rounded to nearest (as a store into a Float32Array). */
inline f32x8 narrow(f64x8 v) { return __builtin_convertvector(v, f32x8); }

/** Square roots of 8 doubles (correctly rounded; sqrt(-x) = NaN). */
inline f64x8 sqrt8(f64x8 x) {
#if defined(__AVX__)
  __m256d h[2];
  std::memcpy(h, &x, sizeof x);
  h[0] = _mm256_sqrt_pd(h[0]);
  h[1] = _mm256_sqrt_pd(h[1]);
  std::memcpy(&x, h, sizeof x);
  return x;
#else
  for (int i = 0; i < 8; i++) x[i] = std::sqrt(x[i]);
  return x;
#endif
}

// ln 2 split so that n * kLn2Hi is exact for |n| < 2^11 (fdlibm's constants).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kLog2e = 1.44269504088896338700e+00;
// adding and subtracting 1.5 * 2^52 rounds a double of magnitude < 2^51 to an integer
constexpr double kRound = 6755399441055744.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/** e^r - 1 for |r| <= ln(2)/2 + a little: Taylor to r^13 (error < 1e-17 relative). */
inline f64x8 expm1_reduced(f64x8 r) {
  f64x8 p = splat(1.0 / 6227020800.0);  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  return r + (r * r) * p;
}

/** x = n ln2 + r with |r| <= ln(2)/2: sets r and returns 2^n (x within [-1021 ln2, 1023 ln2]). */
inline f64x8 reduce(f64x8 x, f64x8& r) {
  const f64x8 t = x * kLog2e + kRound;
  const f64x8 n = t - kRound;
  const i64x8 ni = reinterpret_cast<i64x8>(t) - reinterpret_cast<i64x8>(splat(kRound));
  r = x - n * kLn2Hi;
  r = r - n * kLn2Lo;
  return reinterpret_cast<f64x8>((ni + 1023) << 52);
}

/** e^x (NaN stays NaN); clamped to [-708, 709], outside of which a float32 result is 0 or Inf. */
inline f64x8 exp8(f64x8 x) {
  x = x > 709.0 ? splat(709.0) : x;
  x = x < -708.0 ? splat(-708.0) : x;
  f64x8 r;
  const f64x8 scale = reduce(x, r);
  return (1.0 + expm1_reduced(r)) * scale;
}

/** e^x - 1 without cancellation near 0 (NaN stays NaN). */
inline f64x8 expm1_8(f64x8 x) {
  // e^x - 1 is -1 in double below -40; above 100 it is Inf as a float32 anyway
  x = x > 100.0 ? splat(100.0) : x;
  x = x < -40.0 ? splat(-40.0) : x;
  f64x8 r;
  const f64x8 scale = reduce(x, r);
  const f64x8 q = expm1_reduced(r);
  // where n = 0, r = x exactly and q is the answer; elsewhere |e^x - 1| > 0.29, no cancellation
  const f64x8 y = scale == 1.0 ? q : scale * q + (scale - 1.0);
  return x == 0.0 ? x : y;  // expm1(-0) = -0
}

/** ln(x) for positive normal doubles (no special cases: see log8). */
inline f64x8 log_positive(f64x8 x) {
  const i64x8 u = reinterpret_cast<i64x8>(x);
  f64x8 e = __builtin_convertvector((u >> 52) - 1023, f64x8);
  f64x8 m = reinterpret_cast<f64x8>((u & 0x000fffffffffffffll) | 0x3ff0000000000000ll);  // [1, 2)
  const i64x8 high = m > 1.41421356237309504880;
  m = high ? m * 0.5 : m;
  e = high ? e + 1.0 : e;
  // ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716: series to s^21 (error < 1e-17)
  const f64x8 f = m - 1.0;
  const f64x8 s = f / (2.0 + f);
  const f64x8 z = s * s;
  f64x8 p = splat(1.0 / 21.0);
  p = p * z + 1.0 / 19.0;
  p = p * z + 1.0 / 17.0;
  p = p * z + 1.0 / 15.0;
  p = p * z + 1.0 / 13.0;
  p = p * z + 1.0 / 11.0;
  p = p * z + 1.0 / 9.0;
  p = p * z + 1.0 / 7.0;
  p = p * z + 1.0 / 5.0;
  p = p * z + 1.0 / 3.0;
  const f64x8 lm = 2.0 * s + (2.0 * s) * (z * p);
  return e * kLn2Hi + (e * kLn2Lo + lm);
}

/** ln(x) with Math.log's special cases: ln(0) = -Inf, ln(x < 0) = NaN, ln(Inf) = Inf, NaN stays. */
inline f64x8 log8(f64x8 x) {
  // a denormal double never comes from a float32; 0 and the specials are patched after
  f64x8 r = log_positive((x > 0.0) & (x < kInf) ? x : splat(1.0));
  r = x == 0.0 ? splat(-kInf) : r;
  r = x == kInf ? splat(kInf) : r;
  r = x < 0.0 ? splat(kNaN) : r;
  return x != x ? x : r;
}

/** ln(1 + x) without cancellation near 0, with Math.log1p's special cases. */
inline f64x8 log1p8(f64x8 x) {
  const f64x8 u = 1.0 + x;
  // the rounding of 1 + x is corrected by the ratio x / (u - 1) (Goldberg)
  f64x8 r = u == 1.0 ? x : log8(u) * (x / (u - 1.0));
  r = u == 0.0 ? splat(-kInf) : r;
  return x == kInf ? splat(kInf) : r;
}

}  // namespace ew
}  // namespace triad
