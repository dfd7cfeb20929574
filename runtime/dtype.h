// Element types the runtime stores, and their mapping to C++ types.
//
// The set follows the issue: F32, F16, BF16, F64, I64, I32, I8, U8, BOOL, and ONNX's other
// integer types I16, U16, U32, U64 (stored, moved, cast and compared; the arithmetic kernels that
// take them are the ones ONNX's cases use: Max, Min, Mod, BitShift, Pow's exponent). F16 and BF16
// are stored as Eigen::half / Eigen::bfloat16 so the CPU path can emulate low precision exactly
// (DESIGN.md). The first nine keep their order: the CUDA backend's ElemType mirrors them.
// String tensors (ONNX's STRING: UTF-8 bytes, one std::string an element) live on the host only;
// they are read by the string ops (Cast, StringNormalizer, TfIdfVectorizer) and moved by the
// shape and movement ops (runtime/string_moves.h). dispatch_dtype() leaves String out, so a
// numeric kernel given one fails by name instead of reading its bytes as numbers.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"

namespace oat {

enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  F64,
  I64,
  I32,
  I8,
  U8,
  Bool,
  I16,
  U16,
  U32,
  U64,
  String,
  Undefined
};

constexpr int kNumDTypes = static_cast<int>(DType::Undefined);

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "float16", ...
bool is_floating(DType t);        // F32, F16, BF16, F64
bool is_integer(DType t);         // I64, I32, I16, I8, U64, U32, U16, U8
bool is_low_float(DType t);       // F16, BF16: 16-bit storage, arithmetic in float
bool is_numeric(DType t);         // every stored type but String (and Undefined)

// Bulk conversion between the 16-bit float storage types and float, for the emulation of FP16 and
// BF16 on the CPU (DESIGN.md "Mixed precision"). Widening is exact. Narrowing rounds to nearest
// even, as Eigen::half(float) / Eigen::bfloat16(float) and ONNX Cast do; FP16 overflows to ±Inf
// (|x| >= 65520), values below half the smallest subnormal (2^-25) become ±0; NaN stays NaN.
// Vectorised (F16C vcvtph2ps / vcvtps2ph where the CPU has it; BF16 is 16-bit shifts); one thread.
void widen_to_float(const Eigen::half* src, float* dst, int64_t n);
void widen_to_float(const Eigen::bfloat16* src, float* dst, int64_t n);
void round_from_float(const float* src, Eigen::half* dst, int64_t n);
void round_from_float(const float* src, Eigen::bfloat16* dst, int64_t n);
// A double rounded once to F16/BF16 (not through float, which could round twice): the double is
// first narrowed to float with round-to-odd, which float's 13 spare bits make exact for the second
// rounding.
Eigen::half half_from_double(double v);
Eigen::bfloat16 bfloat16_from_double(double v);

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
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::I16;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::U16;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::U32;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::U64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::String;
};

template <class T>
constexpr DType dtype_of() {
  return DTypeOf<T>::value;
}

// Calls f(T{}) with T the C++ type of `t`; throws for Undefined and String (kernels that take
// strings read them as data<std::string>() themselves).
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
    case DType::I16:
      return f(int16_t{});
    case DType::U16:
      return f(uint16_t{});
    case DType::U32:
      return f(uint32_t{});
    case DType::U64:
      return f(uint64_t{});
    default: break;
  }
  throw Error(std::string("unsupported dtype ") + dtype_name(t));
}

}  // namespace oat
