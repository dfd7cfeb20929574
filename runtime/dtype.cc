#include "runtime/dtype.h"

#include <cmath>
#include <cstring>
#ifdef __F16C__
#include <immintrin.h>
#endif

namespace oat {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::F64: return 8;
    case DType::I64: return 8;
    case DType::I32: return 4;
    case DType::I8: return 1;
    case DType::U8: return 1;
    case DType::Bool: return 1;
    case DType::I16:
      return 2;
    case DType::U16:
      return 2;
    case DType::U32:
      return 4;
    case DType::U64:
      return 8;
    case DType::String:
      return sizeof(std::string);
    case DType::Undefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F64: return "float64";
    case DType::I64: return "int64";
    case DType::I32: return "int32";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
    case DType::Bool: return "bool";
    case DType::I16:
      return "int16";
    case DType::U16:
      return "uint16";
    case DType::U32:
      return "uint32";
    case DType::U64:
      return "uint64";
    case DType::String:
      return "string";
    case DType::Undefined: return "undefined";
  }
  return "undefined";
}

bool is_floating(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

bool is_integer(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8 ||
         t == DType::I16 || t == DType::U16 || t == DType::U32 || t == DType::U64;
}

bool is_low_float(DType t) { return t == DType::F16 || t == DType::BF16; }

bool is_numeric(DType t) { return t != DType::String && t != DType::Undefined; }

void widen_to_float(const Eigen::half* src, float* dst, int64_t n) {
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

void widen_to_float(const Eigen::bfloat16* src, float* dst, int64_t n) {
  // f32 bits = bf16 bits << 16 (a loop GCC vectorises).
  const auto* s = reinterpret_cast<const uint16_t*>(src);
  auto* d = reinterpret_cast<uint32_t*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<uint32_t>(s[i]) << 16;
}

void round_from_float(const float* src, Eigen::half* dst, int64_t n) {
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = Eigen::half(src[i]);
}

void round_from_float(const float* src, Eigen::bfloat16* dst, int64_t n) {
  // Round to nearest even on the bit pattern: (u + 0x7fff + lsb) >> 16; a NaN keeps its sign and
  // high payload bits with the quiet bit set (the carry could otherwise turn it into Inf).
  const auto* s = reinterpret_cast<const uint32_t*>(src);
  auto* d = reinterpret_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = s[i];
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    const uint16_t rounded = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    d[i] = nan ? static_cast<uint16_t>((u >> 16) | 0x40u) : rounded;
  }
}

namespace {

// v narrowed to float rounding to odd: truncate toward zero, then set the last mantissa bit when
// the result is inexact. Rounding that float to a format with at most 22 mantissa bits then gives
// the correctly rounded result of v.
float float_round_to_odd(double v) {
  if (!std::isfinite(v)) return static_cast<float>(v);
  float f = static_cast<float>(v);  // nearest even
  if (static_cast<double>(f) == v || std::isinf(f)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u |= 1u;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

Eigen::half half_from_double(double v) { return Eigen::half(float_round_to_odd(v)); }
Eigen::bfloat16 bfloat16_from_double(double v) { return Eigen::bfloat16(float_round_to_odd(v)); }

}  // namespace oat
