#include "runtime/ops.h"

#include <string_view>
#include <unordered_map>
#include <vector>

namespace oat {

namespace {
constexpr const char* kOpNames[] = {
#define OP(name) #name,
#include "runtime/ops.def"
#undef OP
};
// Keeps the enum and its name table in step (ggml's op-count check).
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == kNumOps, "ops.def enum/name mismatch");

// The ai.onnx.ml ops, by the ML_OP lines of ops.def.
bool ml_flag(OpId op) {
  static const std::vector<bool> flags = [] {
    std::vector<bool> f(kNumOps, false);
    int i = 0;
#define OP(name) ++i;
#define ML_OP(name) f[static_cast<size_t>(i++)] = true;
#include "runtime/ops.def"
#undef ML_OP
#undef OP
    return f;
  }();
  const int i = static_cast<int>(op);
  return i >= 0 && i < kNumOps && flags[static_cast<size_t>(i)];
}

OpId lookup(const std::string& op_type, bool ml) {
  static const std::unordered_map<std::string_view, OpId> table = [] {
    std::unordered_map<std::string_view, OpId> t;
    for (int i = 0; i < kNumOps; ++i) t.emplace(kOpNames[i], static_cast<OpId>(i));
    return t;
  }();
  auto it = table.find(op_type);
  if (it == table.end() || ml_flag(it->second) != ml) return OpId::Unknown;
  return it->second;
}

}  // namespace

const char* op_name(OpId op) {
  int i = static_cast<int>(op);
  return i >= 0 && i < kNumOps ? kOpNames[i] : "Unknown";
}

bool is_ml_op(OpId op) { return ml_flag(op); }

OpId op_from_name(const std::string& op_type) { return lookup(op_type, false); }

OpId ml_op_from_name(const std::string& op_type) { return lookup(op_type, true); }

OpId op_from_domain(const std::string& domain, const std::string& op_type) {
  if (domain.empty() || domain == "ai.onnx") return op_from_name(op_type);
  if (domain == kMlDomain) return ml_op_from_name(op_type);
  return OpId::Unknown;
}

}  // namespace oat
