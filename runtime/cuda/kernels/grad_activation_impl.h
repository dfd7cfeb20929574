// Launchers of the activation-gradient kernels (grad_activation_impl.cu): dX = dY ⊙ f'(V) with V
// the saved input X or output Y (see runtime/cpu/kernels/grad_activation.cc for which).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

enum class ActGrad : int {
  Relu, LeakyRelu, Sigmoid, Tanh, Gelu, GeluTanh, Clip, Elu, Softplus, HardSigmoid, HardSwish
};
// a, b: LeakyRelu α; Clip lo, hi; Elu α, γ; HardSigmoid α, β.
void launch_activation_grad(ActGrad op, ElemType t, const void* dy, const void* v, void* dx,
                            int64_t n, float a, float b, cudaStream_t s);

// PReluGrad over X's n elements, slope read at the offset of operand 0 of `ix` (X's shape):
//   dx = dY ⊙ (X < 0 ? slope : 1)          (skipped when dx is null)
//   prod = dY ⊙ (X < 0 ? X : 0) in FP32    (skipped when prod is null; summed to slope's shape
//                                           by the caller)
void launch_prelu_grad(ElemType t, const void* dy, const void* x, const void* slope, void* dx,
                       float* prod, int64_t n, const BroadcastIndex& ix, cudaStream_t s);

}  // namespace oat::cuda
