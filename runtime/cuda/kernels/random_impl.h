// Launchers of the random generators' device kernels (random_impl.cu): the Philox stream of
// unseeded RandomNormal / RandomUniform (+Like) nodes (runtime/cpu/kernels/philox.h, the same
// numbers as the CPU kernels compute).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// y[i] (F32, F16 or BF16; n elements) for the draw numbered *draw (device memory) under `key`:
//   normal   a + b·z_i                                  (mean a, scale b)
//   uniform  a + (b − a)·u_i, `top` where that rounds to b or above   (low a, high b)
// in float, rounded once; then *draw += 1 by a second kernel, so that every replay of a
// captured CUDA graph draws new numbers.
void launch_random_philox(ElemType t, bool normal, uint64_t key, uint64_t* draw, double a, double b,
                          float top, void* y, int64_t n, cudaStream_t s);

}  // namespace oat::cuda
