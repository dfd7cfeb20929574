// Launchers of the BatchNormalization kernels (batch_norm_impl.cu); formulas in batch_norm.cc.
// X is viewed as [N, C, S]: C statistics channels of N chunks of S contiguous elements; every
// per-channel array is FP32 [C], except scale and bias, which have `params` entries (channel c
// reads scale[c % params]; params = 0 means C). Instance statistics are N·C channels of one
// plane each: {N = 1, C = N·C, S, params = C}; per-activation statistics (spatial = 0) are C·S
// channels of S = 1.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

struct ChannelShape {
  int64_t N = 0, C = 0, S = 1;
  int64_t params = 0;
};

// Batch statistics per channel (population variance), one block per channel.
void launch_bn_stats(ElemType t, const void* x, float* mean, float* var, ChannelShape sh,
                     cudaStream_t s);
// Y = (x − mean)/√(var + ε)·scale + bias.
void launch_bn_apply(ElemType t, const void* x, void* y, const float* mean, const float* var,
                     const float* scale, const float* bias, float eps, ChannelShape sh,
                     cudaStream_t s);
// out = a·p + (1 − a)·q over n floats (running statistics: a = momentum).
void launch_bn_blend(const float* p, const float* q, float* out, float a, int64_t n,
                     cudaStream_t s);
// Per channel: sum_dy = Σ dY, sum_dyxh = Σ dY⊙x̂, x̂ = (x − mean)/√(var + ε).
void launch_bn_grad_sums(ElemType t, const void* dy, const void* x, const float* mean,
                         const float* var, float eps, float* sum_dy, float* sum_dyxh,
                         ChannelShape sh, cudaStream_t s);
// dX = γ/σ·(dY − Σ dY/m − x̂·Σ dY⊙x̂/m) (training) or γ/σ·dY (inference), m = N·S.
void launch_bn_grad_dx(ElemType t, const void* dy, const void* x, const float* mean,
                       const float* var, const float* scale, const float* sum_dy,
                       const float* sum_dyxh, bool training, float eps, void* dx, ChannelShape sh,
                       cudaStream_t s);

}  // namespace oat::cuda
