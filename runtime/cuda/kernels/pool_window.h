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

// Whether cuDNN's pooling can run the CPU's window w: no dilation, symmetric padding and
// floor-mode output sizes. The others run the own kernels of pool_impl.h.
bool cudnn_pool_window(const cpu::Window3& w);
// The cuDNN view of w (cudnn_pool_window(w) holds) on X of shape x.
PoolWindow cudnn_view(const cpu::Window3& w, const Shape& x);
// The CPU's window as the MaxPool-with-Indices kernel reads it (every slot copied).
PoolGeometry pool_geometry(const cpu::Window3& w);
// One window over all spatial dims (GlobalAveragePool / GlobalMaxPool).
PoolWindow global_window(const Shape& x);

}  // namespace oat::cuda
