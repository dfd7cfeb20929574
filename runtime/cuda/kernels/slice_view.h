// Slice and GatherElements geometry shared by the forward kernels (movement.cc) and their
// gradients (grad_movement.cc).
#pragma once

#include <vector>

#include "runtime/cuda/kernels/movement_impl.h"
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

// GatherElements over data of shape xs with indices `idx` along attr `axis`, with the CPU
// kernel's checks (runtime/cpu/kernels/gather.cc): int64 or int32 indices of xs's rank (at least
// 1), no larger than xs off the axis, and, when idx is on the host, every value in [-n, n)
// (n = xs[axis]; indices on the device are left to the kernels).
GatherElementsPlan gather_elements_plan(const KernelContext& ctx, const Shape& xs,
                                        const Tensor& idx, int64_t axis);

// An axis in [-rank, rank) made non-negative; fails naming the node otherwise.
int norm_axis(const KernelContext& ctx, int64_t axis, int rank);

}  // namespace oat::cuda
