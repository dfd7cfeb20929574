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

}  // namespace oat::cpu
