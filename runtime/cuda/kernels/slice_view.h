// Slice geometry shared by Slice (movement.cc) and SliceGrad (grad_movement.cc).
#pragma once

#include <vector>

#include "runtime/kernel.h"

namespace oat::cuda {

// The sliced view of a contiguous tensor of shape x: element k of the slice is at
// base + Σ k_d·strides[d] (strides may be negative).
struct SliceView {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t base = 0;
};
SliceView slice_view(const KernelContext& ctx, const Shape& x, std::vector<int64_t> starts,
                     std::vector<int64_t> ends, std::vector<int64_t> axes,
                     std::vector<int64_t> steps);

// An axis in [-rank, rank) made non-negative; fails naming the node otherwise.
int norm_axis(const KernelContext& ctx, int64_t axis, int rank);

}  // namespace oat::cuda
