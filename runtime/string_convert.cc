#include "runtime/string_convert.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

namespace oat {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The text without surrounding spaces.
std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool iequals(const std::string& a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i]; ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return i == a.size() && !b[i];
}

[[noreturn]] void not_a_number(const std::string& s, int64_t index, DType to) {
  throw Error(cat("element ", index, " '", s, "' is not a number (cast from string to ",
                  dtype_name(to), ")"));
}

// INF, +INF, -INF, NaN (any case); false when the text is none of them.
bool special_value(const std::string& t, double* v) {
  if (iequals(t, "inf") || iequals(t, "+inf")) {
    *v = std::numeric_limits<double>::infinity();
  } else if (iequals(t, "-inf")) {
    *v = -std::numeric_limits<double>::infinity();
  } else if (iequals(t, "nan") || iequals(t, "+nan") || iequals(t, "-nan")) {
    *v = std::numeric_limits<double>::quiet_NaN();
  } else {
    return false;
  }
  return true;
}

// A decimal or scientific number (strtod's grammar, less its hex floats and "infinity" spellings,
// which are not ONNX's), read once by `read` (strtod, or strtof for float32: one rounding from
// the text either way).
template <class F>
F parse_real(const std::string& t, const std::string& s, int64_t index, DType to,
             F (*read)(const char*, char**)) {
  double special = 0;
  if (special_value(t, &special)) return static_cast<F>(special);
  if (t.empty() || t.find_first_of("xXiInN") != std::string::npos) not_a_number(s, index, to);
  char* end = nullptr;
  const F v = read(t.c_str(), &end);
  if (end != t.c_str() + t.size()) not_a_number(s, index, to);
  return v;  // out of range: ±HUGE_VAL or a denormal/zero, the correctly rounded result
}

double parse_double(const std::string& t, const std::string& s, int64_t index, DType to) {
  return parse_real<double>(t, s, index, to, std::strtod);
}

// A whole integer in int64 (or, for unsigned targets, uint64) range.
template <class T>
bool parse_integer(const std::string& t, T* out) {
  if (t.empty()) return false;
  const char* b = t.c_str() + (t[0] == '+' ? 1 : 0);
  const char* e = t.c_str() + t.size();
  if constexpr (std::is_unsigned_v<T>) {
    if (*b == '-') {  // a negative integer wraps, as an int64 cast to the unsigned type does
      int64_t v = 0;
      auto r = std::from_chars(b, e, v);
      if (r.ec != std::errc() || r.ptr != e) return false;
      *out = static_cast<T>(v);
      return true;
    }
    uint64_t v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || r.ptr != e) return false;
    *out = static_cast<T>(v);
  } else {
    int64_t v = 0;
    auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || r.ptr != e) return false;
    *out = static_cast<T>(v);
  }
  return true;
}

// v as the shortest text that reads back as v of its type (to_chars), in %g's style: scientific
// below 1e-4 and from 1e17 (or the digits' count) up, fixed between; INF, -INF, NaN.
template <class F>
std::string shortest(F v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

// F16 / BF16: the fewest significant digits that round back to the same 16-bit value, then that
// decimal written as shortest() writes a double.
template <class Low, class Round>
std::string shortest_low(Low v, Round round) {
  const double d = static_cast<double>(static_cast<float>(v));
  if (!std::isfinite(d)) return shortest(d);
  char buf[64];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, d);
    const double back = std::strtod(buf, nullptr);
    if (static_cast<float>(round(back)) == static_cast<float>(v)) return shortest(back);
  }
  return shortest(d);
}

}  // namespace

template <class T>
T parse_element(const std::string& s, int64_t index) {
  constexpr DType to = dtype_of<T>();
  const std::string t = trimmed(s);
  if constexpr (std::is_same_v<T, bool>) {
    if (iequals(t, "true")) return true;
    if (iequals(t, "false")) return false;
    int64_t i = 0;
    if (parse_integer(t, &i)) return i != 0;
    const double d = parse_double(t, s, index, to);
    return d != 0.0;  // NaN != 0 is true, as a float Cast to bool
  } else if constexpr (std::is_integral_v<T>) {
    T v{};
    if (parse_integer(t, &v)) return v;
    const double d = parse_double(t, s, index, to);
    if (std::isnan(d)) return T{};
    if constexpr (std::is_unsigned_v<T>)
      if (d < 0) return static_cast<T>(static_cast<int64_t>(d));
    return static_cast<T>(d);
  } else if constexpr (std::is_same_v<T, float>) {
    return parse_real<float>(t, s, index, to, std::strtof);
  } else if constexpr (std::is_same_v<T, double>) {
    return parse_double(t, s, index, to);
  } else if constexpr (std::is_same_v<T, Eigen::half>) {
    return half_from_double(parse_double(t, s, index, to));
  } else {
    static_assert(std::is_same_v<T, Eigen::bfloat16>);
    return bfloat16_from_double(parse_double(t, s, index, to));
  }
}

template float parse_element<float>(const std::string&, int64_t);
template double parse_element<double>(const std::string&, int64_t);
template Eigen::half parse_element<Eigen::half>(const std::string&, int64_t);
template Eigen::bfloat16 parse_element<Eigen::bfloat16>(const std::string&, int64_t);
template bool parse_element<bool>(const std::string&, int64_t);
template int64_t parse_element<int64_t>(const std::string&, int64_t);
template int32_t parse_element<int32_t>(const std::string&, int64_t);
template int16_t parse_element<int16_t>(const std::string&, int64_t);
template int8_t parse_element<int8_t>(const std::string&, int64_t);
template uint64_t parse_element<uint64_t>(const std::string&, int64_t);
template uint32_t parse_element<uint32_t>(const std::string&, int64_t);
template uint16_t parse_element<uint16_t>(const std::string&, int64_t);
template uint8_t parse_element<uint8_t>(const std::string&, int64_t);

std::string format_element(float v) { return shortest(v); }  // float's shortest, not double's

std::string format_element(double v) { return shortest(v); }

std::string format_element(Eigen::half v) {
  return shortest_low(v, [](double d) { return half_from_double(d); });
}

std::string format_element(Eigen::bfloat16 v) {
  return shortest_low(v, [](double d) { return bfloat16_from_double(d); });
}

std::string format_element(bool v) { return v ? "1" : "0"; }
std::string format_element(int64_t v) { return std::to_string(v); }
std::string format_element(uint64_t v) { return std::to_string(v); }

}  // namespace oat
