// Launchers of the BatchNormalization kernels (batch_norm_impl.cu); formulas in batch_norm.cc.
// X is viewed as [N, C, S]: C statistics channels of N chunks of S contiguous elements; every
// per-channel array is FP32 [C], except scale and bias, which have `params` entries (channel c
// reads scale[c % params]; params = 0 means C). Instance statistics are N·C channels of one
// plane each: {N = 1, C = N·C, S, params = C}; per-activation statistics (spatial = 0) are C·S
// channels of S = 1.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

struct ChannelShape {
  int64_t N = 0, C = 0, S = 1;
  int64_t params = 0;
};

// How the per-channel reductions (statistics, gradient sums) split a channel's m = N·S elements
// over blocks: `splits` blocks of `chunk` consecutive elements (the last may be shorter or
// empty), about kBnChunk each and at most kBnMaxSplits, so that few channels with many elements
// (ResNet's first layers: 64 channels of N·112·112) still fill the device.
struct BnSplit {
  int64_t splits = 1, chunk = 0;
};
constexpr int64_t kBnChunk = 8192, kBnMaxSplits = 256;
inline BnSplit bn_split(const ChannelShape& sh) {
  const int64_t m = sh.N * sh.S;
  BnSplit sp;
  sp.splits = std::min(std::max<int64_t>((m + kBnChunk - 1) / kBnChunk, 1), kBnMaxSplits);
  sp.chunk = (m + sp.splits - 1) / sp.splits;
  return sp;
}
// Merges a block's statistics (nb elements, mean mb, M2 m2b) into the running (n, mu, m2) of its
// channel (Chan, Golub, LeVeque): δ = mb − mu, mu += δ·nb/(n + nb), m2 += m2b + δ²·n·nb/(n + nb).
__host__ __device__ inline void bn_merge_stats(double& n, double& mu, double& m2, double nb,
                                               double mb, double m2b) {
  if (nb <= 0) return;
  const double tot = n + nb, d = mb - mu;
  mu += d * nb / tot;
  m2 += m2b + d * d * n * nb / tot;
  n = tot;
}

// Floats of device scratch the two reductions need (two per block).
inline int64_t bn_partial_floats(const ChannelShape& sh) { return 2 * sh.C * bn_split(sh).splits; }

// Batch statistics per channel (population variance): per block the chunk's mean and
// M2 = Σ (x − mean)² (two passes over the chunk), merged per channel in double (Chan et al.).
// `partials`: bn_partial_floats(sh) floats of scratch.
void launch_bn_stats(ElemType t, const void* x, float* mean, float* var, float* partials,
                     ChannelShape sh, cudaStream_t s);
// Y = (x − mean)/√(var + ε)·scale + bias.
void launch_bn_apply(ElemType t, const void* x, void* y, const float* mean, const float* var,
                     const float* scale, const float* bias, float eps, ChannelShape sh,
                     cudaStream_t s);
// out = a·p + (1 − a)·q over n floats (running statistics: a = momentum).
void launch_bn_blend(const float* p, const float* q, float* out, float a, int64_t n,
                     cudaStream_t s);
// Per channel: sum_dy = Σ dY, sum_dyxh = Σ dY⊙x̂, x̂ = (x − mean)/√(var + ε); per-block partial
// sums added per channel in double. `partials`: bn_partial_floats(sh) floats of scratch.
void launch_bn_grad_sums(ElemType t, const void* dy, const void* x, const float* mean,
                         const float* var, float eps, float* sum_dy, float* sum_dyxh,
                         float* partials, ChannelShape sh, cudaStream_t s);
// dX = γ/σ·(dY − Σ dY/m − x̂·Σ dY⊙x̂/m) (training) or γ/σ·dY (inference), m = N·S.
void launch_bn_grad_dx(ElemType t, const void* dy, const void* x, const float* mean,
                       const float* var, const float* scale, const float* sum_dy,
                       const float* sum_dyxh, bool training, float eps, void* dx, ChannelShape sh,
                       cudaStream_t s);

}  // namespace oat::cuda
