// The checks and attributes shared by the classification losses (loss.cc) and their gradients
// (grad_loss.cc): NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss with input [N, C, d1, ...],
// target [N, d1, ...] (int32/int64 class indices), optional weight [C], reduction and
// ignore_index.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/kernel.h"

namespace oat::cpu {

enum class Reduction { None, Sum, Mean };

struct LossAttrs {
  Reduction reduction = Reduction::Mean;
  std::optional<int64_t> ignore_index;
};

// reduction (default mean; anything but none/sum/mean is an error naming the node) and the
// optional ignore_index.
inline LossAttrs parse_loss_attrs(const Node& n) {
  LossAttrs a;
  const std::string r = n.attr_string("reduction", "mean");
  if (r == "none") {
    a.reduction = Reduction::None;
  } else if (r == "sum") {
    a.reduction = Reduction::Sum;
  } else if (r == "mean") {
    a.reduction = Reduction::Mean;
  } else {
    throw Error(cat(n.describe(), ": reduction '", r, "' is not one of none, sum, mean"));
  }
  if (n.has_attr("ignore_index")) a.ignore_index = n.attr_int("ignore_index", -100);
  return a;
}

// The target's shape for an input of shape in_shape: in_shape without dimension 1. Fails unless
// the input is [N, C, ...] and the target has exactly that shape.
inline Shape loss_target_shape(const KernelContext& ctx, const Shape& in_shape,
                               const Tensor& target) {
  if (in_shape.size() < 2) ctx.fail(cat("input must be [N, C, ...], got ", shape_str(in_shape)));
  Shape want(in_shape);
  want.erase(want.begin() + 1);
  if (target.shape() != want)
    ctx.fail(cat("target ", shape_str(target.shape()), " does not match input ",
                 shape_str(in_shape), " (expected ", shape_str(want), ")"));
  return want;
}

// The target's class indices as int64 (int32 or int64 targets; anything else fails).
inline std::vector<int64_t> target_indices(const KernelContext& ctx, const Tensor& t) {
  if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
    ctx.fail(cat("target must be int32 or int64, got ", dtype_name(t.dtype())));
  if (t.dtype() == DType::I64) return {t.data<int64_t>(), t.data<int64_t>() + t.numel()};
  return {t.data<int32_t>(), t.data<int32_t>() + t.numel()};
}

// The optional class weight must be a [C] vector of the input's dtype.
inline void check_loss_weight(const KernelContext& ctx, const Tensor* weight, int64_t C,
                              DType want) {
  if (weight && (weight->rank() != 1 || weight->dim(0) != C || weight->dtype() != want))
    ctx.fail(cat("weight ", dtype_name(weight->dtype()), " ", shape_str(weight->shape()),
                 " must be ", dtype_name(want), " [", C, "]"));
}

}  // namespace oat::cpu
