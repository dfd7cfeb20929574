// Device-side element types for the _impl.cu files: ElemType -> C++ type, and float conversions.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

template <class T>
struct IsLowFloat : std::false_type {};
template <>
struct IsLowFloat<__half> : std::true_type {};
template <>
struct IsLowFloat<__nv_bfloat16> : std::true_type {};

template <class T>
__device__ __forceinline__ float to_float(T x) {
  return static_cast<float>(x);
}
template <class T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

[[noreturn]] inline void bad_type(const char* where, ElemType t) {
  throw std::runtime_error(std::string(where) + ": element type " +
                           std::to_string(static_cast<int>(t)) + " has no CUDA kernel");
}

// Calls f(T{}) for the float storage types F32, F16, BF16.
template <class F>
void dispatch_float(ElemType t, const char* where, F&& f) {
  switch (t) {
    case ElemType::F32: f(float{}); return;
    case ElemType::F16: f(__half{}); return;
    case ElemType::BF16: f(__nv_bfloat16{}); return;
    default: bad_type(where, t);
  }
}

// Calls f(T{}) for every element type.
template <class F>
void dispatch_all(ElemType t, const char* where, F&& f) {
  switch (t) {
    case ElemType::F32: f(float{}); return;
    case ElemType::F16: f(__half{}); return;
    case ElemType::BF16: f(__nv_bfloat16{}); return;
    case ElemType::F64: f(double{}); return;
    case ElemType::I64: f(int64_t{}); return;
    case ElemType::I32: f(int32_t{}); return;
    case ElemType::I8: f(int8_t{}); return;
    case ElemType::U8: f(uint8_t{}); return;
    case ElemType::Bool: f(bool{}); return;
  }
  bad_type(where, t);
}

#define OAT_GRID_STRIDE_LOOP(i, n)                                                     \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace oat::cuda
