// Launchers of the classification-loss kernels (loss_impl.cu); formulas in loss.cc.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

enum class LossReduction : int { None, Sum, Mean };

struct LossShape {
  int64_t N = 0, C = 0, D = 1;  // input [N, C, D...] viewed as [N, C, D]
  bool has_ignore = false;
  int64_t ignore_index = -100;
  LossReduction reduction = LossReduction::Mean;
};

// loss = NLL(log_prob, target, weight): [N·D] (None) or a scalar. `t`: log_prob/weight/loss type.
void launch_nll_forward(ElemType t, const void* log_prob, const void* target, bool target_i64,
                        const void* weight, void* loss, const LossShape& s, cudaStream_t st);

// dX = ((softmax ? exp(log_prob) : 0) − [c == t_j])·w_j·dL_j/ν (log_prob unused without softmax).
// scratch: one float of device memory for ν.
void launch_nll_backward(ElemType t, const void* dloss, bool dloss_scalar, const void* log_prob,
                         bool softmax, const void* target, bool target_i64, const void* weight,
                         void* dx, float* scratch, const LossShape& s, cudaStream_t st);

}  // namespace oat::cuda
