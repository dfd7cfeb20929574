// Launchers of MaxUnpool and BitShift (index_ops_impl.cu); formulas in
// runtime/cpu/kernels/max_unpool.cc and bitshift.cc.
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// y (n_y elements of elem_bytes, zeroed by the caller): y[idx[j]] = x[j] for j < n_x. An index
// outside [0, n_y) is skipped and sets *bad (when bad is not null).
void launch_max_unpool(int elem_bytes, const void* x, const int64_t* idx, void* y, int64_t n_x,
                       int64_t n_y, int* bad, cudaStream_t s);

// z = left ? x << y : x >> y on uint8 (a shift of 32 or more gives 0); x, y indexed by ix as
// make_broadcast_index(z's shape, {x, y}) lays them out, z contiguous.
void launch_bitshift(bool left, const uint8_t* x, const uint8_t* y, uint8_t* z, int64_t n,
                     const BroadcastIndex& ix, cudaStream_t s);

}  // namespace oat::cuda
