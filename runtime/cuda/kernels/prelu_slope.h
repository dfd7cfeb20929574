// PRelu's slope as numpy broadcasting must see it, shared by the CUDA PRelu (elementwise.cc) and
// PReluGrad (grad_activation.cc), the rule of runtime/cpu/kernels/activation.cc: before opset 7
// (PReluGrad: attr legacy_slope = 1) a 1-D slope of size C on X [N, C, ...] is per channel
// (axis 1), viewed as [C, 1, ..., 1]; otherwise the slope's own shape (unidirectional
// broadcasting to X, checked by the callers).
#pragma once

#include "runtime/tensor.h"

namespace oat::cuda {

inline Shape prelu_slope_view(const Shape& x, const Shape& slope, bool legacy) {
  if (legacy && slope.size() == 1 && x.size() >= 2 && slope[0] > 1 && slope[0] == x[1]) {
    Shape s(x.size() - 1, 1);
    s[0] = slope[0];
    return s;
  }
  return slope;
}

}  // namespace oat::cuda
