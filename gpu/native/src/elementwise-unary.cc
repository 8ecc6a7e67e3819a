// Unary elementwise kernels (float32 math, float32 -> bool tests, logical not), Cast between
// float32/int32/bool, Select (where) and AddN. Each reproduces the tfjs cpu backend's JavaScript:
// transcendental ops run in double (elementwise.h) and round once to float32, as Math.* does.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "elementwise.h"
#include "exports.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

// The op codes of `unary`, in the order of UNARY_OPS in native-kernels/elementwise.ts.
enum UnaryOp : int {
  kExp = 0,
  kLog,
  kSigmoid,
  kSqrt,
  kRsqrt,
  kSquare,
  kNeg,
  kAbs,
  kRelu,
  kRelu6,
  kTanh,
  kSoftplus,
  kReciprocal,
  kLog1p,
  kExpm1,
  kStep,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kLeakyRelu,
  kClipByValue,
  kElu,
  kIsNan,
  kIsFinite,
  kIsInf,
  kLogicalNot,
  kUnaryOpCount,
};

// One chunk of `map`: out[i] = f(x[i]) for i in [begin, end).
template <typename In, typename Out, typename F>
inline void map_range(const In* __restrict x, Out* __restrict out, int64_t begin, int64_t end, F f) {
  for (int64_t i = begin; i < end; i++) out[i] = f(x[i]);
}

// Runs out[i] = f(x[i]) over [0, n), spread over the pool above `grain` elements.
template <typename In, typename Out, typename F>
void map(const void* x, void* out, int64_t n, int64_t grain, F f) {
  const In* xv = static_cast<const In*>(x);
  Out* ov = static_cast<Out*>(out);
  parallel_range(n, grain, [xv, ov, f](int64_t begin, int64_t end) { map_range(xv, ov, begin, end, f); });
}

// Math.max(0, x): NaN stays, -0 becomes +0.
inline float relu(float v) {
  const bool pos = v > 0.0f, nan = v != v;
  return pos ? v : (nan ? v : 0.0f);
}

// Runs out = f(x) for float32 arrays 8 lanes at a time in double (f: f64x8 -> f64x8), rounding
// once to float32; the tail is padded with zeros.
template <typename F>
void map8(const void* x, void* out, int64_t n, int64_t grain, F f) {
  const float* xv = static_cast<const float*>(x);
  float* ov = static_cast<float*>(out);
  parallel_range(n, grain, [xv, ov, f](int64_t begin, int64_t end) {
    int64_t i = begin;
    for (; i + 8 <= end; i += 8) {
      ew::f32x8 v;
      std::memcpy(&v, xv + i, sizeof v);
      const ew::f32x8 r = ew::narrow(f(ew::widen(v)));
      std::memcpy(ov + i, &r, sizeof r);
    }
    if (i < end) {
      ew::f32x8 v = {};
      std::memcpy(&v, xv + i, (end - i) * sizeof(float));
      const ew::f32x8 r = ew::narrow(f(ew::widen(v)));
      std::memcpy(ov + i, &r, (end - i) * sizeof(float));
    }
  });
}

// tf.nn.softplus's cut-offs: ln(2^-23) + 2 (the cpu backend's `threshold`)
const double kSoftplusThreshold = std::log(1.1920928955078125e-7) + 2.0;

// Dispatches a float32 -> float32 op; false when `op` is not one. Selects take values computed
// before them (`a ? b : c` with b, c already evaluated): GCC if-converts and vectorizes only those.
bool unary_f32(int op, const void* x, void* out, int64_t n, double p0, double p1) {
  using ew::f64x8;
  using ew::splat;
  const int64_t cheap = ew::kCheapGrain, costly = ew::kCostlyGrain;
  switch (op) {
    case kExp:
      map8(x, out, n, costly, [](f64x8 v) { return ew::exp8(v); });
      return true;
    case kLog:
      map8(x, out, n, costly, [](f64x8 v) { return ew::log8(v); });
      return true;
    case kSigmoid:  // 1 / (1 + Math.exp(-x))
      map8(x, out, n, costly, [](f64x8 v) { return 1.0 / (1.0 + ew::exp8(-v)); });
      return true;
    case kSqrt:  // correctly rounded in double, so once more in float32
      map8(x, out, n, cheap, [](f64x8 v) { return ew::sqrt8(v); });
      return true;
    case kRsqrt:  // 1 / Math.sqrt(x)
      map8(x, out, n, cheap, [](f64x8 v) { return 1.0 / ew::sqrt8(v); });
      return true;
    case kSquare:
      map<float, float>(x, out, n, cheap, [](float v) { return v * v; });
      return true;
    case kNeg:  // -1 * x
      map<float, float>(x, out, n, cheap, [](float v) { return -v; });
      return true;
    case kAbs:
      map<float, float>(x, out, n, cheap, [](float v) { return std::fabs(v); });
      return true;
    case kRelu:  // Math.max(0, x): NaN stays, -0 becomes +0
      map<float, float>(x, out, n, cheap, relu);
      return true;
    case kRelu6:  // Math.min(Math.max(0, x), 6)
      map<float, float>(x, out, n, cheap, [](float v) {
        const float r = relu(v);
        return r > 6.0f ? 6.0f : r;
      });
      return true;
    case kTanh:  // fdlibm's tanh: -expm1(-2|x|) / (expm1(-2|x|) + 2), with the sign of x
      map8(x, out, n, costly, [](f64x8 v) {
        const f64x8 a = v < 0.0 ? -v : v;
        const f64x8 t = ew::expm1_8(-2.0 * a);
        const f64x8 r = -t / (t + 2.0);
        return v < 0.0 ? -r : (v == 0.0 ? v : r);  // keeps -0 and NaN
      });
      return true;
    case kSoftplus:  // the cpu backend's: exp(x) below the threshold, x above -threshold, else log(1 + exp(x))
      map8(x, out, n, costly, [](f64x8 v) {
        const f64x8 e = ew::exp8(v);
        const f64x8 mid = ew::log8(1.0 + e);
        return v < kSoftplusThreshold ? e : (v > -kSoftplusThreshold ? v : mid);
      });
      return true;
    case kReciprocal:
      map<float, float>(x, out, n, cheap, [](float v) { return 1.0f / v; });
      return true;
    case kLog1p:
      map8(x, out, n, costly, [](f64x8 v) { return ew::log1p8(v); });
      return true;
    case kExpm1:
      map8(x, out, n, costly, [](f64x8 v) { return ew::expm1_8(v); });
      return true;
    case kElu:  // x >= 0 ? x : Math.exp(x) - 1 (as the cpu backend; not expm1)
      map8(x, out, n, costly, [](f64x8 v) { return v >= 0.0 ? v : ew::exp8(v) - 1.0; });
      return true;
    case kStep: {  // NaN stays, x > 0 ? 1 : alpha
      const float alpha = static_cast<float>(p0);
      map<float, float>(x, out, n, cheap, [alpha](float v) {
        const bool nan = v != v, pos = v > 0.0f;
        return nan ? v : (pos ? 1.0f : alpha);
      });
      return true;
    }
    case kFloor:  // from rint, which vectorizes (std::floor does not here); floor(-0) = -0
      map<float, float>(x, out, n, cheap, [](float v) {
        const float r = std::rint(v);
        const float below = r - 1.0f;
        return r > v ? below : r;
      });
      return true;
    case kCeil:  // from rint; a zero result takes the sign of x (ceil(-0.5) = -0)
      map<float, float>(x, out, n, cheap, [](float v) {
        const float r = std::rint(v);
        const float above = r + 1.0f;
        const float c = r < v ? above : r;
        const float zero = std::copysign(0.0f, v);
        return c == 0.0f ? zero : c;
      });
      return true;
    case kRound:  // half to even, as rint; the cpu backend's arithmetic gives +0 (not -0) for -0.5
      map<float, float>(x, out, n, cheap, [](float v) {
        const float r = std::rint(v);
        return v == -0.5f ? 0.0f : r;
      });
      return true;
    case kSign:  // NaN and -0 give +0
      map<float, float>(x, out, n, cheap, [](float v) {
        const bool neg = v < 0.0f, pos = v > 0.0f;
        return neg ? -1.0f : (pos ? 1.0f : 0.0f);
      });
      return true;
    case kLeakyRelu: {  // x < 0 ? alpha * x : x, the product in double
      const double alpha = p0;
      map8(x, out, n, cheap, [alpha](f64x8 v) { return v < 0.0 ? alpha * v : v; });
      return true;
    }
    case kClipByValue: {  // x > max ? max : x < min ? min : x, compared in double
      const double lo = p0, hi = p1;
      map8(x, out, n, cheap, [lo, hi](f64x8 v) { return v > hi ? splat(hi) : (v < lo ? splat(lo) : v); });
      return true;
    }
    default:
      return false;
  }
}

// Dispatches a float32 -> bool test; false when `op` is not one.
bool unary_f32_bool(int op, const void* x, void* out, int64_t n) {
  const int64_t g = ew::kCheapGrain;
  switch (op) {
    case kIsNan:
      map<float, uint8_t>(x, out, n, g, [](float v) -> uint8_t { return v != v ? 1 : 0; });
      return true;
    case kIsFinite:
      map<float, uint8_t>(x, out, n, g, [](float v) -> uint8_t { return std::fabs(v) <= 3.4028234663852886e38f; });
      return true;
    case kIsInf:
      map<float, uint8_t>(x, out, n, g,
                          [](float v) -> uint8_t { return std::fabs(v) == std::numeric_limits<float>::infinity(); });
      return true;
    default:
      return false;
  }
}

/**
 * unary(op, x, out, p0, p1): out[i] = op(x[i]) over x's length; p0/p1 are the op's attributes
 * (alpha of Step/LeakyRelu, min and max of ClipByValue), else ignored.
 */
napi_value unary_kernel(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 5);
    const int64_t op = args.integer(0, "op");
    if (op < 0 || op >= kUnaryOpCount) throw ArgError{"op: unknown unary op " + std::to_string(op)};
    const ew::View x = ew::view(args, 1, "x"), out = ew::view(args, 2, "out");
    const double p0 = args.number(3, "p0"), p1 = args.number(4, "p1");
    if (out.length < x.length) throw ArgError{"out: expected at least " + std::to_string(x.length) + " elements"};
    const int o = static_cast<int>(op);
    bool done = false;
    if (x.type == napi_float32_array && out.type == napi_float32_array)
      done = unary_f32(o, x.data, out.data, x.length, p0, p1);
    else if (x.type == napi_float32_array && out.type == napi_uint8_array)
      done = unary_f32_bool(o, x.data, out.data, x.length);
    else if (x.type == napi_uint8_array && out.type == napi_uint8_array && o == kLogicalNot) {
      map<uint8_t, uint8_t>(x.data, out.data, x.length, ew::kCheapGrain, [](uint8_t v) -> uint8_t { return v ? 0 : 1; });
      done = true;
    }
    if (!done)
      throw ArgError{"unary op " + std::to_string(op) + ": no form for " + ew::type_name(x.type) + " into " +
                     ew::type_name(out.type)};
    return undefined_value(env);
  });
}
TRIAD_EXPORT("unary", unary_kernel);

// JavaScript's ToInt32 of a float32 (an Int32Array store): truncate, wrap modulo 2^32, NaN/Inf -> 0.
// Below 2^63 the truncation is exact in int64 and wraps to the low 32 bits; a float32 of magnitude
// >= 2^63 is a multiple of 2^40, so 0 modulo 2^32, as are NaN and Infinity.
inline int32_t to_int32(float v) {
  const bool in_range = std::fabs(v) < 9223372036854775808.0f;
  const int64_t w = static_cast<int64_t>(in_range ? v : 0.0f);
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(w)));
}

/**
 * cast(x, out): converts between Float32Array, Int32Array and Uint8Array (bool) elementwise, as
 * the cpu backend's Cast: float -> int32 by ToInt32 (truncation, NaN -> 0), any -> bool as x != 0.
 */
napi_value cast_kernel(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 2);
    const ew::View x = ew::view(args, 0, "x"), out = ew::view(args, 1, "out");
    if (out.length < x.length) throw ArgError{"out: expected at least " + std::to_string(x.length) + " elements"};
    const int64_t n = x.length, g = ew::kCheapGrain;
    const napi_typedarray_type f = napi_float32_array, i = napi_int32_array, u = napi_uint8_array;
    if (x.type == f && out.type == i)
      map<float, int32_t>(x.data, out.data, n, g, [](float v) { return to_int32(v); });
    else if (x.type == i && out.type == f)
      map<int32_t, float>(x.data, out.data, n, g, [](int32_t v) { return static_cast<float>(v); });
    else if (x.type == f && out.type == u)
      map<float, uint8_t>(x.data, out.data, n, g, [](float v) -> uint8_t { return v != 0.0f ? 1 : 0; });
    else if (x.type == i && out.type == u)
      map<int32_t, uint8_t>(x.data, out.data, n, g, [](int32_t v) -> uint8_t { return v != 0 ? 1 : 0; });
    else if (x.type == u && out.type == f)
      map<uint8_t, float>(x.data, out.data, n, g, [](uint8_t v) { return static_cast<float>(v); });
    else if (x.type == u && out.type == i)
      map<uint8_t, int32_t>(x.data, out.data, n, g, [](uint8_t v) { return static_cast<int32_t>(v); });
    else
      throw ArgError{std::string("cast: no form for ") + ew::type_name(x.type) + " into " + ew::type_name(out.type)};
    return undefined_value(env);
  });
}
TRIAD_EXPORT("cast", cast_kernel);

// One chunk of `select_typed`.
template <typename T>
inline void select_range(const uint8_t* __restrict cond, const T* __restrict t, const T* __restrict e,
                         T* __restrict out, int64_t begin, int64_t end) {
  for (int64_t k = begin; k < end; k++) out[k] = cond[k] == 1 ? t[k] : e[k];
}

// out[i] = cond[i] == 1 ? t[i] : e[i] for elements of type T.
template <typename T>
void select_typed(const uint8_t* cond, const void* t, const void* e, void* out, int64_t n) {
  const T* tv = static_cast<const T*>(t);
  const T* ev = static_cast<const T*>(e);
  T* ov = static_cast<T*>(out);
  parallel_range(n, ew::kCheapGrain,
                 [cond, tv, ev, ov](int64_t begin, int64_t end) { select_range(cond, tv, ev, ov, begin, end); });
}

/** select(cond, t, e, out): out[i] = cond[i] === 1 ? t[i] : e[i]; cond a Uint8Array, t/e/out one type. */
napi_value select_kernel(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 4);
    const ew::View c = ew::view(args, 0, "cond"), t = ew::view(args, 1, "t"), e = ew::view(args, 2, "e"),
                   out = ew::view(args, 3, "out");
    if (c.type != napi_uint8_array) throw ArgError{"cond: expected a Uint8Array"};
    if (t.type != e.type || t.type != out.type) throw ArgError{"t, e, out: expected one element type"};
    const int64_t n = c.length;
    if (t.length < n || e.length < n || out.length < n)
      throw ArgError{"t, e, out: expected at least " + std::to_string(n) + " elements"};
    const uint8_t* cv = static_cast<const uint8_t*>(c.data);
    if (t.type == napi_float32_array || t.type == napi_int32_array)
      select_typed<uint32_t>(cv, t.data, e.data, out.data, n);
    else if (t.type == napi_uint8_array)
      select_typed<uint8_t>(cv, t.data, e.data, out.data, n);
    else
      throw ArgError{std::string("select: no form for ") + ew::type_name(t.type)};
    return undefined_value(env);
  });
}
TRIAD_EXPORT("select", select_kernel);

// Elements of out that AddN accumulates at a time (16 KiB of float32).
constexpr int64_t kAddNBlock = 4096;

/**
 * addN(inputs, out): out = ((0 + inputs[0]) + inputs[1]) + ... elementwise, rounded at every step
 * like the cpu backend's accumulation in a typed array; inputs all Float32Array or all Int32Array.
 */
napi_value add_n(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 2);
    const ew::View out = ew::view(args, 1, "out");
    bool is_array = false;
    napi_is_array(env, args.raw(0), &is_array);
    if (!is_array) throw ArgError{"inputs: expected an array of typed arrays"};
    uint32_t count = 0;
    napi_get_array_length(env, args.raw(0), &count);
    std::vector<const void*> ins(count);
    for (uint32_t k = 0; k < count; k++) {
      napi_value el;
      napi_get_element(env, args.raw(0), k, &el);
      bool is = false;
      napi_is_typedarray(env, el, &is);
      if (!is) throw ArgError{"inputs[" + std::to_string(k) + "]: expected a typed array"};
      napi_typedarray_type t;
      size_t length;
      void* data;
      napi_value buffer;
      size_t offset;
      napi_get_typedarray_info(env, el, &t, &length, &data, &buffer, &offset);
      if (t != out.type) throw ArgError{"inputs[" + std::to_string(k) + "]: expected the element type of out"};
      if (static_cast<int64_t>(length) < out.length)
        throw ArgError{"inputs[" + std::to_string(k) + "]: expected at least " + std::to_string(out.length) +
                       " elements"};
      ins[k] = data;
    }
    const int64_t n = out.length;
    if (out.type == napi_float32_array) {
      float* o = static_cast<float*>(out.data);
      parallel_range(n, ew::kCheapGrain, [&](int64_t begin, int64_t end) {
        // blocks that stay in L1 while every input is added into them
        for (int64_t b0 = begin; b0 < end; b0 += kAddNBlock) {
          const int64_t b1 = std::min(end, b0 + kAddNBlock);
          for (int64_t j = b0; j < b1; j++) o[j] = 0.0f;
          for (const void* in : ins) {
            const float* __restrict v = static_cast<const float*>(in);
            for (int64_t j = b0; j < b1; j++) o[j] += v[j];
          }
        }
      });
    } else if (out.type == napi_int32_array) {
      int32_t* o = static_cast<int32_t*>(out.data);
      parallel_range(n, ew::kCheapGrain, [&](int64_t begin, int64_t end) {
        for (int64_t b0 = begin; b0 < end; b0 += kAddNBlock) {
          const int64_t b1 = std::min(end, b0 + kAddNBlock);
          for (int64_t j = b0; j < b1; j++) o[j] = 0;
          for (const void* in : ins) {
            const int32_t* __restrict v = static_cast<const int32_t*>(in);
            for (int64_t j = b0; j < b1; j++)
              o[j] = static_cast<int32_t>(static_cast<uint32_t>(o[j]) + static_cast<uint32_t>(v[j]));
          }
        }
      });
    } else
      throw ArgError{std::string("addN: no form for ") + ew::type_name(out.type)};
    return undefined_value(env);
  });
}
TRIAD_EXPORT("addN", add_n);

}  // namespace
}  // namespace triad
