// Trilu's operand checks, shared by the CPU kernel (trilu.cc) and the CUDA one
// (runtime/cuda/kernels/movement.cc): X has rank ≥ 2; k, when given, is one int64 (or int32)
// value on the host. Returns k (0 when the input is omitted).
#pragma once

#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

inline int64_t trilu_k(const KernelContext& ctx, const Tensor* k, const Shape& x) {
  if (x.size() < 2) ctx.fail(cat("input must have rank 2 or more, got ", shape_str(x)));
  if (!k) return 0;
  if (k->dtype() != DType::I64 && k->dtype() != DType::I32)
    ctx.fail(cat("k must be int64, got ", dtype_name(k->dtype())));
  if (k->numel() != 1) ctx.fail(cat("k must be a scalar, got shape ", shape_str(k->shape())));
  return k->item_as_int();
}

}  // namespace oat::cpu
