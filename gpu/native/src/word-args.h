// Arguments of the data-movement kernels: tensors of 32-bit words (a Float32Array or an Int32Array,
// read as raw bits, no copy), arrays of such tensors, and small integer lists (shapes, strides).
#pragma once
#include <node_api.h>

#include <cstdint>
#include <vector>

#include "napi-args.h"

namespace triad {

/** A Float32Array or Int32Array as 32-bit words; throws ArgError unless it has >= `min_len` elements. */
uint32_t* words_arg(napi_env env, napi_value v, int64_t min_len, const char* name);

/** Elements of typed array `v` (an ArgError for anything else). */
int64_t typed_length(napi_env env, napi_value v, const char* name);

/** An Int32Array read into int64 values (shapes, strides, permutations). */
std::vector<int64_t> int_list(napi_env env, napi_value v, const char* name);

/** Element `i` of the JavaScript array `arr`. */
napi_value array_element(napi_env env, napi_value arr, uint32_t i, const char* name);

/** Length of the JavaScript array `arr`. */
uint32_t array_length(napi_env env, napi_value arr, const char* name);

}  // namespace triad
