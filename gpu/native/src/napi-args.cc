#include "napi-args.h"

namespace triad {

Args::Args(napi_env env, napi_callback_info info, size_t expected) : env_(env), argc_(16) {
  napi_get_cb_info(env, info, &argc_, argv_, nullptr, nullptr);
  if (argc_ < expected)
    throw ArgError{"expected " + std::to_string(expected) + " arguments, got " + std::to_string(argc_)};
}

void* Args::typed(size_t i, napi_typedarray_type want, int64_t min_len, const char* name, const char* type) const {
  bool is = false;
  napi_is_typedarray(env_, argv_[i], &is);
  if (!is) throw ArgError{std::string(name) + ": expected a " + type};
  napi_typedarray_type t;
  size_t length;
  void* data;
  napi_value buffer;
  size_t offset;
  napi_get_typedarray_info(env_, argv_[i], &t, &length, &data, &buffer, &offset);
  if (t != want) throw ArgError{std::string(name) + ": expected a " + type};
  if (static_cast<int64_t>(length) < min_len)
    throw ArgError{std::string(name) + ": expected at least " + std::to_string(min_len) + " elements, got " +
                   std::to_string(length)};
  return data;
}

float* Args::f32(size_t i, int64_t min_len, const char* name) const {
  return static_cast<float*>(typed(i, napi_float32_array, min_len, name, "Float32Array"));
}

int32_t* Args::i32(size_t i, int64_t min_len, const char* name) const {
  return static_cast<int32_t*>(typed(i, napi_int32_array, min_len, name, "Int32Array"));
}

double Args::number(size_t i, const char* name) const {
  double v;
  if (napi_get_value_double(env_, argv_[i], &v) != napi_ok) throw ArgError{std::string(name) + ": expected a number"};
  return v;
}

int64_t Args::integer(size_t i, const char* name) const {
  double v = number(i, name);
  if (v != static_cast<double>(static_cast<int64_t>(v))) throw ArgError{std::string(name) + ": expected an integer"};
  return static_cast<int64_t>(v);
}

bool Args::boolean(size_t i, const char* name) const {
  bool v;
  if (napi_get_value_bool(env_, argv_[i], &v) != napi_ok) throw ArgError{std::string(name) + ": expected a boolean"};
  return v;
}

std::string Args::string(size_t i, const char* name) const {
  char buf[256];
  size_t len;
  if (napi_get_value_string_utf8(env_, argv_[i], buf, sizeof buf, &len) != napi_ok)
    throw ArgError{std::string(name) + ": expected a string"};
  return std::string(buf, len);
}

napi_value undefined_value(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

}  // namespace triad
