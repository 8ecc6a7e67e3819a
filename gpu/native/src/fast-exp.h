// A float32 e^x that GCC vectorizes (Cephes expf: range reduction by ln 2 in two parts, a degree-5
// polynomial, the exponent put in by bit arithmetic; relative error about 1e-7), and the row
// passes built on it that softmax, log-softmax at a token and the SwiGLU sigmoid share: the row
// max, exp(x - shift) into a buffer, and its sum. std::exp is a scalar library call (about 30
// cycles a value here), and GCC does not vectorize a scalar expf with floor and bit casts, so the
// lanes are written with GCC vector extensions: 16 at a time on AVX-512.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace triad {

/** Sixteen float32 lanes (one AVX-512 register; two AVX2 registers where that is the machine). */
typedef float v16f __attribute__((vector_size(64)));
/** Sixteen int32 lanes, the comparison masks and exponent bits of v16f. */
typedef int32_t v16i __attribute__((vector_size(64)));

/** e^x in each lane: 0 below -87.34, +inf above 88.38, NaN for NaN. */
inline v16f exp_v16(v16f x) {
  const v16f zero = {}, one = zero + 1.0f;
  const v16f hi = zero + 88.3762626647949f, lo = zero + -87.3365447504f;
  const v16f xc = x < lo ? lo : (x > hi ? hi : x);
  const v16f t = xc * 1.44269504088896341f + 0.5f;
  const v16f tr = __builtin_convertvector(__builtin_convertvector(t, v16i), v16f);  // trunc(t)
  const v16f n = tr > t ? tr - one : tr;  // floor(t)
  v16f r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const v16f z = r * r;
  v16f p = zero + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const v16f y = p * z + r + one;
  const v16i bits = (__builtin_convertvector(n, v16i) + 127) << 23;
  v16f e = y * reinterpret_cast<const v16f&>(bits);
  e = x < lo ? zero : e;
  e = x > hi ? zero + INFINITY : e;
  return x != x ? x : e;
}

/** Lanes of the vector loops below (one AVX-512 register of float32). */
constexpr int kExpLanes = 16;

/** Values per stack buffer where a caller runs exp_shifted over a long array in pieces. */
constexpr int64_t kExpChunk = 512;

/** max of x[0, n) (n >= 1); NaN when any value is NaN. */
inline float row_max(const float* x, int64_t n) {
  v16f m = v16f{} + x[0];
  int64_t j = 0;
  for (; j + kExpLanes <= n; j += kExpLanes) {
    v16f v;
    std::memcpy(&v, x + j, sizeof v);
    m = (v > m || v != v) ? v : m;
  }
  if (j < n) {
    v16f v = m;  // the lanes past n keep what they hold
    std::memcpy(&v, x + j, (n - j) * sizeof(float));
    m = (v > m || v != v) ? v : m;
  }
  float out = m[0];
  for (int l = 1; l < kExpLanes; l++) out = (m[l] > out || m[l] != m[l]) ? m[l] : out;
  return out;
}

/** y[j] = exp(x[j] - shift) for j in [0, n); y may alias x. */
inline void exp_shifted(const float* x, float shift, float* y, int64_t n) {
  int64_t j = 0;
  for (; j + kExpLanes <= n; j += kExpLanes) {
    v16f v;
    std::memcpy(&v, x + j, sizeof v);
    v = exp_v16(v - shift);
    std::memcpy(y + j, &v, sizeof v);
  }
  if (j < n) {
    v16f v = {};
    std::memcpy(&v, x + j, (n - j) * sizeof(float));
    v = exp_v16(v - shift);
    std::memcpy(y + j, &v, (n - j) * sizeof(float));
  }
}

/** sum of y[0, n) in float lanes, added up in double at the end. */
inline double lane_sum(const float* y, int64_t n) {
  float lane[kExpLanes] = {};
  int64_t j = 0;
  for (; j + kExpLanes <= n; j += kExpLanes)
    for (int l = 0; l < kExpLanes; l++) lane[l] += y[j + l];
  double s = 0;
  for (int l = 0; l < kExpLanes; l++) s += lane[l];
  for (; j < n; j++) s += y[j];
  return s;
}

/** sum over j of exp(x[j] - shift), through a stack buffer of kExpChunk values (x is not written). */
inline double exp_shifted_sum(const float* x, float shift, int64_t n) {
  float buf[kExpChunk];
  double s = 0;
  for (int64_t j = 0; j < n; j += kExpChunk) {
    const int64_t m = n - j < kExpChunk ? n - j : kExpChunk;
    exp_shifted(x + j, shift, buf, m);
    s += lane_sum(buf, m);
  }
  return s;
}

}  // namespace triad
