#include "word-args.h"

#include <string>

namespace triad {

namespace {

struct TypedInfo {
  napi_typedarray_type type;
  size_t length;
  void* data;
};

TypedInfo typed_info(napi_env env, napi_value v, const char* name) {
  bool is = false;
  napi_is_typedarray(env, v, &is);
  if (!is) throw ArgError{std::string(name) + ": expected a typed array"};
  TypedInfo info;
  napi_value buffer;
  size_t offset;
  napi_get_typedarray_info(env, v, &info.type, &info.length, &info.data, &buffer, &offset);
  return info;
}

}  // namespace

uint32_t* words_arg(napi_env env, napi_value v, int64_t min_len, const char* name) {
  TypedInfo info = typed_info(env, v, name);
  if (info.type != napi_float32_array && info.type != napi_int32_array && info.type != napi_uint32_array)
    throw ArgError{std::string(name) + ": expected a Float32Array or an Int32Array"};
  if (static_cast<int64_t>(info.length) < min_len)
    throw ArgError{std::string(name) + ": expected at least " + std::to_string(min_len) + " elements, got " +
                   std::to_string(info.length)};
  return static_cast<uint32_t*>(info.data);
}

int64_t typed_length(napi_env env, napi_value v, const char* name) {
  return static_cast<int64_t>(typed_info(env, v, name).length);
}

std::vector<int64_t> int_list(napi_env env, napi_value v, const char* name) {
  TypedInfo info = typed_info(env, v, name);
  if (info.type != napi_int32_array) throw ArgError{std::string(name) + ": expected an Int32Array"};
  const int32_t* p = static_cast<const int32_t*>(info.data);
  return std::vector<int64_t>(p, p + info.length);
}

napi_value array_element(napi_env env, napi_value arr, uint32_t i, const char* name) {
  napi_value v;
  if (napi_get_element(env, arr, i, &v) != napi_ok)
    throw ArgError{std::string(name) + ": element " + std::to_string(i) + " is missing"};
  return v;
}

uint32_t array_length(napi_env env, napi_value arr, const char* name) {
  bool is = false;
  napi_is_array(env, arr, &is);
  if (!is) throw ArgError{std::string(name) + ": expected an array"};
  uint32_t n = 0;
  napi_get_array_length(env, arr, &n);
  return n;
}

}  // namespace triad
