// Helpers shared by the shape, data-movement and generator kernels (shape.cc, movement.cc,
// transpose.cc, slice.cc, gather.cc, pad.cc, generator.cc, cast.cc).
//
// These kernels only move bytes, so they are written on an unsigned word of the element's size
// (uint8/16/32/64) instead of the element type: every dtype, F16/BF16 included, takes one path.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/registry.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace oat::cpu {

// Parts of register_movement() (kernels/movement.cc) that live in their own files.
void register_transpose(KernelRegistry& r);  // kernels/transpose.cc
void register_slice(KernelRegistry& r);      // kernels/slice.cc: Slice
void register_gather(KernelRegistry& r);     // kernels/gather.cc: Gather GatherElements
void register_pad(KernelRegistry& r);        // kernels/pad.cc: Pad
void register_trilu(KernelRegistry& r);      // kernels/trilu.cc: Trilu
// Part of register_generator() (kernels/generator.cc).
void register_cast(KernelRegistry& r);  // kernels/cast.cc: Cast CastLike

// The byte copies of Concat and Split (movement.cc), shared with ConcatFromSequence and
// SplitToSequence (sequence.cc). concat_blocks: Y (allocated, its shape the inputs' with their
// `axis` sizes summed) = [X_0 | X_1 | ...] along axis. split_blocks: ys[k] (allocated with
// sizes[k] along axis; nullptr: not wanted) = X's slice k along axis; the sizes sum to its dim.
void concat_blocks(const std::vector<const Tensor*>& xs, int axis, Tensor& y);
void split_blocks(const Tensor& x, int axis, const std::vector<int64_t>& sizes,
                  const std::vector<Tensor*>& ys);

// Copies below this many bytes stay on one thread: starting a parallel region costs more.
constexpr int64_t kParallelBytes = int64_t{1} << 16;

// Calls f(W{}) with W the unsigned word of `size` bytes.
template <class F>
decltype(auto) dispatch_word(size_t size, F&& f) {
  switch (size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      break;
  }
  throw Error(cat("no word type for elements of ", size, " bytes"));
}

// An axis in [-rank, rank) made non-negative; fails naming the node otherwise.
inline int normalize_axis(const KernelContext& ctx, int64_t axis, int rank,
                          const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(cat(what, " ", axis, " is out of range for rank ", rank));
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// The indices of Gather/GatherElements and their scatters as int64 with negatives wrapped; fails
// naming the first one outside [-n, n) (n = data's size on `axis`).
inline std::vector<int64_t> wrapped_indices(const KernelContext& ctx, const Tensor& t, int64_t n,
                                            const Shape& data_shape, int axis) {
  std::vector<int64_t> idx = t.to_int_vector();
  for (int64_t& i : idx) {
    if (i < -n || i >= n)
      ctx.fail(cat("index ", i, " is out of range for axis ", axis, " of data ",
                   shape_str(data_shape), " (size ", n, ")"));
    if (i < 0) i += n;
  }
  return idx;
}

// GatherElements' shape rule, shared by GatherElementsGrad and ScatterReduce: indices of data's
// rank (at least 1), no larger than data off the axis. Returns the normalized axis.
inline int elements_axis(const KernelContext& ctx, const Shape& data_shape, const Shape& ind_shape,
                         int64_t axis_attr) {
  const int r = static_cast<int>(data_shape.size());
  if (r == 0 || static_cast<int>(ind_shape.size()) != r)
    ctx.fail(cat("indices ", shape_str(ind_shape), " must have the rank of data ",
                 shape_str(data_shape), " (at least 1)"));
  const int axis = normalize_axis(ctx, axis_attr, r);
  for (int d = 0; d < r; ++d)
    if (d != axis && ind_shape[d] > data_shape[d])
      ctx.fail(cat("indices ", shape_str(ind_shape), " exceed data ", shape_str(data_shape),
                   " on axis ", d));
  return axis;
}

// An optional int-list input (axes, steps, split): the values, or `def` when omitted or
// empty-named.
inline std::vector<int64_t> optional_ints(const KernelContext& ctx, int i,
                                          std::vector<int64_t> def = {}) {
  const Tensor* t = ctx.input_or_null(i);
  return t ? t->to_int_vector() : def;
}

// Splits [0, n) across the OpenMP threads in contiguous chunks when `parallel`, and calls
// f(begin, end) once per chunk (once with [0, n) when not parallel). Chunks let a caller
// decompose a multi-index once and then step it, instead of dividing per row.
template <class F>
void parallel_chunks(int64_t n, bool parallel, F&& f) {
  if (n <= 0) return;
#ifdef _OPENMP
  if (parallel && n > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel
    {
      const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
      const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
      if (begin < end) f(begin, end);
    }
    return;
  }
#endif
  (void)parallel;
  f(int64_t{0}, n);
}

// Visits the rows (all dimensions but the last) of a row-major `out` shape, calling
// f(row, in_offset) where in_offset = base + sum_d idx[d] * in_strides[d] over the row dims
// (in elements). Rows are spread over threads when the output has `bytes` >= kParallelBytes.
template <class F>
void for_each_row(const Shape& out, const std::vector<int64_t>& in_strides, int64_t base,
                  int64_t bytes, F&& f) {
  const int rows_rank = static_cast<int>(out.size()) - 1;
  int64_t rows = 1;
  for (int d = 0; d < rows_rank; ++d) rows *= out[d];
  if (rows_rank < 0 || numel(out) == 0) {
    if (rows_rank < 0) f(int64_t{0}, base);  // rank 0: one "row" of one element
    return;
  }
  parallel_chunks(rows, bytes >= kParallelBytes, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(rows_rank, 0);
    int64_t off = base, r = begin;
    for (int d = rows_rank - 1; d >= 0; --d) {
      idx[d] = r % out[d];
      r /= out[d];
      off += idx[d] * in_strides[d];
    }
    for (int64_t row = begin; row < end; ++row) {
      f(row, off);
      for (int d = rows_rank - 1; d >= 0; --d) {
        off += in_strides[d];
        if (++idx[d] < out[d]) break;
        off -= in_strides[d] * out[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace oat::cpu
