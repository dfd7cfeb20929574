// Element types the runtime stores, and their mapping to C++ types.
//
// The set follows the issue: F32, F16, BF16, F64, I64, I32, I8, U8, BOOL. F16 and BF16 are stored as
// Eigen::half / Eigen::bfloat16 so the CPU path can emulate low precision exactly (DESIGN.md).
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"

namespace oat {

enum class DType : uint8_t { F32, F16, BF16, F64, I64, I32, I8, U8, Bool, Undefined };

constexpr int kNumDTypes = static_cast<int>(DType::Undefined);

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "float16", ...
bool is_floating(DType t);        // F32, F16, BF16, F64
bool is_integer(DType t);         // I64, I32, I8, U8

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::F32;
};
template <>
struct DTypeOf<Eigen::half> {
  static constexpr DType value = DType::F16;
};
template <>
struct DTypeOf<Eigen::bfloat16> {
  static constexpr DType value = DType::BF16;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::F64;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::I64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::I32;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::I8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::U8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};

template <class T>
constexpr DType dtype_of() {
  return DTypeOf<T>::value;
}

// Calls f(T{}) with T the C++ type of `t`; throws for Undefined.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(float{});
    case DType::F16: return f(Eigen::half{});
    case DType::BF16: return f(Eigen::bfloat16{});
    case DType::F64: return f(double{});
    case DType::I64: return f(int64_t{});
    case DType::I32: return f(int32_t{});
    case DType::I8: return f(int8_t{});
    case DType::U8: return f(uint8_t{});
    case DType::Bool: return f(bool{});
    default: break;
  }
  throw Error(std::string("unsupported dtype ") + dtype_name(t));
}

}  // namespace oat
