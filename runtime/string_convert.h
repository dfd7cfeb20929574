// Numbers to and from ONNX string elements (UTF-8 text), for Cast / CastLike with STRING on
// either side (cast_tensor in runtime/tensor.cc).
//
// From a string (ONNX Cast): plain ("3.14", "1000") and scientific ("1e-5", "1E8") numbers,
// surrounding spaces allowed; "INF" / "+INF", "-INF" and "NaN", in any case, are the special
// values. Floating targets are rounded once from the text (strtof, strtod; F16/BF16 through
// half_from_double). Integer targets take a whole integer exactly (int64 / uint64 range, then
// wrapped to the type as an integer Cast does); other numbers ("100.5") are read as a double and
// truncated toward zero, as a float Cast does. Bool is the number != 0 ("true" / "false" are
// accepted too). Anything else is an Error naming the element and the text.
//
// To a string: integers in decimal, bool as "1" / "0" (as ONNX Runtime), floating values as the
// shortest decimal that reads back as the same value of their own type (float32 0.039187793 is
// "0.039187793", float16 0.1 is "0.1"), in %g's style (std::to_chars general: "100000",
// "0.0001", "1e-05", "1e+20"); the special values are "INF", "-INF" and "NaN".
#pragma once

#include <cstdint>
#include <string>

#include "runtime/dtype.h"

namespace oat {

template <class T>
T parse_element(const std::string& s, int64_t index);

std::string format_element(float v);
std::string format_element(double v);
std::string format_element(Eigen::half v);
std::string format_element(Eigen::bfloat16 v);
std::string format_element(bool v);
std::string format_element(int64_t v);
std::string format_element(uint64_t v);
inline std::string format_element(int32_t v) { return format_element(static_cast<int64_t>(v)); }
inline std::string format_element(int16_t v) { return format_element(static_cast<int64_t>(v)); }
inline std::string format_element(int8_t v) { return format_element(static_cast<int64_t>(v)); }
inline std::string format_element(uint32_t v) { return format_element(static_cast<uint64_t>(v)); }
inline std::string format_element(uint16_t v) { return format_element(static_cast<uint64_t>(v)); }
inline std::string format_element(uint8_t v) { return format_element(static_cast<uint64_t>(v)); }

}  // namespace oat
