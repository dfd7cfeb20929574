// The cuDNN view of a pooling window (shared by pool.cc and grad_pool.cc), and the plain view
// the MaxPool-with-Indices kernel takes (pool_impl.h).
#pragma once

#include <cudnn.h>

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
// The same window as the CPU's Window3 (the own kernels' view of a global pool); fails naming X
// when it has more than 3 spatial dims (the own kernels' limit).
cpu::Window3 global_window3(const KernelContext& ctx, const Shape& x);

// cuDNN's legacy pooling documents F32, F16, F64 and the int8 types; BF16 is not listed. A pool
// kernel therefore takes a BF16 refusal (a BAD_PARAM* or NOT_SUPPORTED* status from
// cudnnPoolingForward/Backward, returned before anything is queued) as "run pool_impl.h's own
// kernels", for that call and every later one of the kernel. F32/F16 refusals stay errors.
inline bool cudnn_refuses_dtype(cudnnStatus_t s, DType t) {
  const int category = static_cast<int>(s) / 1000;  // cuDNN 9: 2xxx BAD_PARAM, 3xxx NOT_SUPPORTED
  return t == DType::BF16 && (category == 2 || category == 3);
}

}  // namespace oat::cuda
