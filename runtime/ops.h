// OpId: the ops the runtime knows, generated from ops.def.
#pragma once

#include <string>

namespace oat {

enum class OpId : int {
#define OP(name) name,
#include "runtime/ops.def"
#undef OP
  Unknown
};

// Domain of the runtime's own gradient ops (ReluGrad, ConvGrad, ...). Models never contain them:
// the loader rejects this domain; only the autodiff pass emits it.
constexpr const char* kInternalDomain = "ai.onnx_amp_train";

constexpr int kNumOps = static_cast<int>(OpId::Unknown);

const char* op_name(OpId op);
// OpId for an ONNX op type in the default domain; OpId::Unknown when the runtime has no such op.
OpId op_from_name(const std::string& op_type);

}  // namespace oat
