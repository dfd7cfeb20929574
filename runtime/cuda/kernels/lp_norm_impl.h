// Launchers of the LpNormalization kernels (lp_norm_impl.cu); formulas in lp_norm.cc and
// runtime/cpu/kernels/lp_norm.cc. FP32 accumulation for F32/F16/BF16 storage, one rounding.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// x, y viewed as [outer, len, inner]; along the middle axis n = Σ|x| (p = 1) or sqrt(Σx²) (p = 2),
// y = x / n, 0 where n = 0.
void launch_lp_norm(ElemType t, int p, const void* x, void* y, int64_t outer, int64_t len,
                    int64_t inner, cudaStream_t s);

// The gradient on the same view: with t = Σ dY⊙x, dX = (dY − ∂n/∂x · (t / n)) / n where
// ∂n/∂x = x / n (p = 2) or sign(x) (p = 1); 0 where n = 0.
void launch_lp_norm_grad(ElemType t, int p, const void* dy, const void* x, void* dx,
                         int64_t outer, int64_t len, int64_t inner, cudaStream_t s);

}  // namespace oat::cuda
