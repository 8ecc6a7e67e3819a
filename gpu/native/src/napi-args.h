// Reading a kernel's arguments from JavaScript: typed arrays (pointers into their memory, no copy),
// integers and booleans. A wrong argument throws a JavaScript TypeError naming it.
#pragma once
#include <node_api.h>

#include <cstdint>
#include <string>

namespace triad {

/** Thrown (as a C++ exception) for a bad argument; turned into a JavaScript TypeError. */
struct ArgError {
  std::string message;
};

class Args {
 public:
  Args(napi_env env, napi_callback_info info, size_t expected);
  napi_env env() const { return env_; }
  size_t count() const { return argc_; }
  /** Float32Array argument `i` with at least `min_len` elements. */
  float* f32(size_t i, int64_t min_len, const char* name) const;
  /** Int32Array argument `i` with at least `min_len` elements. */
  int32_t* i32(size_t i, int64_t min_len, const char* name) const;
  int64_t integer(size_t i, const char* name) const;
  double number(size_t i, const char* name) const;
  bool boolean(size_t i, const char* name) const;
  std::string string(size_t i, const char* name) const;
  napi_value raw(size_t i) const { return argv_[i]; }

 private:
  void* typed(size_t i, napi_typedarray_type want, int64_t min_len, const char* name, const char* type) const;
  napi_env env_;
  size_t argc_;
  napi_value argv_[16];
};

/** Wraps a kernel body: ArgError becomes a TypeError, any other exception an Error. */
template <typename F>
napi_value guarded(napi_env env, F&& body) {
  try {
    return body();
  } catch (const ArgError& e) {
    napi_throw_type_error(env, nullptr, e.message.c_str());
  } catch (const std::exception& e) {
    napi_throw_error(env, nullptr, e.what());
  }
  return nullptr;
}

napi_value undefined_value(napi_env env);

}  // namespace triad
