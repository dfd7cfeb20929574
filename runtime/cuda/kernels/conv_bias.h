// The per-channel bias of Conv and ConvTranspose on CUDA, with the elementwise and reduction
// kernels rather than cuDNN's legacy cudnnAddTensor / cudnnConvolutionBackwardBias (whose BF16
// support is not documented):
//   Y[n, m, s...] += B[m]                       in Y's dtype (float arithmetic, one rounding)
//   dB[m] = Σ_{n, s} dY[n, m, s]                FP32 accumulation, stored in dB's dtype (dY's,
//                                               or F32 for grad_type = FLOAT)
#pragma once

#include "runtime/kernel.h"

namespace oat::cuda {

// y: [N, M, spatial...] on the device; b: [M] of y's dtype.
void add_channel_bias(const KernelContext& ctx, const Tensor& b, Tensor& y);
// dy: [N, M, spatial...]; db: [M], dy's dtype or F32.
void channel_bias_grad(const KernelContext& ctx, const Tensor& dy, Tensor& db);

}  // namespace oat::cuda
