// The CUDA engine's addon (`triad_cuda.node`), separate from the CPU engine's so that a machine
// without nvcc, or a failed CUDA build, leaves the CPU engine as it is. libcudart is linked
// statically: the addon loads anywhere, and on a machine without a GPU driver or device `init()`
// says why instead of the load failing.
#include <node_api.h>

#include <string>

#include "../src/napi-args.h"
#include "cuda-gemm.h"

namespace triad {
namespace {

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

napi_value boolean(napi_env env, bool b) {
  napi_value v;
  napi_get_boolean(env, b, &v);
  return v;
}

/**
 * init() -> {ok, reason, device, computeCapability, multiprocessors, memoryBytes, driverVersion,
 * runtimeVersion, archs}: finds the device once (cudaGetDeviceCount, then a self-test product).
 */
napi_value init_device(napi_env env, napi_callback_info) {
  const cuda::CudaInit& r = cuda::cuda_init();
  napi_value obj;
  napi_create_object(env, &obj);
  napi_set_named_property(env, obj, "ok", boolean(env, r.ok));
  napi_set_named_property(env, obj, "reason", str(env, r.reason));
  napi_set_named_property(env, obj, "device", str(env, r.device));
  napi_set_named_property(env, obj, "computeCapability",
                          str(env, r.major ? std::to_string(r.major) + "." + std::to_string(r.minor) : ""));
  napi_set_named_property(env, obj, "multiprocessors", num(env, r.multiprocessors));
  napi_set_named_property(env, obj, "memoryBytes", num(env, static_cast<double>(r.memory_bytes)));
  napi_set_named_property(env, obj, "driverVersion", num(env, r.driver_version));
  napi_set_named_property(env, obj, "runtimeVersion", num(env, r.runtime_version));
  napi_set_named_property(env, obj, "archs", str(env, cuda::cuda_archs()));
  return obj;
}

/** stats() -> {gemms, flops, bytesToDevice, bytesFromDevice, scratchBytes} since the process began. */
napi_value stats(napi_env env, napi_callback_info) {
  const cuda::CudaStats s = cuda::cuda_stats();
  napi_value obj;
  napi_create_object(env, &obj);
  napi_set_named_property(env, obj, "gemms", num(env, static_cast<double>(s.gemms)));
  napi_set_named_property(env, obj, "flops", num(env, s.flops));
  napi_set_named_property(env, obj, "bytesToDevice", num(env, static_cast<double>(s.bytes_to_device)));
  napi_set_named_property(env, obj, "bytesFromDevice", num(env, static_cast<double>(s.bytes_from_device)));
  napi_set_named_property(env, obj, "scratchBytes", num(env, static_cast<double>(s.scratch_bytes)));
  return obj;
}

/** release(): frees the device buffers kept between products. */
napi_value release(napi_env env, napi_callback_info) {
  cuda::cuda_release();
  return undefined_value(env);
}

/**
 * matmul(a, b, c, batch, m, n, k, transA, transB, strideA, strideB): the CPU engine's matmul
 * (same arguments and checks), run on the device. Throws an Error when there is no device.
 */
napi_value matmul(napi_env env, napi_callback_info cb) {
  return guarded(env, [&] {
    Args args(env, cb, 11);
    const int64_t batch = args.integer(3, "batch"), m = args.integer(4, "m"), n = args.integer(5, "n"),
                  k = args.integer(6, "k");
    const bool ta = args.boolean(7, "transA"), tb = args.boolean(8, "transB");
    const int64_t sa = args.integer(9, "strideA"), sb = args.integer(10, "strideB");
    if (batch < 0 || m < 0 || n < 0 || k < 0) throw ArgError{"matmul: negative size"};
    if (sa < 0 || sb < 0) throw ArgError{"matmul: negative stride"};
    if (batch == 0) return undefined_value(env);
    const float* a = args.f32(0, (batch - 1) * sa + m * k, "a");
    const float* b = args.f32(1, (batch - 1) * sb + k * n, "b");
    float* c = args.f32(2, batch * m * n, "c");
    cuda::cuda_gemm_batched(batch, a, sa, b, sb, c, m, n, k, ta, tb);
    return undefined_value(env);
  });
}

napi_value init(napi_env env, napi_value exports) {
  const struct {
    const char* name;
    napi_callback fn;
  } fns[] = {{"init", init_device}, {"stats", stats}, {"release", release}, {"matmul", matmul}};
  for (const auto& f : fns) {
    napi_value fn;
    napi_create_function(env, f.name, NAPI_AUTO_LENGTH, f.fn, nullptr, &fn);
    napi_set_named_property(env, exports, f.name, fn);
  }
  return exports;
}

}  // namespace
}  // namespace triad

NAPI_MODULE(NODE_GYP_MODULE_NAME, triad::init)
