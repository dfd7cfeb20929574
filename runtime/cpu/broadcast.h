// Numpy-style (multidirectional) broadcasting, as ONNX defines it: shapes are right-aligned,
// and each dimension pair must be equal or contain a 1.
#pragma once

#include <vector>

#include "runtime/tensor.h"

namespace oat::cpu {

// The broadcast result of `shapes`; throws Error "cannot broadcast [..] with [..]".
Shape broadcast_shapes(const std::vector<Shape>& shapes);

// Element strides of `in` viewed with shape `out` (in right-aligned against out): 0 where `in`
// is broadcast along a dimension. Requires in to be broadcastable to out.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Iterates over every element of `out`, keeping one offset per operand. The innermost
// dimension is handed to `f(offsets, inner_strides, count)` as one run, so callers write a tight
// loop: for k in [0,count): out[o+k] = op(a[oa + k*sa], b[ob + k*sb]).
// `operands` includes the output itself (stride = contiguous) as operand 0.
template <class F>
void for_each_broadcast_run(const Shape& out, const std::vector<std::vector<int64_t>>& strides,
                            F&& f) {
  const int rank = static_cast<int>(out.size());
  const size_t nops = strides.size();
  std::vector<int64_t> offsets(nops, 0);
  std::vector<int64_t> inner(nops, 0);
  if (numel(out) == 0) return;
  if (rank == 0) {
    f(offsets, inner, int64_t{1});
    return;
  }
  for (size_t k = 0; k < nops; ++k) inner[k] = strides[k][rank - 1];
  const int64_t count = out[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  while (true) {
    f(offsets, inner, count);
    int d = rank - 2;
    for (; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < nops; ++k) offsets[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < nops; ++k) offsets[k] -= strides[k][d] * out[d];
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Contiguous row-major strides of `s`.
std::vector<int64_t> contiguous_strides(const Shape& s);

}  // namespace oat::cpu
