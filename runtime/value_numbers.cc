#include "runtime/value_numbers.h"

#include <string>
#include <vector>

namespace oat {

Tensor flat_values(const Tensor& v) {
  if (v.is_tensor()) return v;
  std::vector<float> all;
  auto add = [&](const Tensor& x) {
    const std::vector<float> f = x.to_float_vector();
    all.insert(all.end(), f.begin(), f.end());
  };
  if (v.kind() == ValueKind::Map) {
    if (v.dtype() == DType::Undefined || v.dtype() == DType::String) return Tensor();
    add(v.map_values());
  } else if (v.kind() == ValueKind::Sequence) {
    if (v.dtype() == DType::String) return Tensor();
    for (const Tensor& item : v.items()) {
      if (item.kind() == ValueKind::Map) add(item.map_values());
      else if (item.is_tensor()) add(item);
      else return Tensor();
    }
  } else {
    return Tensor();
  }
  return Tensor::from_vector<float>({static_cast<int64_t>(all.size())}, all);
}

bool same_keys(const Tensor& a, const Tensor& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is_tensor()) return true;
  if (a.kind() == ValueKind::Map) {
    const Tensor &ka = a.map_keys(), &kb = b.map_keys();
    if (ka.dtype() != kb.dtype() || ka.numel() != kb.numel()) return false;
    if (ka.dtype() == DType::String) {
      for (int64_t i = 0; i < ka.numel(); ++i)
        if (ka.data<std::string>()[i] != kb.data<std::string>()[i]) return false;
      return true;
    }
    return ka.to_int_vector() == kb.to_int_vector();
  }
  if (a.items().size() != b.items().size()) return false;
  for (size_t i = 0; i < a.items().size(); ++i)
    if (!same_keys(a.items()[i], b.items()[i])) return false;
  return true;
}

}  // namespace oat
