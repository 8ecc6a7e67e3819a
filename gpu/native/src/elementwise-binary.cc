// Binary elementwise kernels with numpy/tfjs broadcasting: arithmetic (float32, some int32),
// comparisons to bool (Uint8Array 0/1) and logical and/or. The caller (native-kernels/elementwise.ts)
// reduces the broadcast to a plan: the output's dims with size-1 dims dropped and mergeable
// neighbours merged, and each operand's element stride per dim (0 where it is broadcast). The
// innermost stride of each operand is then 1 or 0, so the inner loop is one of four vectorized
// forms: both contiguous, a scalar per row on either side, or both scalar per row.
//
// Every op reproduces the tfjs cpu backend's JavaScript (double arithmetic, one rounding on store):
// + - * / on float32 are correctly rounded in float as in double, so they run in float; squared
// difference and pow run in double; max/min follow Math.max/Math.min (NaN wins, max(+0, -0) = +0);
// int32 results wrap like a store into an Int32Array.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "elementwise.h"
#include "exports.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {
namespace {

// The op codes of `binary`, in the order of BINARY_OPS in native-kernels/elementwise.ts.
enum BinaryOp : int {
  kAdd = 0,
  kSub,
  kMul,
  kDiv,
  kMax,
  kMin,
  kSquaredDifference,
  kPow,
  kEqual,
  kNotEqual,
  kGreater,
  kGreaterEqual,
  kLess,
  kLessEqual,
  kLogicalAnd,
  kLogicalOr,
  kBinaryOpCount,
};

constexpr int kMaxRank = 16;

/** The broadcast walk: `rank` dims of the output (innermost last) and each operand's strides. */
struct Plan {
  int rank;
  int64_t dims[kMaxRank];
  int64_t sa[kMaxRank];
  int64_t sb[kMaxRank];
  int64_t size;
};

// ---- the ops (each a functor on two elements) ----

struct AddF {
  float operator()(float a, float b) const { return a + b; }
};
struct SubF {
  float operator()(float a, float b) const { return a - b; }
};
struct MulF {
  float operator()(float a, float b) const { return a * b; }
};
struct DivF {
  float operator()(float a, float b) const { return a / b; }
};
// Math.max: NaN if either is NaN, +0 over -0
struct MaxF {
  float operator()(float a, float b) const {
    float r = a > b ? a : b;
    r = (a == 0.0f && b == 0.0f) ? a + b : r;  // +0 unless both are -0
    return (a != a || b != b) ? a + b : r;
  }
};
// Math.min: NaN if either is NaN, -0 over +0
struct MinF {
  float operator()(float a, float b) const {
    float r = a < b ? a : b;
    r = (a == 0.0f && b == 0.0f) ? -((-a) + (-b)) : r;  // -0 unless both are +0
    return (a != a || b != b) ? a + b : r;
  }
};
// (a - b)^2 in double, as JavaScript computes it
struct SquaredDifferenceF {
  float operator()(float a, float b) const {
    const double d = static_cast<double>(a) - static_cast<double>(b);
    return static_cast<float>(d * d);
  }
};
// Math.pow: C's pow but NaN for a NaN exponent and for (+-1) ** (+-Infinity)
struct PowF {
  float operator()(float a, float b) const {
    double r = std::pow(static_cast<double>(a), static_cast<double>(b));
    if (b != b || (std::fabs(a) == 1.0f && std::isinf(b))) r = std::numeric_limits<double>::quiet_NaN();
    return static_cast<float>(r);
  }
};

// int32: JavaScript computes in double and the Int32Array store wraps modulo 2^32
struct AddI {
  int32_t operator()(int32_t a, int32_t b) const {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  }
};
struct SubI {
  int32_t operator()(int32_t a, int32_t b) const {
    return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
  }
};
// the exact product rounded to a double (as JavaScript's a * b is) and then wrapped
struct MulI {
  int32_t operator()(int32_t a, int32_t b) const {
    const int64_t p = static_cast<int64_t>(a) * static_cast<int64_t>(b);
    const int64_t rounded = static_cast<int64_t>(static_cast<double>(p));
    return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(rounded)));
  }
};
struct MaxI {
  int32_t operator()(int32_t a, int32_t b) const { return a > b ? a : b; }
};
struct MinI {
  int32_t operator()(int32_t a, int32_t b) const { return a < b ? a : b; }
};

// comparisons and logic: 1 or 0 into a Uint8Array, for any element type
struct EqualOp {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a == b ? 1 : 0;
  }
};
struct NotEqualOp {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a != b ? 1 : 0;
  }
};
struct GreaterOp {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a > b ? 1 : 0;
  }
};
struct GreaterEqualOp {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a >= b ? 1 : 0;
  }
};
struct LessOp {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a < b ? 1 : 0;
  }
};
struct LessEqualOp {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a <= b ? 1 : 0;
  }
};
// JavaScript's a && b and a || b on stored bools
struct LogicalAndOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a ? b : a; }
};
struct LogicalOrOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a ? a : b; }
};

// ---- the walk ----

// One row of `len` outputs; `sa`/`sb` (0 or 1) say whether each operand advances.
template <typename In, typename Out, typename Op>
inline void row(const In* __restrict a, const In* __restrict b, Out* __restrict out, int64_t len, int64_t sa,
                int64_t sb, Op op) {
  if (sa == 1 && sb == 1) {
    for (int64_t k = 0; k < len; k++) out[k] = op(a[k], b[k]);
  } else if (sa == 1) {
    const In bv = b[0];
    for (int64_t k = 0; k < len; k++) out[k] = op(a[k], bv);
  } else if (sb == 1) {
    const In av = a[0];
    for (int64_t k = 0; k < len; k++) out[k] = op(av, b[k]);
  } else {
    const Out v = op(a[0], b[0]);
    for (int64_t k = 0; k < len; k++) out[k] = v;
  }
}

// Outputs [begin, end) of the plan: locate `begin`, then run rows and carry the outer indices.
template <typename In, typename Out, typename Op>
void walk(const Plan& p, const In* a, const In* b, Out* out, int64_t begin, int64_t end, Op op) {
  const int r = p.rank;
  int64_t coord[kMaxRank];
  int64_t offa = 0, offb = 0;
  int64_t rest = begin;
  for (int d = r - 1; d >= 0; d--) {
    coord[d] = rest % p.dims[d];
    rest /= p.dims[d];
    offa += coord[d] * p.sa[d];
    offb += coord[d] * p.sb[d];
  }
  const int64_t inner = p.dims[r - 1], ia = p.sa[r - 1], ib = p.sb[r - 1];
  int64_t i = begin;
  while (i < end) {
    const int64_t len = std::min(inner - coord[r - 1], end - i);
    row(a + offa, b + offb, out + i, len, ia, ib, op);
    i += len;
    // back to the row's start, then the next row
    offa -= coord[r - 1] * ia;
    offb -= coord[r - 1] * ib;
    coord[r - 1] = 0;
    for (int d = r - 2; d >= 0; d--) {
      coord[d]++;
      offa += p.sa[d];
      offb += p.sb[d];
      if (coord[d] < p.dims[d]) break;
      offa -= coord[d] * p.sa[d];
      offb -= coord[d] * p.sb[d];
      coord[d] = 0;
    }
  }
}

// Runs the plan over the pool (when large enough) with op `op`.
template <typename In, typename Out, typename Op>
void run(const Plan& p, const ew::View& a, const ew::View& b, const ew::View& out, int64_t grain, Op op) {
  const In* av = static_cast<const In*>(a.data);
  const In* bv = static_cast<const In*>(b.data);
  Out* ov = static_cast<Out*>(out.data);
  parallel_range(p.size, grain, [&](int64_t begin, int64_t end) { walk<In, Out>(p, av, bv, ov, begin, end, op); });
}

// Comparisons for element type T.
template <typename T>
bool compare(int op, const Plan& p, const ew::View& a, const ew::View& b, const ew::View& out) {
  switch (op) {
    case kEqual:
      run<T, uint8_t>(p, a, b, out, ew::kCheapGrain, EqualOp{});
      return true;
    case kNotEqual:
      run<T, uint8_t>(p, a, b, out, ew::kCheapGrain, NotEqualOp{});
      return true;
    case kGreater:
      run<T, uint8_t>(p, a, b, out, ew::kCheapGrain, GreaterOp{});
      return true;
    case kGreaterEqual:
      run<T, uint8_t>(p, a, b, out, ew::kCheapGrain, GreaterEqualOp{});
      return true;
    case kLess:
      run<T, uint8_t>(p, a, b, out, ew::kCheapGrain, LessOp{});
      return true;
    case kLessEqual:
      run<T, uint8_t>(p, a, b, out, ew::kCheapGrain, LessEqualOp{});
      return true;
    default:
      return false;
  }
}

// Dispatches op on float32 operands; false when the op has no float32 form.
bool binary_f32(int op, const Plan& p, const ew::View& a, const ew::View& b, const ew::View& out) {
  if (out.type == napi_uint8_array) return compare<float>(op, p, a, b, out);
  if (out.type != napi_float32_array) return false;
  const int64_t g = ew::kCheapGrain;
  switch (op) {
    case kAdd:
      run<float, float>(p, a, b, out, g, AddF{});
      return true;
    case kSub:
      run<float, float>(p, a, b, out, g, SubF{});
      return true;
    case kMul:
      run<float, float>(p, a, b, out, g, MulF{});
      return true;
    case kDiv:
      run<float, float>(p, a, b, out, g, DivF{});
      return true;
    case kMax:
      run<float, float>(p, a, b, out, g, MaxF{});
      return true;
    case kMin:
      run<float, float>(p, a, b, out, g, MinF{});
      return true;
    case kSquaredDifference:
      run<float, float>(p, a, b, out, g, SquaredDifferenceF{});
      return true;
    case kPow:
      run<float, float>(p, a, b, out, ew::kCostlyGrain, PowF{});
      return true;
    default:
      return false;
  }
}

// Dispatches op on int32 operands; false when the op has no int32 form.
bool binary_i32(int op, const Plan& p, const ew::View& a, const ew::View& b, const ew::View& out) {
  if (out.type == napi_uint8_array) return compare<int32_t>(op, p, a, b, out);
  if (out.type != napi_int32_array) return false;
  const int64_t g = ew::kCheapGrain;
  switch (op) {
    case kAdd:
      run<int32_t, int32_t>(p, a, b, out, g, AddI{});
      return true;
    case kSub:
      run<int32_t, int32_t>(p, a, b, out, g, SubI{});
      return true;
    case kMul:
      run<int32_t, int32_t>(p, a, b, out, g, MulI{});
      return true;
    case kMax:
      run<int32_t, int32_t>(p, a, b, out, g, MaxI{});
      return true;
    case kMin:
      run<int32_t, int32_t>(p, a, b, out, g, MinI{});
      return true;
    default:
      return false;
  }
}

// Dispatches op on bool (Uint8Array) operands; false when the op has no bool form.
bool binary_u8(int op, const Plan& p, const ew::View& a, const ew::View& b, const ew::View& out) {
  if (out.type != napi_uint8_array) return false;
  if (op == kLogicalAnd) {
    run<uint8_t, uint8_t>(p, a, b, out, ew::kCheapGrain, LogicalAndOp{});
    return true;
  }
  if (op == kLogicalOr) {
    run<uint8_t, uint8_t>(p, a, b, out, ew::kCheapGrain, LogicalOrOp{});
    return true;
  }
  return compare<uint8_t>(op, p, a, b, out);
}

/**
 * binary(op, a, b, out, plan): out = op(a, b) broadcast by `plan` (Int32Array: rank, dims[rank],
 * strides of a[rank], strides of b[rank]); a and b of one element type, out of the op's.
 */
napi_value binary_kernel(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 5);
    const int64_t op = args.integer(0, "op");
    if (op < 0 || op >= kBinaryOpCount) throw ArgError{"op: unknown binary op " + std::to_string(op)};
    const ew::View a = ew::view(args, 1, "a"), b = ew::view(args, 2, "b"), out = ew::view(args, 3, "out");
    const ew::View meta = ew::view(args, 4, "plan");
    if (meta.type != napi_int32_array || meta.length < 1) throw ArgError{"plan: expected an Int32Array"};
    const int32_t* m = static_cast<const int32_t*>(meta.data);
    Plan p;
    p.rank = m[0];
    if (p.rank < 1 || p.rank > kMaxRank || meta.length < 1 + 3 * p.rank)
      throw ArgError{"plan: expected rank 1 to 16 and 1 + 3 * rank entries"};
    p.size = 1;
    int64_t lastA = 0, lastB = 0;  // the largest element offset each operand is read at
    for (int d = 0; d < p.rank; d++) {
      p.dims[d] = m[1 + d];
      p.sa[d] = m[1 + p.rank + d];
      p.sb[d] = m[1 + 2 * p.rank + d];
      if (p.dims[d] < 1 || p.sa[d] < 0 || p.sb[d] < 0) throw ArgError{"plan: dims must be >= 1, strides >= 0"};
      p.size *= p.dims[d];
      lastA += (p.dims[d] - 1) * p.sa[d];
      lastB += (p.dims[d] - 1) * p.sb[d];
    }
    if ((p.sa[p.rank - 1] | p.sb[p.rank - 1]) > 1) throw ArgError{"plan: innermost strides must be 0 or 1"};
    if (a.type != b.type)
      throw ArgError{std::string("a, b: element types differ (") + ew::type_name(a.type) + ", " +
                     ew::type_name(b.type) + ")"};
    if (a.length <= lastA) throw ArgError{"a: expected at least " + std::to_string(lastA + 1) + " elements"};
    if (b.length <= lastB) throw ArgError{"b: expected at least " + std::to_string(lastB + 1) + " elements"};
    if (out.length < p.size) throw ArgError{"out: expected at least " + std::to_string(p.size) + " elements"};
    bool done = false;
    const int o = static_cast<int>(op);
    if (a.type == napi_float32_array)
      done = binary_f32(o, p, a, b, out);
    else if (a.type == napi_int32_array)
      done = binary_i32(o, p, a, b, out);
    else if (a.type == napi_uint8_array)
      done = binary_u8(o, p, a, b, out);
    if (!done)
      throw ArgError{"binary op " + std::to_string(op) + ": no form for " + ew::type_name(a.type) + " into " +
                     ew::type_name(out.type)};
    return undefined_value(env);
  });
}
TRIAD_EXPORT("binary", binary_kernel);

}  // namespace
}  // namespace triad
