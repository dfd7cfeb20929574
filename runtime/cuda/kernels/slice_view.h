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

// Row copies of Concat, Split and ConcatGrad: `rows` rows of `width` bytes, row r from
// src + r·src_pitch to dst + r·dst_pitch, as device copies: one 1-D copy when there is one row or
// the rows are contiguous on both sides; one 2-D copy (cudaMemcpy2DAsync) when both pitches are
// at most max_pitch (cudaMemcpy2D fails with cudaErrorInvalidPitchValue above the device's
// maximum pitch, 2^31 − 1 bytes); else one 1-D copy per row. None for an empty copy.
struct RowCopy {
  int64_t dst_offset = 0, src_offset = 0;  // bytes
  int64_t width = 0, rows = 0;             // rows == 1: a 1-D copy of `width` bytes
};
constexpr int64_t kMaxCopyPitch = 2147483647;
std::vector<RowCopy> plan_row_copies(int64_t dst_pitch, int64_t src_pitch, int64_t width,
                                     int64_t rows, int64_t max_pitch = kMaxCopyPitch);
// The plan's copies, queued on the kernel's stream.
void copy_rows(const KernelContext& ctx, void* dst, int64_t dst_pitch, const void* src,
               int64_t src_pitch, int64_t width, int64_t rows);

}  // namespace oat::cuda
