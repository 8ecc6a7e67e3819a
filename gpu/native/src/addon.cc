// The addon's entry: engine settings (threads, GEMM choice), what it was built with, and the
// matrix-product kernel. The other kernels register themselves (TRIAD_EXPORT) in their own files.
#include <node_api.h>

#include <string>
#include <thread>

#include "exports.h"
#include "gemm.h"
#include "napi-args.h"
#include "thread-pool.h"

namespace triad {

std::vector<Export>& exports_registry() {
  static std::vector<Export> registry;
  return registry;
}

namespace {

GemmImpl gemm_impl = GemmImpl::Auto;

napi_value set_property(napi_env env, napi_value obj, const char* key, napi_value v) {
  napi_set_named_property(env, obj, key, v);
  return obj;
}

napi_value str(napi_env env, const std::string& s) {
  napi_value v;
  napi_create_string_utf8(env, s.c_str(), s.size(), &v);
  return v;
}

napi_value num(napi_env env, double d) {
  napi_value v;
  napi_create_double(env, d, &v);
  return v;
}

/** info() -> {simd, threads, hardwareThreads, blas, gemm, cuda} */
napi_value info(napi_env env, napi_callback_info) {
  napi_value obj;
  napi_create_object(env, &obj);
  set_property(env, obj, "simd", str(env, gemm_simd()));
  set_property(env, obj, "threads", num(env, ThreadPool::instance().threads()));
  set_property(env, obj, "hardwareThreads", num(env, std::thread::hardware_concurrency()));
  set_property(env, obj, "blas", str(env, blas_load()));
  const bool blas = blas_available();
  set_property(env, obj, "gemm",
               str(env, !blas || gemm_impl == GemmImpl::Own ? "own" : gemm_impl == GemmImpl::Blas ? "blas" : "auto"));
#ifdef TRIAD_CUDA
  set_property(env, obj, "cuda", str(env, "built"));
#else
  set_property(env, obj, "cuda", str(env, ""));
#endif
  return obj;
}
TRIAD_EXPORT("info", info);

/** setThreads(n): threads of the engine's pool (and of a loaded BLAS). */
napi_value set_threads(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 1);
    int64_t n = args.integer(0, "threads");
    if (n < 1 || n > 1024) throw ArgError{"threads: expected 1 to 1024, got " + std::to_string(n)};
    ThreadPool::instance().set_threads(static_cast<int>(n));
    blas_set_threads(1);  // triad's pool splits BLAS products (gemm_blas_parallel)
    return undefined_value(env);
  });
}
TRIAD_EXPORT("setThreads", set_threads);

/** setGemm('own' | 'blas' | 'auto'): which GEMM serves matmul (GemmImpl); 'blas' needs a loaded BLAS. */
napi_value set_gemm(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 1);
    std::string which = args.string(0, "gemm");
    if (which == "own")
      gemm_impl = GemmImpl::Own;
    else if (which == "auto")
      gemm_impl = GemmImpl::Auto;
    else if (which == "blas") {
      blas_load();
      if (!blas_available()) throw ArgError{"gemm: no BLAS library (libopenblas.so.0) could be loaded"};
      gemm_impl = GemmImpl::Blas;
    } else
      throw ArgError{"gemm: expected 'own', 'blas' or 'auto', got '" + which + "'"};
    return undefined_value(env);
  });
}
TRIAD_EXPORT("setGemm", set_gemm);

/**
 * matmul(a, b, c, batch, m, n, k, transA, transB, strideA, strideB): for each of `batch` products,
 * c[i] = op(a[i]) op(b[i]), row-major float32; a[i] starts at i * strideA (0 broadcasts), b[i] at
 * i * strideB, c[i] at i * m * n.
 */
napi_value matmul(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 11);
    const int64_t batch = args.integer(3, "batch"), m = args.integer(4, "m"), n = args.integer(5, "n"),
                  k = args.integer(6, "k");
    const bool ta = args.boolean(7, "transA"), tb = args.boolean(8, "transB");
    const int64_t sa = args.integer(9, "strideA"), sb = args.integer(10, "strideB");
    if (batch < 0 || m < 0 || n < 0 || k < 0) throw ArgError{"matmul: negative size"};
    if (batch == 0) return undefined_value(env);
    const float* a = args.f32(0, (batch - 1) * sa + m * k, "a");
    const float* b = args.f32(1, (batch - 1) * sb + k * n, "b");
    float* c = args.f32(2, batch * m * n, "c");
    gemm_batched(gemm_impl, batch, a, sa, b, sb, c, m * n, m, n, k, ta, tb);
    return undefined_value(env);
  });
}
TRIAD_EXPORT("matmul", matmul);

napi_value init(napi_env env, napi_value exports) {
  blas_load();
  for (const Export& e : exports_registry()) {
    napi_value fn;
    napi_create_function(env, e.name, NAPI_AUTO_LENGTH, e.fn, nullptr, &fn);
    napi_set_named_property(env, exports, e.name, fn);
  }
  return exports;
}

}  // namespace
}  // namespace triad

NAPI_MODULE(NODE_GYP_MODULE_NAME, triad::init)
