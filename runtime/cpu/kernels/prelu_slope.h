// PRelu's slope as numpy broadcasting must see it, shared by PRelu (activation.cc) and PReluGrad
// (grad_activation.cc) on the CPU and on CUDA (runtime/cuda/kernels/elementwise.cc,
// grad_activation.cc): before opset 7 (PReluGrad: attr legacy_slope = 1) a 1-D slope of size C on
// X [N, C, ...] is per channel (axis 1, as in Caffe), viewed as [C, 1, ..., 1]; otherwise the
// slope's own shape. Either way it must broadcast unidirectionally to X.
#pragma once

#include "runtime/cpu/broadcast.h"
#include "runtime/error.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace oat::cpu {

inline Shape prelu_slope_view(const Shape& x, const Shape& slope, bool legacy) {
  if (legacy && slope.size() == 1 && x.size() >= 2 && slope[0] > 1 && slope[0] == x[1]) {
    Shape s(x.size() - 1, 1);
    s[0] = slope[0];
    return s;
  }
  return slope;
}

// prelu_slope_view, failing (naming the node) unless it broadcasts unidirectionally to X.
inline Shape checked_prelu_slope(const KernelContext& ctx, const Shape& x, const Shape& slope,
                                 bool legacy) {
  const Shape s = prelu_slope_view(x, slope, legacy);
  Shape b;
  try {
    b = broadcast_shapes({x, s});
  } catch (const Error& e) {
    ctx.fail(e.what());
  }
  if (b != x)
    ctx.fail(cat("slope shape ", shape_str(slope), " does not broadcast unidirectionally to X shape ",
                 shape_str(x)));
  return s;
}

// PReluGrad's operands (dY, X, slope): X must have dY's dtype and shape and the slope X's dtype;
// then checked_prelu_slope. Shared by the CPU and CUDA PReluGrad kernels.
inline Shape checked_prelu_grad_slope(const KernelContext& ctx, const Tensor& dy, const Tensor& x,
                                      const Tensor& slope, bool legacy) {
  if (x.dtype() != dy.dtype() || x.shape() != dy.shape())
    ctx.fail(cat("input 1 is ", dtype_name(x.dtype()), " ", shape_str(x.shape()),
                 " but the gradient dY is ", dtype_name(dy.dtype()), " ", shape_str(dy.shape())));
  if (slope.dtype() != x.dtype())
    ctx.fail(cat("slope has dtype ", dtype_name(slope.dtype()), ", X has ", dtype_name(x.dtype())));
  return checked_prelu_slope(ctx, x.shape(), slope.shape(), legacy);
}

}  // namespace oat::cpu
