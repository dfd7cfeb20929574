// Launchers of the LayerNormalization kernels (norm_impl.cu); formulas in layer_norm.cc.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// One block per row of n elements; scale/bias are FP32 [n] (null: 1 and 0); mean/inv (FP32 per
// row) are written when not null.
void launch_layer_norm(ElemType t, const void* x, const float* scale, const float* bias, void* y,
                       float* mean, float* inv, int64_t rows, int64_t n, float eps,
                       cudaStream_t s);

// dX per row (when dx is not null), using and writing the row statistics in mean/inv (computed
// here unless have_stats); then, when dscale/dbias are not null, the column sums
// dScale = Σ_rows dY⊙x̂, dBias = Σ_rows dY in FP32, stored as `t`; few columns over many rows
// split the rows over blocks (launch.h split_reduction), with
// layer_norm_grad_scratch_floats(rows, n) floats of FP32 scratch (null when that is 0).
int64_t layer_norm_grad_scratch_floats(int64_t rows, int64_t n);
void launch_layer_norm_grad(ElemType t, const void* dy, const void* x, const float* scale,
                            float* mean, float* inv, bool have_stats, void* dx, void* dscale,
                            void* dbias, float* scratch, int64_t rows, int64_t n, float eps,
                            cudaStream_t s);

}  // namespace oat::cuda
