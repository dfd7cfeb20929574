#include "runtime/ops.h"

#include <string_view>
#include <unordered_map>

namespace oat {

namespace {
constexpr const char* kOpNames[] = {
#define OP(name) #name,
#include "runtime/ops.def"
#undef OP
};
// Keeps the enum and its name table in step (ggml's op-count check).
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == kNumOps, "ops.def enum/name mismatch");
}  // namespace

const char* op_name(OpId op) {
  int i = static_cast<int>(op);
  return i >= 0 && i < kNumOps ? kOpNames[i] : "Unknown";
}

OpId op_from_name(const std::string& op_type) {
  static const std::unordered_map<std::string_view, OpId> table = [] {
    std::unordered_map<std::string_view, OpId> t;
    for (int i = 0; i < kNumOps; ++i) t.emplace(kOpNames[i], static_cast<OpId>(i));
    return t;
  }();
  auto it = table.find(op_type);
  return it == table.end() ? OpId::Unknown : it->second;
}

}  // namespace oat
