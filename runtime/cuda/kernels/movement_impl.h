// Launchers for the movement kernels that are not broadcast copies (movement_impl.cu).
#pragma once

#include "runtime/cuda/kernels/launch.h"

namespace oat::cuda {

// Gather along an axis: X viewed as [outer, axis_dim, inner], indices (I64 or I32, negative
// values count from the end) flattened to [count]; Y[o, j, i] = X[o, idx[j], i]. An index out
// of range writes 0 and sets *bad (a device flag; may be null when the caller checked the
// indices on the host).
void launch_gather(int elem_bytes, const void* x, const void* indices, bool indices_i64, void* y,
                   int64_t outer, int64_t axis_dim, int64_t inner, int64_t count, int* bad,
                   cudaStream_t s);

}  // namespace oat::cuda
