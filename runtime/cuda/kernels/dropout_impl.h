// Launcher of the Dropout kernel (dropout_impl.cu).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// Element i is kept when threshold is 0 or dropout_keep(key, first + i, threshold)
// (runtime/cpu/kernels/dropout_mask.h, the CPU kernel's rule):
//   y[i] = kept ? x[i]·scale (in float, one rounding) : 0    (skipped when y is null)
//   mask[i] = kept                                           (skipped when mask is null; bool, or
//                                                             1/0 in x's type t when !mask_is_bool)
// t = F32/F16/BF16.
void launch_dropout(ElemType t, const void* x, void* y, void* mask, bool mask_is_bool, int64_t n,
                    uint64_t key, uint64_t first, uint64_t threshold, float scale, cudaStream_t s);

}  // namespace oat::cuda
