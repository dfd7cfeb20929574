// UTF-8 text to and from code points, for the string ops (StringNormalizer's case mapping) and
// the .npy unicode arrays ('<U', UTF-32) of onnx_loader/tensor_io.cc.
#pragma once

#include <string>

namespace oat {

// The code points of the UTF-8 text `s`; false for invalid UTF-8 (a bad lead or continuation
// byte, a truncated sequence, an overlong form, a surrogate, a value past U+10FFFF).
inline bool decode_utf8(const std::string& s, std::u32string* out) {
  out->clear();
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (!len || i + len > s.size()) return false;
    char32_t c = len == 1 ? b : b & (0x7f >> len);
    for (int k = 1; k < len; ++k) {
      const auto cont = static_cast<unsigned char>(s[i + k]);
      if ((cont >> 6) != 2) return false;
      c = (c << 6) | (cont & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    static const char32_t min_of_len[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min_of_len[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
    out->push_back(c);
    i += static_cast<size_t>(len);
  }
  return true;
}

// The UTF-8 text of code points `cps` (each at most U+10FFFF).
inline void encode_utf8(const std::u32string& cps, std::string* out) {
  out->clear();
  for (char32_t c : cps) {
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else if (c < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (c >> 12)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (c >> 18)));
      out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  }
}

}  // namespace oat
