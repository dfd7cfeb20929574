// Launchers of Dropout's device-side mask (dropout_impl.cu): the Philox stream of an unseeded
// Dropout node (runtime/cpu/kernels/dropout_mask.h), the same bits as the CPU kernel draws.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// keep[i] = (u_i >= ratio) for the draw numbered *draw (device memory) under `key`, i < n; then
// *draw += 1 by a second kernel, so that every replay of a captured CUDA graph draws the next mask.
void launch_dropout_philox(uint64_t key, uint64_t* draw, double ratio, bool* keep, int64_t n,
                           cudaStream_t s);

}  // namespace oat::cuda
