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
// OpId for an ONNX op type in the default domain; OpId::Unknown when the runtime has no such op
// (or only an ai.onnx.ml op of that name).
OpId op_from_name(const std::string& op_type);
// OpId for an op type of domain ai.onnx.ml (ML_OP in ops.def); OpId::Unknown otherwise.
OpId ml_op_from_name(const std::string& op_type);
// OpId for an op type in a model's domain: "" or "ai.onnx" (op_from_name), "ai.onnx.ml"
// (ml_op_from_name); OpId::Unknown for any other domain.
OpId op_from_domain(const std::string& domain, const std::string& op_type);
// Whether op is one of domain ai.onnx.ml.
bool is_ml_op(OpId op);

constexpr const char* kMlDomain = "ai.onnx.ml";

}  // namespace oat
