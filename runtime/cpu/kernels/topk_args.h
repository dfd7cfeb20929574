// TopK's operands and attributes, shared by the CPU kernel (topk.cc) and the CUDA one
// (runtime/cuda/kernels/topk.cc), so both fail with the same messages:
//   opset 1:   k is an attribute (required);
//   opset 10+: k is input 1, one int64 value (shape [1] in the spec; a scalar is accepted), read
//              on the host;
//   opset 11+: largest (default 1) and sorted (default 1); before 11 both are 1.
// axis defaults to -1 and must lie in [-rank, rank); X must have rank >= 1; 0 <= k <= dim(axis).
// X is viewed as [outer, len, inner] around the axis; the outputs have X's shape with k on the
// axis.
#pragma once

#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

struct TopKArgs {
  int axis = 0;
  int64_t k = 0;
  bool largest = true, sorted = true;
  int64_t outer = 1, len = 1, inner = 1;
  Shape out_shape;
};

inline TopKArgs topk_args(const KernelContext& ctx, const Shape& xs, const Tensor* k_input) {
  const Node& n = ctx.node();
  TopKArgs a;
  const int r = static_cast<int>(xs.size());
  if (r == 0) ctx.fail("input must have rank 1 or more, got a scalar");
  const int64_t axis = n.attr_int("axis", -1);
  if (axis < -r || axis >= r)
    ctx.fail(cat("axis ", axis, " is out of range for input ", shape_str(xs)));
  a.axis = static_cast<int>(axis < 0 ? axis + r : axis);
  if (n.opset < 10) {
    if (!n.has_attr("k")) ctx.fail("attribute k is required before opset 10");
    a.k = n.attr_int("k", 0);
  } else {
    if (!k_input) ctx.fail("input K (1) is required from opset 10");
    if (k_input->dtype() != DType::I64 && k_input->dtype() != DType::I32)
      ctx.fail(cat("K must be int64, got ", dtype_name(k_input->dtype())));
    if (k_input->numel() != 1)
      ctx.fail(cat("K must hold one value, got shape ", shape_str(k_input->shape())));
    a.k = k_input->item_as_int();
  }
  if (n.opset >= 11) {
    a.largest = n.attr_int("largest", 1) != 0;
    a.sorted = n.attr_int("sorted", 1) != 0;
  }
  a.len = xs[a.axis];
  if (a.k < 0) ctx.fail(cat("k must not be negative, got ", a.k));
  if (a.k > a.len)
    ctx.fail(cat("k = ", a.k, " is larger than axis ", a.axis, " (size ", a.len, ") of input ",
                 shape_str(xs)));
  for (int d = 0; d < a.axis; ++d) a.outer *= xs[d];
  for (int d = a.axis + 1; d < r; ++d) a.inner *= xs[d];
  a.out_shape = xs;
  a.out_shape[a.axis] = a.k;
  return a;
}

}  // namespace oat::cpu
