// The cuDNN view of a pooling window (shared by pool.cc and grad_pool.cc), and the plain view
// the MaxPool-with-Indices kernel takes (pool_impl.h).
#pragma once

#include <vector>

#include "runtime/cpu/kernels/conv_geometry.h"
#include "runtime/cuda/kernels/pool_impl.h"

namespace oat::cuda {

struct PoolWindow {
  std::vector<int> window, pad, stride;  // cuDNN's spatial rank (≥ 2)
  Shape y_shape;
};

// The window of MaxPool/AveragePool on X from the op's attributes (CPU geometry); throws
// Unsupported for what cuDNN cannot express (asymmetric padding, a ceil-mode size change,
// dilation is checked by the caller).
PoolWindow pool_window(const KernelContext& ctx, const cpu::WindowAttrs& attrs, const Shape& x);
// The CPU's window as the MaxPool-with-Indices kernel reads it (every slot copied).
PoolGeometry pool_geometry(const cpu::Window3& w);
// One window over all spatial dims (GlobalAveragePool / GlobalMaxPool).
PoolWindow global_window(const Shape& x);

}  // namespace oat::cuda
