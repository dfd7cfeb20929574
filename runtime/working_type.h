// The `working_type` attribute of SGDUpdate and AdamUpdate (internal domain): the fused
// working copy (issue #5, "fused SGD/Adam/AdamW updates on the FP32 master weights that also
// write the FP16/BF16 working copies").
//
// The updates' optional last output (SGDUpdate: output 2, after V'; AdamUpdate: output 3, after
// M' and V') receives P' — the updated FP32 master, or P itself on a skipped step — rounded once
// to `working_type` (TensorProto code 10 = FLOAT16, the default; 16 = BFLOAT16), the copy that
// the low-precision nodes of the next step read. It equals Cast(P', to = working_type) exactly,
// so a training graph that keeps working copies as state (train/training_graph.cc) computes the
// same numbers as one that casts every master each step, with one pass over P' fewer.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/dtype.h"

namespace oat {

constexpr const char* kWorkingTypeAttr = "working_type";
constexpr int kSgdWorkingOutput = 2;
constexpr int kAdamWorkingOutput = 3;

// F16 or BF16 for a valid code, nothing otherwise (the kernels name the bad code).
inline std::optional<DType> working_dtype(int64_t code) {
  if (code == 10) return DType::F16;
  if (code == 16) return DType::BF16;
  return std::nullopt;
}

// The attribute's value for a working copy of dtype `t` (F16 or BF16).
inline int64_t working_type_code(DType t) { return t == DType::BF16 ? 16 : 10; }

}  // namespace oat
